// tenzro runtime: 8-bit activations for the integer dot-product kernels.
//
// Every quantized weight type (Q8_0, Q4_K, Q5_K, Q6_K) is multiplied against
// activations quantized here, in blocks of 32 values with a float scale each
// (symmetric, round to nearest, |q| <= 127). This is finer than ggml's q8_K
// (one scale per 256 values) and keeps the scale in f32 rather than ggml
// q8_0's f16, which is why tenzro's MoE output is closer to the exact result
// than ggml's (docs/compute.md). Per-16 sums of q feed the k-quant min / Q6_K
// offset terms, so the kernels need not re-add the int8 values.
//
// Layout is token-major: token t's values are qs[t*n .. t*n+n).
#pragma once

#include <cstdint>
#include <vector>

namespace tenzro::runtime {

inline constexpr int kActBlock = 32;

struct QuantizedActs {
  int64_t n = 0;  // values per token (a multiple of kActBlock)
  int n_tok = 0;
  std::vector<int8_t> qs;    // n_tok * n
  std::vector<float> d;      // n_tok * n/32: x ≈ d * q within each block
  std::vector<int16_t> s16;  // n_tok * n/16: sum of qs over each 16 values
  std::vector<float> dxs;    // n_tok * n/32: d * (sum of qs over the block)

  const int8_t* q(int t) const { return qs.data() + t * n; }
  const float* scale(int t) const { return d.data() + t * (n / kActBlock); }
  const int16_t* sums16(int t) const { return s16.data() + t * (n / 16); }
  const float* scaled_sums(int t) const { return dxs.data() + t * (n / kActBlock); }
};

// Quantizes n_tok rows of n floats (token-major). REQUIRES: n % 32 == 0.
// Deterministic: the same input always gives the same bytes.
void QuantizeActs(const float* x, int n_tok, int64_t n, QuantizedActs* out);

}  // namespace tenzro::runtime
