// tenzro quant: block layouts, mirrored from ggml-common.h with ggml's
// spelling so they diff against it. Sizes are pinned by static_assert.
// ggml_half is an IEEE binary16 stored as uint16_t.
#pragma once

#include <cstdint>

namespace tenzro::quant {

using ggml_half = uint16_t;

inline constexpr int QK4_0 = 32;
struct block_q4_0 {
  ggml_half d;
  uint8_t qs[QK4_0 / 2];
};
static_assert(sizeof(block_q4_0) == 18);

inline constexpr int QK8_0 = 32;
struct block_q8_0 {
  ggml_half d;
  int8_t qs[QK8_0];
};
static_assert(sizeof(block_q8_0) == 34);

inline constexpr int QK_MXFP4 = 32;
struct block_mxfp4 {
  uint8_t e;  // E8M0 shared exponent
  uint8_t qs[QK_MXFP4 / 2];
};
static_assert(sizeof(block_mxfp4) == 17);

inline constexpr int QK_K = 256;
inline constexpr int K_SCALE_SIZE = 12;

struct block_q4_K {
  ggml_half d;
  ggml_half dmin;
  uint8_t scales[K_SCALE_SIZE];
  uint8_t qs[QK_K / 2];
};
static_assert(sizeof(block_q4_K) == 144);

struct block_q5_K {
  ggml_half d;
  ggml_half dmin;
  uint8_t scales[K_SCALE_SIZE];
  uint8_t qh[QK_K / 8];
  uint8_t qs[QK_K / 2];
};
static_assert(sizeof(block_q5_K) == 176);

struct block_q6_K {
  uint8_t ql[QK_K / 2];
  uint8_t qh[QK_K / 4];
  int8_t scales[QK_K / 16];
  ggml_half d;
};
static_assert(sizeof(block_q6_K) == 210);

// Activation blocks for integer dot products (ggml's q8_K).
struct block_q8_K {
  float d;
  int8_t qs[QK_K];
  int16_t bsums[QK_K / 16];
};
static_assert(sizeof(block_q8_K) == 292);

}  // namespace tenzro::quant
