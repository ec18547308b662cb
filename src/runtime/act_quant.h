// tenzro runtime: 8-bit activations for the integer dot-product kernels.
//
// Every quantized weight type (Q8_0, Q4_K, Q5_K, Q6_K) is multiplied against
// activations quantized here. Per token, each group of 256 values (the last
// group may be shorter) has one f32 `base` scale, and each 32-value block j in
// it an integer multiplier mul_j in 1..16:
//
//   x ≈ q * mul_j * base,  |q| <= 127,  base = amax(group) / (127 * 16),
//   mul_j = ceil(16 * amax(block j) / amax(group)).
//
// A block whose values are 16x smaller than the group's largest gets a 16x
// finer step: close to a free f32 scale per 32 (what keeps tenzro's MoE output
// closer to the exact result than ggml's q8_K, one scale per 256;
// docs/compute.md), yet mul_j is an integer, so a kernel sums a whole 256-value
// super-block in exact int32 arithmetic and converts to float once.
//
// Integer side table for the k-quant mins and the Q6_K -32 offset:
// b16 = mul * (sum of q over each 16 values), |b16| <= 16*16*127 = 32512.
//
// Layouts.
//  * Token-major (every kernel): token t's values are qs[t*n .. t*n+n).
//  * Token tiles (the batched k-quant kernels; built when n_tok >= kTileMin
//    and n % 256 == 0): tokens grouped 8 at a time, zero-padded; within a
//    tile, for each 4 consecutive values k..k+3, the 8 tokens' 4 bytes side by
//    side (32 bytes), so one byte-broadcast weight x one load = 8 tokens.
//
// Deterministic: the same input always gives the same bytes, whatever n_tok.
#pragma once

#include <cstdint>
#include <vector>

namespace tenzro::runtime {

inline constexpr int kActBlock = 32;
inline constexpr int kActGroup = 256;
inline constexpr int kTileTokens = 8;
inline constexpr int kTileMin = 4;  // token tiles are built from this many tokens up

struct QuantizedActs {
  int64_t n = 0;  // values per token (a multiple of kActBlock)
  int n_tok = 0;

  // Token-major.
  std::vector<int8_t> qs;       // n_tok * n
  std::vector<float> d;         // n_tok * n/32: block scale mul_j * base (f32-rounded)
  std::vector<float> base;      // n_tok * groups
  std::vector<int16_t> mul;     // n_tok * n/32
  std::vector<int16_t> b16;     // n_tok * n/16

  // Token tiles (empty unless has_tiles()).
  int n_tiles = 0;
  std::vector<int8_t> tq;       // [tile][n/4][8 tokens][4]
  std::vector<int16_t> tmul;    // [tile][n/32][8 tokens][2]: (mul_j, mul_j)
  std::vector<int16_t> tb16;    // [tile][n/32][8 tokens][2]: (b16[2i], b16[2i+1])
  std::vector<float> tbase;     // [tile][groups][8 tokens]

  int64_t groups() const { return (n + kActGroup - 1) / kActGroup; }
  const int8_t* q(int t) const { return qs.data() + t * n; }
  const float* scale(int t) const { return d.data() + t * (n / kActBlock); }
  const float* group_base(int t) const { return base.data() + t * groups(); }
  const int16_t* muls(int t) const { return mul.data() + t * (n / kActBlock); }
  const int16_t* sums16(int t) const { return b16.data() + t * (n / 16); }

  bool has_tiles() const { return n_tiles > 0; }
  const int8_t* tile_q(int tile) const { return tq.data() + tile * n * kTileTokens; }
  const int16_t* tile_mul(int tile) const { return tmul.data() + tile * (n / 32) * 16; }
  const int16_t* tile_sums16(int tile) const { return tb16.data() + tile * (n / 32) * 16; }
  const float* tile_base(int tile) const { return tbase.data() + tile * groups() * kTileTokens; }
};

// Quantizes n_tok rows of n floats (token-major). REQUIRES: n % 32 == 0.
// NaN quantizes to 0. `tiles`: also build the token tiles when the shape
// allows (n_tok >= kTileMin, n % 256 == 0); only the k-quant kernels read
// them (UsesTokenTiles), so callers for Q8_0 alone pass false.
void QuantizeActs(const float* x, int n_tok, int64_t n, QuantizedActs* out, bool tiles = true);

}  // namespace tenzro::runtime
