#include "kernels/repack.h"

#include <cstring>
#include <string>
#include <type_traits>

#include "core/error.h"
#include "core/fp16.h"
#include "kernels/blocks.h"
#include "kernels/kernels.h"
#include "kernels/quant_common.h"

namespace edgellm::kernels {
namespace {

// Q5_0_X16: 256 bytes of low-nibble codes + 64 of fifth bits per block column (repack.h).
constexpr int64_t kQ5_0BlockColumnCodes = kPackRows * (kQK5_0 / 2) + kPackRows * 4;
// Q6_K_X16: ql 2048 + qh 1024 + int8 scales 256 per super-block column; the F16 d follow all of them.
constexpr int64_t kQ6KBlockColumnCodes = 2048 + 1024 + 256;

// Bytes of code per block column of a group, and where the scales start.
struct PackGeometry {
  int64_t code_bytes_per_block;  // 16 rows x (16 or 32) bytes
  size_t row_bytes;              // of the source type (== packed row bytes for Q4_0 / Q8_0)
};

PackGeometry geometry(TensorType packed_or_file, int64_t n_in) {
  switch (packed_or_file) {
    case TensorType::Q4_0:
    case TensorType::Q4_0_X16:
      return {kPackRows * (kQK4_0 / 2), tensor_row_bytes(TensorType::Q4_0, n_in)};
    case TensorType::Q5_0:
    case TensorType::Q5_0_X16:
      return {kQ5_0BlockColumnCodes, tensor_row_bytes(TensorType::Q5_0, n_in)};
    case TensorType::Q6_K:
    case TensorType::Q6_K_X16:
      return {kQ6KBlockColumnCodes, tensor_row_bytes(TensorType::Q6_K, n_in)};
    case TensorType::Q8_0:
    case TensorType::Q8_0_X16:
      return {kPackRows * kQK8_0, tensor_row_bytes(TensorType::Q8_0, n_in)};
    case TensorType::Q4_K:
    case TensorType::Q4_K_X16:
      return {kPackRows * (kQK_K / 2), tensor_row_bytes(TensorType::Q4_K, n_in)};
    case TensorType::Q5_K:
    case TensorType::Q5_K_X16:
      return {kPackRows * (kQK_K / 2), tensor_row_bytes(TensorType::Q5_K, n_in)};
    default:
      throw Error(ErrorCode::kUnsupported,
                  std::string("repack: no interleaved layout for ") + tensor_type_name(packed_or_file));
  }
}

}  // namespace

std::optional<TensorType> packed_type_for(TensorType file_type) {
  switch (file_type) {
    case TensorType::Q4_0: return TensorType::Q4_0_X16;
    case TensorType::Q5_0: return TensorType::Q5_0_X16;
    case TensorType::Q8_0: return TensorType::Q8_0_X16;
    case TensorType::Q4_K: return TensorType::Q4_K_X16;
    case TensorType::Q5_K: return TensorType::Q5_K_X16;
    case TensorType::Q6_K: return TensorType::Q6_K_X16;
    default: return std::nullopt;
  }
}

bool is_packed_type(TensorType type) {
  return type == TensorType::Q4_0_X16 || type == TensorType::Q5_0_X16 || type == TensorType::Q8_0_X16 ||
         type == TensorType::Q4_K_X16 || type == TensorType::Q5_K_X16 || type == TensorType::Q6_K_X16;
}

bool has_fast_packed_kernel(TensorType packed) {
  if (!is_packed_type(packed)) return false;
  // AVX-512 VNNI, AVX2 and ARM dotprod (i8mm inherits it) have SIMD kernels for every packed
  // type; plain NEON and the scalar reference do not.
  switch (active_isa()) {
    case Isa::kAmx:
    case Isa::kAvx512:
    case Isa::kAvx2:
    case Isa::kDotprod:
    case Isa::kI8mm: return true;
    default: return false;
  }
}

bool can_repack(TensorType file_type, int64_t n_in, int64_t n_out) {
  const auto p = packed_type_for(file_type);
  return p.has_value() && n_out > 0 && n_out % kPackRows == 0 && n_in > 0 && n_in % tensor_block_size(file_type) == 0;
}

namespace {

// Block b of row `lane` of a group's source rows (copied: file rows need not be aligned).
template <class Block>
Block block_at(const uint8_t* src_rows, size_t src_row_bytes, int64_t lane, int64_t b) {
  Block blk;
  std::memcpy(&blk, src_rows + static_cast<size_t>(lane) * src_row_bytes + static_cast<size_t>(b) * sizeof(Block),
              sizeof blk);
  return blk;
}

// Q4_K / Q5_K: 16 rows of super-block column b -> the Q4_K_X16 / Q5_K_X16 layout (repack.h).
template <class Block, int64_t kColumnBytes>
void repack_k4_group(const uint8_t* src_rows, size_t src_row_bytes, uint8_t* group, int64_t n_in) {
  const int64_t nb = n_in / kQK_K;
  for (int64_t lane = 0; lane < kPackRows; ++lane) {
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* col = group + b * kColumnBytes;
      const auto blk = block_at<Block>(src_rows, src_row_bytes, lane, b);
      if constexpr (std::is_same_v<Block, BlockQ5_K>) {
        for (int k = 0; k < 8; ++k) std::memcpy(col + kQ5KX16High + (k * kPackRows + lane) * 4, blk.qh + 4 * k, 4);
      }
      uint8_t sc[8], m[8];
      unpack_scales_mins_k4(blk.scales, sc, m);
      for (int g = 0; g < 4; ++g) {
        for (int k = 0; k < 8; ++k) {
          std::memcpy(col + ((g * 8 + k) * kPackRows + lane) * 4, blk.qs + 32 * g + 4 * k, 4);
        }
      }
      for (int j = 0; j < 8; ++j) col[kQ4KX16Scales + j * kPackRows + lane] = sc[j];
      for (int i = 0; i < 4; ++i) {
        col[kQ4KX16Mins + (i * kPackRows + lane) * 2] = m[2 * i];
        col[kQ4KX16Mins + (i * kPackRows + lane) * 2 + 1] = m[2 * i + 1];
      }
      std::memcpy(col + kQ4KX16D + 2 * lane, &blk.d, 2);
      std::memcpy(col + kQ4KX16Dmin + 2 * lane, &blk.dmin, 2);
    }
  }
}

// The 256 six-bit codes (0..63) of a Q6_K block in element order (ggml's layout: per half of
// 128, ql[l] / ql[l+32] carry the low nibbles of elements l, l+32 (low) and l+64, l+96 (high),
// and qh[l] their high 2-bit pairs in bits 0-1, 2-3, 4-5, 6-7).
void unpack_q6_k_codes(const BlockQ6_K& blk, uint8_t q[kQK_K]) {
  for (int half = 0; half < 2; ++half) {
    const uint8_t* ql = blk.ql + 64 * half;
    const uint8_t* qh = blk.qh + 32 * half;
    uint8_t* out = q + 128 * half;
    for (int l = 0; l < 32; ++l) {
      out[l] = static_cast<uint8_t>((ql[l] & 0x0F) | ((qh[l] & 3) << 4));
      out[l + 32] = static_cast<uint8_t>((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4));
      out[l + 64] = static_cast<uint8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
      out[l + 96] = static_cast<uint8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
    }
  }
}

// Q6_K: 16 rows of super-block columns -> the Q6_K_X16 layout (repack.h).
void repack_q6_k_group(const uint8_t* src_rows, size_t src_row_bytes, uint8_t* group, int64_t n_in) {
  const int64_t nb = n_in / kQK_K;
  auto* d = reinterpret_cast<uint16_t*>(group + nb * kQ6KBlockColumnCodes);
  for (int64_t lane = 0; lane < kPackRows; ++lane) {
    for (int64_t b = 0; b < nb; ++b) {
      const auto blk = block_at<BlockQ6_K>(src_rows, src_row_bytes, lane, b);
      uint8_t q[kQK_K];  // the 6-bit values 0..63, element order
      unpack_q6_k_codes(blk, q);
      uint8_t* col = group + b * kQ6KBlockColumnCodes;
      uint8_t* ql = col;
      uint8_t* qh = col + 2048;
      int8_t* sc = reinterpret_cast<int8_t*>(col + 3072);
      for (int c = 0; c < 8; ++c) {
        for (int t = 0; t < 4; ++t) {
          for (int i = 0; i < 4; ++i) {
            const int e = 32 * c + 4 * t + i;
            ql[((c * 4 + t) * kPackRows + lane) * 4 + i] = static_cast<uint8_t>((q[e] & 0x0F) | ((q[e + 16] & 0x0F) << 4));
          }
        }
      }
      for (int j = 0; j < 16; ++j) {
        for (int i = 0; i < 4; ++i) {
          uint8_t h = 0;
          for (int s2 = 0; s2 < 4; ++s2) h = static_cast<uint8_t>(h | ((q[16 * j + 4 * s2 + i] >> 4) << (2 * s2)));
          qh[(j * kPackRows + lane) * 4 + i] = h;
        }
        sc[j * kPackRows + lane] = blk.scales[j];
      }
      std::memcpy(d + b * kPackRows + lane, &blk.d, 2);
    }
  }
}

// Q5_0: 16 rows -> the Q5_0_X16 layout (repack.h).
void repack_q5_0_group(const uint8_t* src_rows, size_t src_row_bytes, uint8_t* group, int64_t n_in) {
  const int64_t nb = n_in / kQK5_0;
  auto* scales = reinterpret_cast<uint16_t*>(group + nb * kQ5_0BlockColumnCodes);
  for (int64_t lane = 0; lane < kPackRows; ++lane) {
    for (int64_t b = 0; b < nb; ++b) {
      const auto blk = block_at<BlockQ5_0>(src_rows, src_row_bytes, lane, b);
      uint32_t fifth;  // bit e = fifth bit of element e (ggml order)
      std::memcpy(&fifth, blk.qh, 4);
      uint8_t* cb = group + b * kQ5_0BlockColumnCodes;
      uint8_t* high = cb + kPackRows * (kQK5_0 / 2);
      for (int j = 0; j < 4; ++j) std::memcpy(cb + (j * kPackRows + lane) * 4, blk.qs + 4 * j, 4);
      for (int i = 0; i < 4; ++i) {
        uint8_t h = 0;
        for (int j = 0; j < 8; ++j) h = static_cast<uint8_t>(h | (((fifth >> (4 * j + i)) & 1u) << j));
        high[lane * 4 + i] = h;
      }
      scales[b * kPackRows + lane] = blk.d;
    }
  }
}

// Q4_0: 16 rows -> the Q4_0_X16 layout (repack.h): the qs bytes move, unchanged.
void repack_q4_0_group(const uint8_t* src_rows, size_t src_row_bytes, uint8_t* group, int64_t n_in) {
  const int64_t nb = n_in / kQK4_0;
  constexpr int64_t kCodeBytes = kPackRows * (kQK4_0 / 2);
  auto* scales = reinterpret_cast<uint16_t*>(group + nb * kCodeBytes);
  for (int64_t lane = 0; lane < kPackRows; ++lane) {
    for (int64_t b = 0; b < nb; ++b) {
      const auto blk = block_at<BlockQ4_0>(src_rows, src_row_bytes, lane, b);
      uint8_t* cb = group + b * kCodeBytes;
      for (int j = 0; j < 4; ++j) std::memcpy(cb + (j * kPackRows + lane) * 4, blk.qs + 4 * j, 4);
      scales[b * kPackRows + lane] = blk.d;
    }
  }
}

// Q8_0: 16 rows -> the Q8_0_X16 layout (repack.h): codes + 128 as unsigned bytes.
void repack_q8_0_group(const uint8_t* src_rows, size_t src_row_bytes, uint8_t* group, int64_t n_in) {
  const int64_t nb = n_in / kQK8_0;
  constexpr int64_t kCodeBytes = kPackRows * kQK8_0;
  auto* scales = reinterpret_cast<uint16_t*>(group + nb * kCodeBytes);
  for (int64_t lane = 0; lane < kPackRows; ++lane) {
    for (int64_t b = 0; b < nb; ++b) {
      const auto blk = block_at<BlockQ8_0>(src_rows, src_row_bytes, lane, b);
      uint8_t* cb = group + b * kCodeBytes;
      for (int j = 0; j < 8; ++j) {
        for (int i = 0; i < 4; ++i) {
          cb[(j * kPackRows + lane) * 4 + i] = static_cast<uint8_t>(static_cast<int>(blk.qs[4 * j + i]) + 128);
        }
      }
      scales[b * kPackRows + lane] = blk.d;
    }
  }
}

// One 16-row group of rows of n_in elements: from the file layout (rows src_row_bytes apart) into
// the group's packed bytes.
using GroupRepacker = void (*)(const uint8_t* src_rows, size_t src_row_bytes, uint8_t* group, int64_t n_in);

GroupRepacker group_repacker(TensorType file_type) {
  switch (file_type) {
    case TensorType::Q4_0: return repack_q4_0_group;
    case TensorType::Q5_0: return repack_q5_0_group;
    case TensorType::Q8_0: return repack_q8_0_group;
    case TensorType::Q4_K: return repack_k4_group<BlockQ4_K, kQ4KX16ColumnBytes>;
    case TensorType::Q5_K: return repack_k4_group<BlockQ5_K, kQ5KX16ColumnBytes>;
    case TensorType::Q6_K: return repack_q6_k_group;
    default: return nullptr;
  }
}

}  // namespace

void repack_rows(TensorType file_type, const void* src, void* dst, int64_t n_in, int64_t r0, int64_t r1) {
  const GroupRepacker repack_group = group_repacker(file_type);
  require(repack_group != nullptr, ErrorCode::kUnsupported,
          std::string("repack: no interleaved layout for ") + tensor_type_name(file_type));
  const int64_t block = tensor_block_size(file_type);
  require(n_in > 0 && n_in % block == 0 && r0 >= 0 && r0 <= r1 && r0 % kPackRows == 0 && r1 % kPackRows == 0,
          ErrorCode::kInvalidArgument,
          "repack: rows [" + std::to_string(r0) + ", " + std::to_string(r1) + ") of " + std::to_string(n_in) + " " +
              tensor_type_name(file_type) + " elements are not whole groups of 16 rows and whole " +
              std::to_string(block) + "-element blocks");
  const size_t src_row_bytes = tensor_row_bytes(file_type, n_in);
  const size_t dst_row_bytes = tensor_row_bytes(*packed_type_for(file_type), n_in);  // K4: 148/144, 180/176
  const auto* s = static_cast<const uint8_t*>(src);
  auto* d = static_cast<uint8_t*>(dst);
  for (int64_t r = r0; r < r1; r += kPackRows) {
    repack_group(s + static_cast<size_t>(r) * src_row_bytes, src_row_bytes, d + static_cast<size_t>(r) * dst_row_bytes,
                 n_in);
  }
}

void dequantize_packed_row(TensorType packed, const void* tensor, int64_t n_in, int64_t r, float* dst) {
  // Called per token for a tied repacked head: build the message only on failure.
  if (!is_packed_type(packed)) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string("dequantize_packed_row: ") + tensor_type_name(packed) + " is not a packed type");
  }
  const PackGeometry g = geometry(packed, n_in);
  const int64_t lane = r % kPackRows;
  if (packed == TensorType::Q4_K_X16 || packed == TensorType::Q5_K_X16) {
    const bool q5 = packed == TensorType::Q5_K_X16;
    const int64_t nbk = n_in / kQK_K;
    const auto* group =
        static_cast<const uint8_t*>(tensor) + static_cast<size_t>(r - lane) * tensor_row_bytes(packed, n_in);
    for (int64_t b = 0; b < nbk; ++b) {
      const uint8_t* col = group + b * (q5 ? kQ5KX16ColumnBytes : kQ4KX16ColumnBytes);
      const uint8_t* scales = col + kQ4KX16Scales;
      const uint8_t* mins = col + kQ4KX16Mins;
      uint16_t d16, m16;
      std::memcpy(&d16, col + kQ4KX16D + 2 * lane, 2);
      std::memcpy(&m16, col + kQ4KX16Dmin + 2 * lane, 2);
      const float d = fp16_to_fp32(d16), dmin = fp16_to_fp32(m16);
      for (int g2 = 0; g2 < 4; ++g2) {
        for (int half = 0; half < 2; ++half) {
          const int j = 2 * g2 + half;
          const float sc = d * scales[j * kPackRows + lane];
          const float mn = dmin * mins[((j / 2) * kPackRows + lane) * 2 + j % 2];
          for (int k = 0; k < 8; ++k) {
            for (int i = 0; i < 4; ++i) {
              const uint8_t byte = col[((g2 * 8 + k) * kPackRows + lane) * 4 + i];
              const int fifth = q5 ? (col[kQ5KX16High + (k * kPackRows + lane) * 4 + i] >> j) & 1 : 0;
              const int q = (half == 0 ? (byte & 0x0F) : (byte >> 4)) | (fifth << 4);
              dst[b * kQK_K + j * 32 + 4 * k + i] = sc * static_cast<float>(q) - mn;
            }
          }
        }
      }
    }
    return;
  }
  if (packed == TensorType::Q6_K_X16) {
    const int64_t nbk = n_in / kQK_K;
    const auto* group = static_cast<const uint8_t*>(tensor) + static_cast<size_t>(r - lane) * g.row_bytes;
    const auto* dd = reinterpret_cast<const uint16_t*>(group + nbk * kQ6KBlockColumnCodes);
    for (int64_t b = 0; b < nbk; ++b) {
      const uint8_t* col = group + b * kQ6KBlockColumnCodes;
      uint16_t d16;
      std::memcpy(&d16, dd + b * kPackRows + lane, 2);
      const float d = fp16_to_fp32(d16);
      for (int j = 0; j < 16; ++j) {
        const float sc = d * static_cast<float>(static_cast<int8_t>(col[3072 + j * kPackRows + lane]));
        for (int e = 16 * j; e < 16 * j + 16; ++e) {
          const int c = e / 32, within = e % 32, t = (within % 16) / 4, i = e % 4;
          const uint8_t lo_byte = col[((c * 4 + t) * kPackRows + lane) * 4 + i];
          const int lo = within < 16 ? (lo_byte & 0x0F) : (lo_byte >> 4);
          const int s2 = (e % 16) / 4;
          const int hi = (col[2048 + (j * kPackRows + lane) * 4 + i] >> (2 * s2)) & 3;
          dst[b * kQK_K + e] = sc * static_cast<float>((lo | (hi << 4)) - 32);
        }
      }
    }
    return;
  }
  const int64_t nb = n_in / kQK8_0;
  const auto* group = static_cast<const uint8_t*>(tensor) + static_cast<size_t>(r - lane) * g.row_bytes;
  const auto* scales = reinterpret_cast<const uint16_t*>(group + static_cast<size_t>(nb * g.code_bytes_per_block));
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* cb = group + b * g.code_bytes_per_block;
    uint16_t d16;
    std::memcpy(&d16, scales + b * kPackRows + lane, sizeof d16);
    const float d = fp16_to_fp32(d16);
    float* out = dst + b * kQK8_0;
    if (packed == TensorType::Q5_0_X16) {
      const uint8_t* high = cb + kPackRows * (kQK5_0 / 2) + lane * 4;
      for (int e = 0; e < kQK5_0; ++e) {
        const int j = e / 4, i = e % 4;  // code vector j holds elements 4j .. 4j+3
        const uint8_t byte = cb[((j % 4) * kPackRows + lane) * 4 + i];
        const int lo = j < 4 ? (byte & 0x0F) : (byte >> 4);
        const int fifth = (high[i] >> j) & 1;
        out[e] = d * static_cast<float>((lo | (fifth << 4)) - 16);
      }
    } else if (packed == TensorType::Q4_0_X16) {
      for (int j = 0; j < 4; ++j) {
        for (int i = 0; i < 4; ++i) {
          const uint8_t byte = cb[(j * kPackRows + lane) * 4 + i];
          out[4 * j + i] = d * static_cast<float>((byte & 0x0F) - 8);
          out[16 + 4 * j + i] = d * static_cast<float>((byte >> 4) - 8);
        }
      }
    } else {
      for (int j = 0; j < 8; ++j) {
        for (int i = 0; i < 4; ++i) out[4 * j + i] = d * static_cast<float>(cb[(j * kPackRows + lane) * 4 + i] - 128);
      }
    }
  }
}

}  // namespace edgellm::kernels
