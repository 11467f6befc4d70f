// The encoder's row operations (engine/encoder_ops.h) against their definitions in double.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "engine/encoder_ops.h"

namespace edgellm {
namespace {

TEST(EncoderOps, ErfApproximationIsWithinFloatPrecision) {
  double worst = 0;
  for (int i = -600000; i <= 600000; ++i) {  // [-6, 6] in steps of 1e-5
    const float x = static_cast<float>(i) * 1e-5f;
    worst = std::max(worst, std::abs(static_cast<double>(erf_approx(x)) - std::erf(static_cast<double>(x))));
  }
  std::printf("[ measured ] erf_approx: worst absolute error %.3g on [-6, 6]\n", worst);
  EXPECT_LT(worst, 1e-6);  // measured 1.5e-7 (a few float ulps near |erf| = 1)
  EXPECT_EQ(erf_approx(0.0f), 0.0f);
  EXPECT_EQ(erf_approx(50.0f), erf_approx(4.0f));
}

TEST(EncoderOps, GeluIsBertsErfForm) {
  std::vector<float> x;
  for (int i = -2000; i <= 2000; ++i) x.push_back(static_cast<float>(i) * 5e-3f);
  std::vector<float> y = x;
  gelu_erf(y.data(), static_cast<int64_t>(y.size()));
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double xd = x[i];
    const double want = 0.5 * xd * (1.0 + std::erf(xd / std::sqrt(2.0)));
    worst = std::max(worst, std::abs(y[i] - want));
  }
  std::printf("[ measured ] gelu_erf: worst absolute error %.3g on [-10, 10]\n", worst);
  EXPECT_LT(worst, 1e-5);  // measured ~1e-6 (erf's 1.5e-7 times |x| / 2 up to 10)
  // The tanh approximation differs by up to ~5e-4 around |x| ~ 2: this must not be it.
  float t = 2.0f;
  gelu_erf(&t, 1);
  EXPECT_NEAR(t, 1.9544997, 1e-6);
}

TEST(EncoderOps, LayerNormMatchesItsDefinition) {
  std::mt19937 rng(3);
  std::normal_distribution<float> n(0.5f, 3.0f);
  const int64_t E = 384;
  std::vector<float> x(E), w(E), b(E), y(E);
  for (auto* v : {&x, &w, &b})
    for (float& e : *v) e = n(rng);
  layer_norm(x.data(), w.data(), b.data(), y.data(), E, 1e-12f);
  double mean = 0, var = 0;
  for (float v : x) mean += v;
  mean /= E;
  for (float v : x) var += (v - mean) * (v - mean);
  var /= E;
  double worst = 0;
  for (int64_t i = 0; i < E; ++i) {
    const double want = (x[i] - mean) / std::sqrt(var + 1e-12) * w[i] + b[i];
    worst = std::max(worst, std::abs(y[i] - want));
  }
  EXPECT_LT(worst, 1e-5);  // float rounding of values up to ~30
  // In place, and a constant row gives the bias (variance 0 + eps).
  std::vector<float> c(E, 4.0f);
  layer_norm(c.data(), w.data(), b.data(), c.data(), E, 1e-12f);
  for (int64_t i = 0; i < E; ++i) EXPECT_NEAR(c[i], b[i], 1e-6);
}

}  // namespace
}  // namespace edgellm
