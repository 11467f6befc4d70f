// A sequence's KV cache as bytes (a session): its token ids, the K/V rows of every position, an
// application payload (e.g. the chat messages), and what the rows are only valid for — the model
// file's fingerprint, the K and V element types and shape. Restoring it into a KvCache of the same
// model and KV types gives a sequence whose rows are the saved ones bit for bit, so continuing from it
// is exactly continuing the saved conversation. Format (little-endian; docs/sessions.md):
//
//   offset  size            field
//   0       8               magic "EDGLSES1"
//   8       4               format version (3; versions 1 and 2 are read, see below)
//   12      2 + 2           K, V element type (TensorType value: 0 F32, 1 F16, 2 Q4_0, 8 Q8_0)
//   16      8               model fingerprint (model/model_fingerprint.h)
//   24      4 x 3           n_layer, n_head_kv, head_dim
//   36      4               n_tokens: positions [0, n_tokens)
//   40      8               payload bytes
//   48      8               row bytes: n_layer * n_head_kv * n_tokens * (K row size + V row size)
//   56      4               exact positions: the leading positions whose rows are what a prefill
//                           of their ids gives (n_tokens unless context shifts moved rows; only
//                           their full blocks go to the prefix cache on restore)
//   60      4 n_tokens      token ids (int32)
//   ...     payload         application payload (opaque here)
//   ...     row bytes       rows [n_layer][K, V][n_head_kv][n_tokens][row] in the K / V type
//   end-8   8               checksum: core/hash.h hash_bytes of every byte before it
//
// Version 2 had no exact-positions field (the ids follow at 56; every position counts as exact);
// version 1 also had one u32 type for K and V at 12. Block size is not part of it: rows are stored per position, so a session restores into a cache
// of any block size. Every refusal is Error(kInvalidFile) (truncated, corrupted: checksum, sizes,
// magic, version) or Error(kInvalidArgument) (another model, KV type or shape), with a message
// that says which; nothing is read outside the bytes given and nothing in the cache changes.
// (KV types: a session saved with K/V f16/q4_0 is refused by a q4_0/q4_0 context, and so on.)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kv/kv_cache.h"

namespace edgellm {

// What a session holds, parsed and checked; `rows` points into the bytes it was parsed from.
struct SessionView {
  std::vector<int32_t> tokens;
  std::string payload;
  const uint8_t* rows = nullptr;
  int32_t exact_positions = 0;  // <= tokens.size()
  size_t k_row_size = 0;  // bytes of one head_dim row in the K type
  size_t v_row_size = 0;  // ... in the V type
};

// Serializes positions [0, seq_length) of `seq`.
std::string encode_session(KvCache& kv, int32_t seq, uint64_t model_fingerprint, std::string_view payload);

// Parses and validates bytes against this cache's model and KV types (throws as described above).
SessionView decode_session(std::string_view bytes, uint64_t model_fingerprint, const KvCacheParams& params);

// Error(kInvalidFile) when a token id of the session is outside [0, n_vocab) (a crafted file
// with a valid checksum: the ids must still be the model's).
void check_session_tokens(const SessionView& session, int32_t n_vocab);

// Makes `seq` hold the first n_positions (<= tokens.size()) positions of the session: cleared,
// grown, rows copied, token ids recorded, full blocks published to the prefix cache. Throws
// kContextFull (the sequence left empty) when they do not fit n_ctx or the pool.
void import_session(KvCache& kv, int32_t seq, const SessionView& session, int32_t n_positions);

// Files: the whole file read (kIo when it cannot be), written to a temporary file in the same
// folder and renamed over `path` (a crash never leaves half a session under the name).
std::string read_session_file(const std::string& path);
void write_session_file(const std::string& path, std::string_view bytes);

}  // namespace edgellm
