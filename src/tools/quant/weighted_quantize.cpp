#include "tools/quant/weighted_quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/fp16.h"
#include "kernels/blocks.h"
#include "kernels/kernels.h"
#include "kernels/quant_common.h"

namespace edgellm::quant {

using kernels::nearest_int;

namespace {

// Below this absolute maximum a group is all zeros (ggml's GROUP_MAX_EPS).
constexpr float kGroupMaxEps = 1e-15f;
// The legacy and K-quant asymmetric searches: candidates (nmax + rmin + rdelta * k) / (max - min)
// for k in [0, 36] (ggml's quantize_row_q4_1_impl / q4_K_impl arguments).
constexpr float kQkx3Rmin = -0.9f;
constexpr float kQkx3Rdelta = 0.05f;
constexpr int kQkx3Steps = 36;

// Mean square of a row (the sigma2 of ggml's legacy weighted quantizers).
float mean_square(const float* x, int64_t n) {
  float s = 0;
  for (int64_t j = 0; j < n; ++j) s += x[j] * x[j];
  return s / static_cast<float>(n);
}

// w[j] = imp[j] * sqrt(sigma2 + x[j]^2): the column's importance times the element's magnitude
// floored by the row's (or super-block's) RMS.
void element_weights(const float* x, const float* imp, float sigma2, int n, float* w) {
  for (int j = 0; j < n; ++j) w[j] = imp[j] * std::sqrt(sigma2 + x[j] * x[j]);
}

void quantize_q4_0(const float* x, BlockQ4_0* y, int64_t n, const float* imp) {
  const float sigma2 = mean_square(x, n);
  float w[kQK4_0];
  int8_t L[kQK4_0];
  for (int64_t ib = 0; ib < n / kQK4_0; ++ib) {
    const float* xb = x + ib * kQK4_0;
    element_weights(xb, imp + ib * kQK4_0, sigma2, kQK4_0, w);
    const float d = make_qx_quants_weighted(kQK4_0, 8, xb, L, w);
    y[ib].d = fp32_to_fp16(d);
    for (int j = 0; j < 16; ++j) y[ib].qs[j] = static_cast<uint8_t>(L[j] | (L[j + 16] << 4));
  }
}

void quantize_q5_0(const float* x, BlockQ5_0* y, int64_t n, const float* imp) {
  const float sigma2 = mean_square(x, n);
  float w[kQK5_0];
  int8_t L[kQK5_0];
  for (int64_t ib = 0; ib < n / kQK5_0; ++ib) {
    const float* xb = x + ib * kQK5_0;
    element_weights(xb, imp + ib * kQK5_0, sigma2, kQK5_0, w);
    const float d = make_qx_quants_weighted(kQK5_0, 16, xb, L, w);
    y[ib].d = fp32_to_fp16(d);
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const uint8_t a = static_cast<uint8_t>(L[j]), b = static_cast<uint8_t>(L[j + 16]);
      y[ib].qs[j] = static_cast<uint8_t>((a & 0x0F) | ((b & 0x0F) << 4));
      qh |= static_cast<uint32_t>((a & 0x10u) >> 4) << j;
      qh |= static_cast<uint32_t>((b & 0x10u) >> 4) << (j + 16);
    }
    std::memcpy(y[ib].qh, &qh, sizeof qh);
  }
}

// Q4_1 and Q5_1: the asymmetric search per 32 elements; `bits` 4 or 5.
template <typename Block>
void quantize_x_1(const float* x, Block* y, int64_t n, const float* imp, int bits) {
  const float sigma2 = mean_square(x, n);
  float w[32];
  uint8_t L[32];
  const int nmax = (1 << bits) - 1;
  for (int64_t ib = 0; ib < n / 32; ++ib) {
    const float* xb = x + ib * 32;
    element_weights(xb, imp + ib * 32, sigma2, 32, w);
    float min;
    const float d = make_qkx3_quants(32, nmax, xb, w, L, &min, kQkx3Rmin, kQkx3Rdelta, kQkx3Steps);
    y[ib].d = fp32_to_fp16(d);
    y[ib].m = fp32_to_fp16(-min);
    if constexpr (sizeof(Block) == sizeof(BlockQ4_1)) {
      for (int j = 0; j < 16; ++j) y[ib].qs[j] = static_cast<uint8_t>(L[j] | (L[j + 16] << 4));
    } else {
      uint32_t qh = 0;
      for (int j = 0; j < 16; ++j) {
        y[ib].qs[j] = static_cast<uint8_t>((L[j] & 0x0F) | ((L[j + 16] & 0x0F) << 4));
        qh |= static_cast<uint32_t>((L[j] & 0x10u) >> 4) << j;
        qh |= static_cast<uint32_t>((L[j + 16] & 0x10u) >> 4) << (j + 16);
      }
      std::memcpy(y[ib].qh, &qh, sizeof qh);
    }
  }
}

// Q4_K / Q5_K super-block: d, dmin, the packed 6-bit scales and L[256] in [0, nmax].
void k_superblock(const float* x, const float* imp, int nmax, uint16_t* d_out, uint16_t* dmin_out, uint8_t* packed,
                  uint8_t* L) {
  constexpr int kSub = kQK_K / 32;
  float w[32], sw[kSub], scales[kSub], mins[kSub];
  uint8_t Ls[kSub], Lm[kSub];
  float sum_x2 = 0;
  for (int l = 0; l < kQK_K; ++l) sum_x2 += x[l] * x[l];
  const float sigma2 = 2 * sum_x2 / kQK_K;
  for (int j = 0; j < kSub; ++j) {
    element_weights(x + 32 * j, imp + 32 * j, sigma2, 32, w);
    float sumw = 0;
    for (int l = 0; l < 32; ++l) sumw += w[l];
    sw[j] = sumw;
    scales[j] = make_qkx3_quants(32, nmax, x + 32 * j, w, L + 32 * j, &mins[j], kQkx3Rmin, kQkx3Rdelta, kQkx3Steps);
  }
  const float d_block = make_qp_quants(kSub, 63, scales, Ls, sw);
  const float m_block = make_qp_quants(kSub, 63, mins, Lm, sw);
  std::memset(packed, 0, kKScaleBytes);
  for (int j = 0; j < kSub; ++j) {
    // Q5_K clamps to 63 (Q4_K's codes are <= 63 already unless a scale came out negative, where
    // ggml wraps the same way this uint8_t conversion does).
    const uint8_t ls = nmax == 31 ? std::min<uint8_t>(63, Ls[j]) : Ls[j];
    const uint8_t lm = nmax == 31 ? std::min<uint8_t>(63, Lm[j]) : Lm[j];
    if (j < 4) {
      packed[j] = ls;
      packed[j + 4] = lm;
    } else {
      packed[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      packed[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
      packed[j] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
  }
  *d_out = fp32_to_fp16(d_block);
  *dmin_out = fp32_to_fp16(m_block);
  const float d_super = fp16_to_fp32(*d_out), dmin_super = fp16_to_fp32(*dmin_out);
  for (int j = 0; j < kSub; ++j) {
    uint8_t sc, m;
    kernels::get_scale_min_k4(j, packed, &sc, &m);
    const float d = d_super * sc;
    if (d == 0.0f) continue;
    const float dm = dmin_super * m;
    for (int ii = 0; ii < 32; ++ii) {
      L[32 * j + ii] = static_cast<uint8_t>(std::clamp(nearest_int((x[32 * j + ii] + dm) / d), 0, nmax));
    }
  }
}

void quantize_q4_k(const float* x, BlockQ4_K* y, int64_t n, const float* imp) {
  uint8_t L[kQK_K];
  for (int64_t i = 0; i < n / kQK_K; ++i, x += kQK_K, imp += kQK_K) {
    k_superblock(x, imp, 15, &y[i].d, &y[i].dmin, y[i].scales, L);
    uint8_t* q = y[i].qs;
    for (int j = 0; j < kQK_K; j += 64, q += 32) {
      for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
    }
  }
}

void quantize_q5_k(const float* x, BlockQ5_K* y, int64_t n, const float* imp) {
  uint8_t L[kQK_K];
  for (int64_t i = 0; i < n / kQK_K; ++i, x += kQK_K, imp += kQK_K) {
    k_superblock(x, imp, 31, &y[i].d, &y[i].dmin, y[i].scales, L);
    uint8_t* qh = y[i].qh;
    uint8_t* ql = y[i].qs;
    std::memset(qh, 0, kQK_K / 8);
    uint8_t m1 = 1, m2 = 2;
    for (int nb = 0; nb < kQK_K; nb += 64, ql += 32) {
      for (int j = 0; j < 32; ++j) {
        int l1 = L[nb + j], l2 = L[nb + j + 32];
        if (l1 > 15) l1 -= 16, qh[j] |= m1;
        if (l2 > 15) l2 -= 16, qh[j] |= m2;
        ql[j] = static_cast<uint8_t>(l1 | (l2 << 4));
      }
      m1 = static_cast<uint8_t>(m1 << 2);
      m2 = static_cast<uint8_t>(m2 << 2);
    }
  }
}

void quantize_q6_k(const float* x, BlockQ6_K* y, int64_t n, const float* imp) {
  int8_t L[kQK_K];
  float scales[kQK_K / 16];
  for (int64_t i = 0; i < n / kQK_K; ++i, x += kQK_K, imp += kQK_K) {
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < kQK_K / 16; ++ib) {
      // ggml weights Q6_K's 16-element groups by the importance alone (no magnitude term).
      const float scale = make_qx_quants_weighted(16, 32, x + 16 * ib, L + 16 * ib, imp + 16 * ib);
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
        L[16 * j + ii] = static_cast<int8_t>(std::clamp(nearest_int(x[16 * j + ii] / d), -32, 31) + 32);
      }
    }
    uint8_t* ql = y[i].ql;
    uint8_t* qh = y[i].qh;
    for (int j = 0; j < kQK_K; j += 128, ql += 64, qh += 32) {
      for (int l = 0; l < 32; ++l) {
        const int q1 = L[j + l] & 0xF, q2 = L[j + l + 32] & 0xF, q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
        ql[l] = static_cast<uint8_t>(q1 | (q3 << 4));
        ql[l + 32] = static_cast<uint8_t>(q2 | (q4 << 4));
        qh[l] = static_cast<uint8_t>((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                                     ((L[j + l + 96] >> 4) << 6));
      }
    }
  }
}

}  // namespace

float make_qx_quants_weighted(int n, int nmax, const float* x, int8_t* L, const float* w) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    std::fill(L, L + n, int8_t{0});
    return 0.0f;
  }
  // Sums of the weighted least-squares fit x ~ scale * l for the codes of one inverse scale.
  auto fit = [&](float iscale, float* sumlx, float* suml2) {
    float a = 0, b = 0;
    for (int i = 0; i < n; ++i) {
      const float l = static_cast<float>(std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1));
      a += w[i] * x[i] * l;
      b += w[i] * l * l;
    }
    *sumlx = a;
    *suml2 = b;
  };
  auto assign = [&](float iscale) {
    for (int i = 0; i < n; ++i)
      L[i] = static_cast<int8_t>(nmax + std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1));
  };
  float iscale = -static_cast<float>(nmax) / max;
  float sumlx, suml2;
  fit(iscale, &sumlx, &suml2);
  assign(iscale);
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  // The weighted error of a fit is sum w x^2 - sumlx^2 / suml2: the best candidate maximises
  // sumlx^2 / suml2 (= scale * sumlx).
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    fit(iscale, &sumlx, &suml2);
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      assign(iscale);
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

float make_qkx3_quants(int n, int nmax, const float* x, const float* w, uint8_t* L, float* min_out, float rmin,
                       float rdelta, int nstep) {
  float mn = x[0], mx = x[0];
  float sum_w = w[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    mn = std::min(mn, x[i]);
    mx = std::max(mx, x[i]);
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (mn > 0) mn = 0;
  if (mx <= mn) {
    std::fill(L, L + n, uint8_t{0});
    *min_out = -mn;
    return 0.0f;
  }
  float iscale = static_cast<float>(nmax) / (mx - mn);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    L[i] = static_cast<uint8_t>(std::clamp(nearest_int(iscale * (x[i] - mn)), 0, nmax));
    const float diff = scale * L[i] + mn - x[i];
    best_error += w[i] * (diff * diff);
  }
  uint8_t Laux[kQK_K];
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (mx - mn);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest_int(iscale * (x[i] - mn)), 0, nmax);
      Laux[i] = static_cast<uint8_t>(l);
      const float fl = static_cast<float>(l);
      sum_l += w[i] * fl;
      sum_l2 += w[i] * fl * fl;
      sum_xl += w[i] * fl * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float err = 0;
      for (int i = 0; i < n; ++i) {
        const float diff = this_scale * Laux[i] + this_min - x[i];
        err += w[i] * (diff * diff);
      }
      if (err < best_error) {
        std::memcpy(L, Laux, static_cast<size_t>(n));
        best_error = err;
        scale = this_scale;
        mn = this_min;
      }
    }
  }
  *min_out = -mn;
  return scale;
}

float make_qp_quants(int n, int nmax, const float* x, uint8_t* L, const float* w) {
  float max = 0;
  for (int i = 0; i < n; ++i) max = std::max(max, x[i]);
  if (max < kGroupMaxEps) {
    std::fill(L, L + n, uint8_t{0});
    return 0.0f;
  }
  // Codes live in uint8_t as in ggml: a negative x (a sub-block whose fitted scale came out
  // negative) wraps there and here alike.
  // 1. The inverse scale among (nmax + 0.1 k) / max, k in [-4, 4], with the least weighted error.
  float iscale = static_cast<float>(nmax) / max;
  for (int i = 0; i < n; ++i) L[i] = static_cast<uint8_t>(nearest_int(iscale * x[i]));
  float best_mse = 0;
  {
    const float scale = 1 / iscale;
    for (int i = 0; i < n; ++i) {
      const float diff = x[i] - scale * L[i];
      best_mse += w[i] * diff * diff;
    }
  }
  for (int is = -4; is <= 4; ++is) {
    if (is == 0) continue;
    const float iscale_is = (0.1f * static_cast<float>(is) + static_cast<float>(nmax)) / max;
    const float scale_is = 1 / iscale_is;
    float mse = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::min(nmax, nearest_int(iscale_is * x[i]));
      const float diff = x[i] - scale_is * static_cast<float>(l);
      mse += w[i] * diff * diff;
    }
    if (mse < best_mse) {
      best_mse = mse;
      iscale = iscale_is;
    }
  }
  // 2. Its codes, then up to 5 passes moving single codes to where the refitted scale wants them.
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::min(nmax, nearest_int(iscale * x[i]));
    L[i] = static_cast<uint8_t>(l);
    sumlx += w[i] * x[i] * static_cast<float>(l);
    suml2 += w[i] * static_cast<float>(l) * static_cast<float>(l);
  }
  for (int itry = 0; itry < 5; ++itry) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      float slx = sumlx - w[i] * x[i] * L[i];
      float sl2 = suml2 - w[i] * L[i] * L[i];
      if (slx > 0 && sl2 > 0) {
        const int new_l = std::min(nmax, nearest_int(x[i] * sl2 / slx));
        if (new_l != L[i]) {
          const float nl = static_cast<float>(new_l);
          slx += w[i] * x[i] * nl;
          sl2 += w[i] * nl * nl;
          if (slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = static_cast<uint8_t>(new_l);
            sumlx = slx;
            suml2 = sl2;
            ++n_changed;
          }
        }
      }
    }
    if (n_changed == 0) break;
  }
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

bool uses_importance(TensorType type) {
  switch (type) {
    case TensorType::Q4_0:
    case TensorType::Q4_1:
    case TensorType::Q5_0:
    case TensorType::Q5_1:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K: return true;
    default: return false;
  }
}

void quantize_row_weighted(TensorType type, const float* x, void* dst, int64_t n, const float* imp) {
  if (imp == nullptr || !uses_importance(type)) {
    kernels::quantize_row(type, x, dst, n);
    return;
  }
  require(n % tensor_block_size(type) == 0, ErrorCode::kInvalidArgument,
          "quantize_row_weighted: " + std::to_string(n) + " is not a multiple of the " + tensor_type_name(type) +
              " block size");
  switch (type) {
    case TensorType::Q4_0: quantize_q4_0(x, static_cast<BlockQ4_0*>(dst), n, imp); break;
    case TensorType::Q4_1: quantize_x_1(x, static_cast<BlockQ4_1*>(dst), n, imp, 4); break;
    case TensorType::Q5_0: quantize_q5_0(x, static_cast<BlockQ5_0*>(dst), n, imp); break;
    case TensorType::Q5_1: quantize_x_1(x, static_cast<BlockQ5_1*>(dst), n, imp, 5); break;
    case TensorType::Q4_K: quantize_q4_k(x, static_cast<BlockQ4_K*>(dst), n, imp); break;
    case TensorType::Q5_K: quantize_q5_k(x, static_cast<BlockQ5_K*>(dst), n, imp); break;
    case TensorType::Q6_K: quantize_q6_k(x, static_cast<BlockQ6_K*>(dst), n, imp); break;
    default: break;
  }
}

}  // namespace edgellm::quant
