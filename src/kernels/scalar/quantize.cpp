// Reference quantizers. The legacy types (Q4_0 .. Q8_1) reproduce ggml's *_ref round-to-nearest
// quantizers byte for byte; the K-quants use ggml's standard reference scale searches
// (make_qkx2_quants for Q4_K/Q5_K, make_qx_quants for Q6_K) with the same parameters, so files
// we write load anywhere and have the usual quality. All functions are deterministic.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "kernels/blocks.h"
#include "kernels/quant_common.h"
#include "kernels/scalar/scalar_kernels.h"

namespace edgellm::kernels::scalar {
namespace {

// Below this absolute maximum a group is treated as all zeros (ggml's GROUP_MAX_EPS).
constexpr float kGroupMaxEps = 1e-15f;

// Signed value with the largest magnitude (first one on ties), and that magnitude.
void signed_absmax(const float* x, int n, float* max_signed, float* amax) {
  float a = 0.0f, m = 0.0f;
  for (int j = 0; j < n; ++j) {
    const float v = std::fabs(x[j]);
    if (a < v) {
      a = v;
      m = x[j];
    }
  }
  *max_signed = m;
  *amax = a;
}

void min_max(const float* x, int n, float* mn, float* mx) {
  float lo = FLT_MAX, hi = -FLT_MAX;
  for (int j = 0; j < n; ++j) {
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
  }
  *mn = lo;
  *mx = hi;
}

// Weighted asymmetric search (ggml's make_qkx2_quants, use_mad = false): find scale and min so
// that x ~ scale * L + min, L in [0, nmax], minimising sum w * err^2. Tries nstep+1 candidate
// inverse scales (nmax + rmin + rdelta*k) / (max - min) and refits scale/min by least squares
// for each rounding. Returns the scale; *neg_min receives -min (>= 0).
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* neg_min, uint8_t* Laux,
                       float rmin, float rdelta, int nstep) {
  float mn = x[0], mx = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    mn = std::min(mn, x[i]);
    mx = std::max(mx, x[i]);
    sum_w += weights[i];
    sum_x += weights[i] * x[i];
  }
  if (mn > 0) mn = 0;
  if (mx == mn) {
    std::fill(L, L + n, uint8_t{0});
    *neg_min = -mn;
    return 0.0f;
  }
  float iscale = static_cast<float>(nmax) / (mx - mn);
  float scale = 1.0f / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::clamp(nearest_int(iscale * (x[i] - mn)), 0, nmax);
    L[i] = static_cast<uint8_t>(l);
    const float diff = scale * static_cast<float>(l) + mn - x[i];
    best_error += weights[i] * diff * diff;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (mx - mn);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest_int(iscale * (x[i] - mn)), 0, nmax);
      Laux[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      const float fl = static_cast<float>(l);
      sum_l += w * fl;
      sum_l2 += w * fl * fl;
      sum_xl += w * fl * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        const float diff = this_scale * static_cast<float>(Laux[i]) + this_min - x[i];
        cur_error += weights[i] * diff * diff;
      }
      if (cur_error < best_error) {
        std::memcpy(L, Laux, static_cast<size_t>(n));
        best_error = cur_error;
        scale = this_scale;
        mn = this_min;
      }
    }
  }
  *neg_min = -mn;
  return scale;
}

// Symmetric search (ggml's make_qx_quants with rmse_type 1, weights x^2): x ~ scale * (L - nmax),
// L in [0, 2*nmax). Tries inverse scales -(nmax + 0.1*k)/max for k in [-9, 9] and keeps the one
// with the best weighted least-squares fit.
float make_qx_quants(int n, int nmax, const float* x, int8_t* L) {
  float max_signed, amax;
  signed_absmax(x, n, &max_signed, &amax);
  if (amax < kGroupMaxEps) {
    std::fill(L, L + n, int8_t{0});
    return 0.0f;
  }
  auto fit = [&](float iscale, float* sumlx, float* suml2) {
    float a = 0, b = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
      const float w = x[i] * x[i];
      a += w * x[i] * static_cast<float>(l);
      b += w * static_cast<float>(l) * static_cast<float>(l);
    }
    *sumlx = a;
    *suml2 = b;
  };
  auto assign = [&](float iscale) {
    for (int i = 0; i < n; ++i) {
      L[i] = static_cast<int8_t>(nmax + std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1));
    }
  };
  float iscale = -static_cast<float>(nmax) / max_signed;
  float sumlx, suml2;
  fit(iscale, &sumlx, &suml2);
  assign(iscale);
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max_signed;
    fit(iscale, &sumlx, &suml2);
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      assign(iscale);
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// Shared by Q4_K and Q5_K: per 32-element sub-block scale/min search, then 6-bit quantization of
// the 8 scales and 8 mins relative to their maxima, then re-quantization of the values with the
// rounded scales. Writes d, dmin, the packed scales and L[256] (values in [0, nmax]).
void quantize_k_superblock(const float* x, int nmax, float rmin, float rdelta, int nstep, uint16_t* d_out,
                           uint16_t* dmin_out, uint8_t* packed, uint8_t* L) {
  float scales[8], mins[8], weights[32];
  uint8_t Laux[32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    // Importance of each element: the RMS of the sub-block plus its own magnitude.
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
    scales[j] = make_qkx2_quants(32, nmax, xs, weights, L + 32 * j, &mins[j], Laux, rmin, rdelta, nstep);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  std::memset(packed, 0, kKScaleBytes);
  for (int j = 0; j < 8; ++j) {
    const uint8_t ls = static_cast<uint8_t>(std::min(63, nearest_int(inv_scale * scales[j])));
    const uint8_t lm = static_cast<uint8_t>(std::min(63, nearest_int(inv_min * mins[j])));
    if (j < 4) {
      packed[j] = ls;
      packed[j + 4] = lm;
    } else {
      packed[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      packed[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
      packed[j] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
  }
  *d_out = fp32_to_fp16(max_scale / 63.f);
  *dmin_out = fp32_to_fp16(max_min / 63.f);
  const float d = fp16_to_fp32(*d_out);
  const float dmin = fp16_to_fp32(*dmin_out);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    get_scale_min_k4(j, packed, &sc, &m);
    const float ds = d * sc;
    if (ds == 0.0f) continue;
    const float dm = dmin * m;
    for (int ii = 0; ii < 32; ++ii) {
      const int l = nearest_int((x[32 * j + ii] + dm) / ds);
      L[32 * j + ii] = static_cast<uint8_t>(std::clamp(l, 0, nmax));
    }
  }
}

}  // namespace

void quantize_f32(const float* src, void* dst, int64_t n) {
  std::memmove(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void quantize_f16(const float* src, void* dst, int64_t n) {
  auto* h = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_fp16(src[i]);
}

void quantize_bf16(const float* src, void* dst, int64_t n) {
  auto* h = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_bf16(src[i]);
}

// d = max / -8 (max = the signed value of largest magnitude, so it maps to code 0 exactly);
// q = min(15, trunc(x / d + 8.5)).
void quantize_q4_0(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ4_0*>(dst);
  for (int64_t i = 0; i < n / kQK4_0; ++i) {
    const float* x = src + i * kQK4_0;
    float max_signed, amax;
    signed_absmax(x, kQK4_0, &max_signed, &amax);
    const float d = max_signed / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      const uint8_t q0 = static_cast<uint8_t>(std::min<int8_t>(15, static_cast<int8_t>(x[j] * id + 8.5f)));
      const uint8_t q1 = static_cast<uint8_t>(std::min<int8_t>(15, static_cast<int8_t>(x[j + kQK4_0 / 2] * id + 8.5f)));
      y[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

// d = (max - min) / 15, m = min; q = min(15, trunc((x - min) / d + 0.5)).
void quantize_q4_1(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ4_1*>(dst);
  for (int64_t i = 0; i < n / kQK4_1; ++i) {
    const float* x = src + i * kQK4_1;
    float mn, mx;
    min_max(x, kQK4_1, &mn, &mx);
    const float d = (mx - mn) / 15;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    y[i].m = fp32_to_fp16(mn);
    for (int j = 0; j < kQK4_1 / 2; ++j) {
      const uint8_t q0 = static_cast<uint8_t>(std::min<int8_t>(15, static_cast<int8_t>((x[j] - mn) * id + 0.5f)));
      const uint8_t q1 =
          static_cast<uint8_t>(std::min<int8_t>(15, static_cast<int8_t>((x[j + kQK4_1 / 2] - mn) * id + 0.5f)));
      y[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

// d = max / -16; q = min(31, trunc(x / d + 16.5)); low 4 bits in qs, bit 4 in qh.
void quantize_q5_0(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ5_0*>(dst);
  for (int64_t i = 0; i < n / kQK5_0; ++i) {
    const float* x = src + i * kQK5_0;
    float max_signed, amax;
    signed_absmax(x, kQK5_0, &max_signed, &amax);
    const float d = max_signed / -16;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    uint32_t qh = 0;
    for (int j = 0; j < kQK5_0 / 2; ++j) {
      const uint8_t q0 = static_cast<uint8_t>(std::min<int8_t>(31, static_cast<int8_t>(x[j] * id + 16.5f)));
      const uint8_t q1 = static_cast<uint8_t>(std::min<int8_t>(31, static_cast<int8_t>(x[j + kQK5_0 / 2] * id + 16.5f)));
      y[i].qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
      qh |= static_cast<uint32_t>((q0 & 0x10u) >> 4) << j;
      qh |= static_cast<uint32_t>((q1 & 0x10u) >> 4) << (j + kQK5_0 / 2);
    }
    std::memcpy(y[i].qh, &qh, sizeof qh);
  }
}

// d = (max - min) / 31, m = min; q = trunc((x - min) / d + 0.5).
void quantize_q5_1(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ5_1*>(dst);
  for (int64_t i = 0; i < n / kQK5_1; ++i) {
    const float* x = src + i * kQK5_1;
    float mn, mx;
    min_max(x, kQK5_1, &mn, &mx);
    const float d = (mx - mn) / 31;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    y[i].m = fp32_to_fp16(mn);
    uint32_t qh = 0;
    for (int j = 0; j < kQK5_1 / 2; ++j) {
      const uint8_t q0 = static_cast<uint8_t>((x[j] - mn) * id + 0.5f);
      const uint8_t q1 = static_cast<uint8_t>((x[j + kQK5_1 / 2] - mn) * id + 0.5f);
      y[i].qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
      qh |= static_cast<uint32_t>((q0 & 0x10u) >> 4) << j;
      qh |= static_cast<uint32_t>((q1 & 0x10u) >> 4) << (j + kQK5_1 / 2);
    }
    std::memcpy(y[i].qh, &qh, sizeof qh);
  }
}

// d = amax / 127; q = roundf(x / d) (half away from zero).
void quantize_q8_0(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < n / kQK8_0; ++i) {
    const float* x = src + i * kQK8_0;
    float amax = 0;
    for (int j = 0; j < kQK8_0; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    for (int j = 0; j < kQK8_0; ++j) y[i].qs[j] = static_cast<int8_t>(std::roundf(x[j] * id));
  }
}

// As Q8_0, plus s = d * sum(q) for the min term of Q4_1 / Q5_1 dot products.
void quantize_q8_1(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8_1*>(dst);
  for (int64_t i = 0; i < n / kQK8_1; ++i) {
    const float* x = src + i * kQK8_1;
    float amax = 0;
    for (int j = 0; j < kQK8_1; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    int sum = 0;
    for (int j = 0; j < kQK8_1; ++j) {
      y[i].qs[j] = static_cast<int8_t>(std::roundf(x[j] * id));
      sum += y[i].qs[j];
    }
    y[i].s = fp32_to_fp16(static_cast<float>(sum) * d);
  }
}

// Q8_K: float d = max / -127 style symmetric scale (|q| <= 127, so SIMD sign tricks never see
// -128), q = nearest_int(x / d), bsums[k] = sum of q over elements [16k, 16k+16).
void quantize_q8_k(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* x = src + i * kQK_K;
    float max_signed, amax;
    signed_absmax(x, kQK_K, &max_signed, &amax);
    if (amax == 0.0f) {
      std::memset(&y[i], 0, sizeof y[i]);
      continue;
    }
    const float iscale = -127.f / max_signed;
    for (int j = 0; j < kQK_K; ++j) {
      y[i].qs[j] = static_cast<int8_t>(std::clamp(nearest_int(iscale * x[j]), -127, 127));
    }
    for (int k = 0; k < kQK_K / 16; ++k) {
      int s = 0;
      for (int j = 0; j < 16; ++j) s += y[i].qs[16 * k + j];
      y[i].bsums[k] = static_cast<int16_t>(s);
    }
    y[i].d = 1.0f / iscale;
  }
}

// ggml's quantize_row_q4_K_ref: make_qkx2_quants(32, 15, ..., rmin -1, rdelta 0.1, 20 steps).
void quantize_q4_k(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ4_K*>(dst);
  uint8_t L[kQK_K];
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* x = src + i * kQK_K;
    quantize_k_superblock(x, 15, -1.0f, 0.1f, 20, &y[i].d, &y[i].dmin, y[i].scales, L);
    uint8_t* q = y[i].qs;
    for (int j = 0; j < kQK_K; j += 64, q += 32) {
      for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
    }
  }
}

// ggml's quantize_row_q5_K_ref: make_qkx2_quants(32, 31, ..., rmin -0.5, rdelta 0.1, 15 steps).
void quantize_q5_k(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ5_K*>(dst);
  uint8_t L[kQK_K];
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* x = src + i * kQK_K;
    quantize_k_superblock(x, 31, -0.5f, 0.1f, 15, &y[i].d, &y[i].dmin, y[i].scales, L);
    uint8_t* qh = y[i].qh;
    uint8_t* ql = y[i].qs;
    std::memset(qh, 0, kQK_K / 8);
    uint8_t m1 = 1, m2 = 2;
    for (int nb = 0; nb < kQK_K; nb += 64, ql += 32) {
      for (int j = 0; j < 32; ++j) {
        int l1 = L[nb + j];
        if (l1 > 15) {
          l1 -= 16;
          qh[j] |= m1;
        }
        int l2 = L[nb + j + 32];
        if (l2 > 15) {
          l2 -= 16;
          qh[j] |= m2;
        }
        ql[j] = static_cast<uint8_t>(l1 | (l2 << 4));
      }
      m1 = static_cast<uint8_t>(m1 << 2);
      m2 = static_cast<uint8_t>(m2 << 2);
    }
  }
}

// ggml's quantize_row_q6_K_ref: make_qx_quants(16, 32, ...) per 16-element group, int8 group
// scales relative to the largest one (iscale = -128 / max_scale), then 6-bit values.
void quantize_q6_k(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ6_K*>(dst);
  int8_t L[kQK_K];
  float scales[kQK_K / 16];
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* x = src + i * kQK_K;
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < kQK_K / 16; ++ib) {
      const float scale = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
      scales[ib] = scale;
      if (std::fabs(scale) > max_abs_scale) {
        max_abs_scale = std::fabs(scale);
        max_scale = scale;
      }
    }
    if (max_abs_scale < kGroupMaxEps) {
      std::memset(&y[i], 0, sizeof y[i]);
      continue;
    }
    const float iscale = -128.f / max_scale;
    y[i].d = fp32_to_fp16(1 / iscale);
    for (int ib = 0; ib < kQK_K / 16; ++ib) {
      y[i].scales[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
    }
    const float d_super = fp16_to_fp32(y[i].d);
    for (int j = 0; j < kQK_K / 16; ++j) {
      const float d = d_super * y[i].scales[j];
      if (d == 0.0f) continue;
      for (int ii = 0; ii < 16; ++ii) {
        const int l = std::clamp(nearest_int(x[16 * j + ii] / d), -32, 31);
        L[16 * j + ii] = static_cast<int8_t>(l + 32);
      }
    }
    uint8_t* ql = y[i].ql;
    uint8_t* qh = y[i].qh;
    for (int j = 0; j < kQK_K; j += 128, ql += 64, qh += 32) {
      for (int l = 0; l < 32; ++l) {
        const int q1 = L[j + l] & 0xF;
        const int q2 = L[j + l + 32] & 0xF;
        const int q3 = L[j + l + 64] & 0xF;
        const int q4 = L[j + l + 96] & 0xF;
        ql[l] = static_cast<uint8_t>(q1 | (q3 << 4));
        ql[l + 32] = static_cast<uint8_t>(q2 | (q4 << 4));
        qh[l] = static_cast<uint8_t>((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                                     ((L[j + l + 96] >> 4) << 6));
      }
    }
  }
}

}  // namespace edgellm::kernels::scalar
