// Internal helpers shared by the scalar reference and the SIMD kernels: the K-quant 6-bit
// scale unpacking and ggml's round-to-nearest helper, so every path decodes blocks identically.
#pragma once

#include <cstdint>
#include <cstring>

namespace edgellm::kernels {

// Round to nearest, ties to even, for |x| < 2^22 — the same trick ggml's nearest_int uses
// (adding 1.5 * 2^23 pushes the integer part into the low mantissa bits), so quantizers that
// call it reproduce ggml's choices exactly, including on ties.
inline int nearest_int(float x) {
  const float v = x + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return (bits & 0x007fffff) - 0x00400000;
}

// Q4_K / Q5_K pack 8 six-bit scales and 8 six-bit mins into 12 bytes:
//   bytes 0..3:  low 6 bits = scale j (j < 4), top 2 bits = high bits of scale j+4
//   bytes 4..7:  low 6 bits = min j   (j < 4), top 2 bits = high bits of min j+4
//   bytes 8..11: low nibble = low 4 bits of scale j+4, high nibble = low 4 bits of min j+4
inline void get_scale_min_k4(int j, const uint8_t* q, uint8_t* scale, uint8_t* min) {
  if (j < 4) {
    *scale = q[j] & 63;
    *min = q[j + 4] & 63;
  } else {
    *scale = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *min = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// All 8 scales and mins of a Q4_K / Q5_K block at once.
inline void unpack_scales_mins_k4(const uint8_t* q, uint8_t scales[8], uint8_t mins[8]) {
  for (int j = 0; j < 8; ++j) get_scale_min_k4(j, q, &scales[j], &mins[j]);
}

}  // namespace edgellm::kernels
