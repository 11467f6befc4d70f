#include "engine/rope.h"

#include <cmath>

namespace edgellm {

void rope_angles(const HParams& hp, const float* rope_freqs, float pos, float* cos_out, float* sin_out) {
  const int32_t half = hp.n_rot / 2;
  const float theta_scale = std::pow(hp.rope_freq_base, -2.0f / static_cast<float>(hp.n_rot));
  float theta = pos;
  for (int32_t i = 0; i < half; ++i) {
    const float angle = hp.rope_freq_scale * (theta / (rope_freqs ? rope_freqs[i] : 1.0f));
    cos_out[i] = std::cos(angle);
    sin_out[i] = std::sin(angle);
    theta *= theta_scale;
  }
}

void rope_rotate(RopeStyle style, int32_t n_rot, const float* cs, const float* sn, float* h) {
  const int32_t half = n_rot / 2;
  if (style == RopeStyle::kNormal) {
    for (int32_t i = 0; i < half; ++i) {
      const float x0 = h[2 * i], x1 = h[2 * i + 1];
      h[2 * i] = x0 * cs[i] - x1 * sn[i];
      h[2 * i + 1] = x0 * sn[i] + x1 * cs[i];
    }
  } else {
    for (int32_t i = 0; i < half; ++i) {
      const float x0 = h[i], x1 = h[i + half];
      h[i] = x0 * cs[i] - x1 * sn[i];
      h[i + half] = x0 * sn[i] + x1 * cs[i];
    }
  }
}

}  // namespace edgellm
