#include "kv/session_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/hash.h"
#include "kernels/tensor_type.h"

namespace edgellm {

namespace {

constexpr char kMagic[8] = {'E', 'D', 'G', 'L', 'S', 'E', 'S', '1'};
// 1: one u32 KV type at offset 12 (K = V); 2: no exact-positions field (all positions exact).
// Both still read.
constexpr uint32_t kVersion = 3;
constexpr size_t kHeaderBytesV2 = 56;  // versions 1 and 2
constexpr size_t kHeaderBytes = 60;    // version 3: + u32 exact positions at 56
constexpr uint64_t kChecksumSeed = 0x6b762d73657373ULL;  // "kv-sess"

template <typename T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}

template <typename T>
T get(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

[[noreturn]] void refuse(ErrorCode code, const std::string& why) { throw Error(code, "session: " + why); }

size_t row_bytes_total(const KvCacheParams& p, size_t n_tokens, size_t k_row_size, size_t v_row_size) {
  return static_cast<size_t>(p.n_layer) * static_cast<size_t>(p.n_head_kv) * n_tokens * (k_row_size + v_row_size);
}

std::string kv_types_name(TensorType k, TensorType v) {
  return std::string(tensor_type_name(k)) + "/" + tensor_type_name(v);
}

}  // namespace

std::string encode_session(KvCache& kv, int32_t seq, uint64_t model_fingerprint, std::string_view payload) {
  static_assert(sizeof(int32_t) == 4 && sizeof(uint64_t) == 8, "fixed-size fields");
  const KvCacheParams& p = kv.params();
  const int32_t n = kv.seq_length(seq);
  const std::vector<int32_t>& tokens = kv.seq_tokens(seq);
  for (int32_t i = 0; i < n; ++i) {
    require(tokens[static_cast<size_t>(i)] >= 0, ErrorCode::kInvalidArgument,
            "session: position " + std::to_string(i) + " of the sequence has no recorded token id");
  }
  const size_t rows = row_bytes_total(p, static_cast<size_t>(n), kv.k_row_bytes(), kv.v_row_bytes());
  std::string out;
  out.reserve(kHeaderBytes + 4 * static_cast<size_t>(n) + payload.size() + rows + 8);
  const int32_t exact = kv.seq_exact_length(seq);
  out.append(kMagic, sizeof(kMagic));
  put<uint32_t>(out, kVersion);
  put<uint16_t>(out, static_cast<uint16_t>(p.type_k));
  put<uint16_t>(out, static_cast<uint16_t>(p.type_v));
  put<uint64_t>(out, model_fingerprint);
  put<uint32_t>(out, static_cast<uint32_t>(p.n_layer));
  put<uint32_t>(out, static_cast<uint32_t>(p.n_head_kv));
  put<uint32_t>(out, static_cast<uint32_t>(p.head_dim));
  put<uint32_t>(out, static_cast<uint32_t>(n));
  put<uint64_t>(out, payload.size());
  put<uint64_t>(out, rows);
  put<uint32_t>(out, static_cast<uint32_t>(exact));
  for (int32_t i = 0; i < n; ++i) put<int32_t>(out, tokens[static_cast<size_t>(i)]);
  out.append(payload.data(), payload.size());
  for (int32_t layer = 0; layer < p.n_layer; ++layer) {
    for (int32_t k_or_v = 0; k_or_v < 2; ++k_or_v) {
      for (int32_t head = 0; head < p.n_head_kv; ++head) {
        for (int32_t pos = 0; pos < n; ++pos) {
          const uint8_t* row = k_or_v == 0 ? kv.k_row(seq, layer, head, pos) : kv.v_row(seq, layer, head, pos);
          out.append(reinterpret_cast<const char*>(row), k_or_v == 0 ? kv.k_row_bytes() : kv.v_row_bytes());
        }
      }
    }
  }
  put<uint64_t>(out, hash_bytes(kChecksumSeed, out.data(), out.size()));
  return out;
}

SessionView decode_session(std::string_view bytes, uint64_t model_fingerprint, const KvCacheParams& params) {
  const auto* b = reinterpret_cast<const uint8_t*>(bytes.data());
  const size_t size = bytes.size();
  if (size < kHeaderBytesV2 + 8) {
    refuse(ErrorCode::kInvalidFile, "the file is truncated or not a session (" + std::to_string(size) +
                                        " bytes, a session has at least " + std::to_string(kHeaderBytesV2 + 8) + ")");
  }
  if (std::memcmp(b, kMagic, sizeof(kMagic)) != 0) refuse(ErrorCode::kInvalidFile, "not an EdgeLLM session file (bad magic)");
  const uint32_t version = get<uint32_t>(b + 8);
  if (version < 1 || version > kVersion) {
    refuse(ErrorCode::kInvalidFile, "format version " + std::to_string(version) + " is not supported (expected 1 to " +
                                        std::to_string(kVersion) + ")");
  }
  const size_t header_bytes = version >= 3 ? kHeaderBytes : kHeaderBytesV2;  // checked with `expect` below
  // Sizes first (they say whether bytes are missing), then the checksum, then what it is for.
  const uint64_t n_tokens = get<uint32_t>(b + 36);
  const uint64_t payload_bytes = get<uint64_t>(b + 40);
  const uint64_t rows_bytes = get<uint64_t>(b + 48);
  const uint64_t limit = std::numeric_limits<uint64_t>::max() / 4;
  if (payload_bytes > limit || rows_bytes > limit) refuse(ErrorCode::kInvalidFile, "corrupted (impossible sizes)");
  const uint64_t expect = header_bytes + 4 * n_tokens + payload_bytes + rows_bytes + 8;
  if (size < expect) {
    refuse(ErrorCode::kInvalidFile, "the file is truncated (" + std::to_string(size) + " bytes, its header says " +
                                        std::to_string(expect) + ")");
  }
  if (size > expect) {
    refuse(ErrorCode::kInvalidFile, "corrupted (" + std::to_string(size - expect) + " bytes after the checksum)");
  }
  const uint64_t sum = get<uint64_t>(b + size - 8);
  if (sum != hash_bytes(kChecksumSeed, b, size - 8)) {
    refuse(ErrorCode::kInvalidFile, "corrupted (checksum mismatch)");
  }
  const uint64_t fingerprint = get<uint64_t>(b + 16);
  if (fingerprint != model_fingerprint) {
    refuse(ErrorCode::kInvalidArgument, "it was saved with another model file (fingerprint " + std::to_string(fingerprint) +
                                            ", this model " + std::to_string(model_fingerprint) + ")");
  }
  // Version 1 recorded one type for K and V (u32); version 2 the K and the V type (u16 each).
  const auto type_k = static_cast<TensorType>(version == 1 ? get<uint32_t>(b + 12) : get<uint16_t>(b + 12));
  const auto type_v = version == 1 ? type_k : static_cast<TensorType>(get<uint16_t>(b + 14));
  if (type_k != params.type_k || type_v != params.type_v) {
    refuse(ErrorCode::kInvalidArgument, "it holds " + kv_types_name(type_k, type_v) +
                                            " KV (K/V) but this context uses " +
                                            kv_types_name(params.type_k, params.type_v) +
                                            " (use the same --kv-type-k / --kv-type-v)");
  }
  const uint32_t n_layer = get<uint32_t>(b + 24), n_head_kv = get<uint32_t>(b + 28), head_dim = get<uint32_t>(b + 32);
  if (n_layer != static_cast<uint32_t>(params.n_layer) || n_head_kv != static_cast<uint32_t>(params.n_head_kv) ||
      head_dim != static_cast<uint32_t>(params.head_dim)) {
    refuse(ErrorCode::kInvalidArgument, "its KV shape (layers, KV heads, head size) is not this model's");
  }
  // Positions whose rows a prefill of their ids gives; files before version 3 did not say (their
  // writers treated every position as exact).
  const uint64_t exact = version >= 3 ? get<uint32_t>(b + 56) : n_tokens;
  if (exact > n_tokens) refuse(ErrorCode::kInvalidFile, "corrupted (more exact positions than tokens)");
  SessionView s;
  s.exact_positions = static_cast<int32_t>(exact);
  s.k_row_size = tensor_row_bytes(params.type_k, params.head_dim);
  s.v_row_size = tensor_row_bytes(params.type_v, params.head_dim);
  if (rows_bytes != row_bytes_total(params, n_tokens, s.k_row_size, s.v_row_size)) {
    refuse(ErrorCode::kInvalidFile, "corrupted (the row bytes do not match the token count)");
  }
  s.tokens.resize(n_tokens);
  const uint8_t* p = b + header_bytes;
  for (uint64_t i = 0; i < n_tokens; ++i) s.tokens[i] = get<int32_t>(p + 4 * i);
  p += 4 * n_tokens;
  s.payload.assign(reinterpret_cast<const char*>(p), payload_bytes);
  s.rows = p + payload_bytes;
  return s;
}

void check_session_tokens(const SessionView& s, int32_t n_vocab) {
  for (size_t i = 0; i < s.tokens.size(); ++i) {
    if (s.tokens[i] < 0 || s.tokens[i] >= n_vocab) {
      refuse(ErrorCode::kInvalidFile, "token id " + std::to_string(s.tokens[i]) + " at position " + std::to_string(i) +
                                          " is outside the vocabulary [0, " + std::to_string(n_vocab) + ")");
    }
  }
}

void import_session(KvCache& kv, int32_t seq, const SessionView& s, int32_t n_positions) {
  const KvCacheParams& p = kv.params();
  const auto n_saved = static_cast<int32_t>(s.tokens.size());
  require(n_positions >= 0 && n_positions <= n_saved, ErrorCode::kInvalidArgument,
          "session: restoring " + std::to_string(n_positions) + " of its " + std::to_string(n_saved) + " positions");
  kv.seq_clear(seq);
  if (n_positions == 0) return;
  if (n_positions > p.n_ctx) {
    throw Error(ErrorCode::kContextFull, "session: it holds " + std::to_string(n_positions) +
                                             " positions but the context holds " + std::to_string(p.n_ctx));
  }
  kv.seq_grow(seq, n_positions);  // kContextFull leaves it empty
  const uint8_t* src = s.rows;
  for (int32_t layer = 0; layer < p.n_layer; ++layer) {
    for (int32_t k_or_v = 0; k_or_v < 2; ++k_or_v) {
      const size_t row_size = k_or_v == 0 ? s.k_row_size : s.v_row_size;
      const size_t run = static_cast<size_t>(n_saved) * row_size;  // one (layer, K/V, head) plane
      for (int32_t head = 0; head < p.n_head_kv; ++head) {
        for (int32_t pos = 0; pos < n_positions; ++pos) {
          uint8_t* dst = k_or_v == 0 ? kv.k_row(seq, layer, head, pos) : kv.v_row(seq, layer, head, pos);
          std::memcpy(dst, src + static_cast<size_t>(pos) * row_size, row_size);
        }
        src += run;
      }
    }
  }
  for (int32_t pos = 0; pos < n_positions; ++pos) {
    const int32_t t = s.tokens[static_cast<size_t>(pos)];
    kv.seq_set_token(seq, pos, t);
  }
  // Rows moved by a context shift carry the dropped positions' history: not for the prefix cache.
  if (s.exact_positions < n_positions) kv.seq_mark_inexact_from(seq, s.exact_positions);
  kv.seq_publish(seq);
}

std::string read_session_file(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw Error(ErrorCode::kIo, "session: cannot open " + path + ": " + std::strerror(errno));
  std::string bytes;
  char buf[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) bytes.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) throw Error(ErrorCode::kIo, "session: cannot read " + path);
  return bytes;
}

void write_session_file(const std::string& path, std::string_view bytes) {
  try {
    // Private (a conversation), and not fsynced: sessions are saved on the service's scheduler
    // thread after every turn; an fsync of tens of MB there would stall every other stream.
    AtomicWriteOptions options;
    options.mode = 0600;
    options.fsync = false;
    write_file_atomic(path, bytes, options);
  } catch (const Error& e) {
    throw Error(e.code(), std::string("session: ") + e.what());
  }
}

}  // namespace edgellm
