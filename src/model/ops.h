// tenzro model: the small f32 vector operations of the spine (norms,
// activations, rotary). Sums of squares are taken in double as ggml does
// (ggml_float), so the norms match llama.cpp's to the last bit or two.
#pragma once

#include <cmath>
#include <cstdint>

namespace tenzro::model {

// y = x / sqrt(mean(x^2) + eps) * w   (w may be null: no weight). y may alias x.
inline void RmsNorm(const float* x, const float* w, int64_t n, float eps, float* y) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  const float scale = 1.0f / std::sqrt(static_cast<float>(sum / n) + eps);
  if (w) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale * w[i];
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale;
  }
}

// x /= max(|x|, eps), in place (ggml_l2_norm).
inline void L2Norm(float* x, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  const float scale = 1.0f / std::fmax(std::sqrt(static_cast<float>(sum)), eps);
  for (int64_t i = 0; i < n; ++i) x[i] *= scale;
}

inline float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
inline float Silu(float x) { return x / (1.0f + std::exp(-x)); }
// ggml_softplus: log(1 + e^x), x itself above 20.
inline float Softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// NEOX rotary on the first n_rot values of one head, pairing (i, i + n_rot/2).
// cos_sin holds n_rot/2 (cos, sin) pairs for this position.
inline void RopeNeox(float* x, int n_rot, const float* cos_sin) {
  const int half = n_rot / 2;
  for (int i = 0; i < half; ++i) {
    const float c = cos_sin[2 * i], s = cos_sin[2 * i + 1];
    const float x0 = x[i], x1 = x[i + half];
    x[i] = x0 * c - x1 * s;
    x[i + half] = x0 * s + x1 * c;
  }
}

// (cos, sin) of pos * base^(-2i/n_rot) for i < n_rot/2, computed in double.
inline void RopeAngles(int64_t pos, int n_rot, double base, float* cos_sin) {
  for (int i = 0; i < n_rot / 2; ++i) {
    double theta = static_cast<double>(pos) * std::pow(base, -2.0 * i / n_rot);
    cos_sin[2 * i] = static_cast<float>(std::cos(theta));
    cos_sin[2 * i + 1] = static_cast<float>(std::sin(theta));
  }
}

}  // namespace tenzro::model
