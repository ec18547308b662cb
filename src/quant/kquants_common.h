// tenzro quant: the scalar tail of the k-quant quantizers, shared by the
// reference and SIMD variants (compiled once, for the baseline ISA).
//
// Given a super-block's sub-block scales/mins (and the provisional levels L
// that the scale search produced), these pack the 6-bit scales, write d/dmin,
// requantize each sub-block against the rounded scales and pack the levels:
// the second half of ggml's quantize_row_q{4,5,6}_K_ref.
#pragma once

#include <cstdint>

#include "quant/blocks.h"

namespace tenzro::quant {

// ggml's get_scale_min_k4: the j-th 6-bit scale and min of a q4_K/q5_K block.
void GetScaleMinK4(int j, const uint8_t* q, uint8_t* d, uint8_t* m);

// x: 256 inputs; scales/mins: 8 values from the sub-block search;
// L: 256 levels (updated in place, then packed into *y).
void FinishQ4_K(const float* x, const float* scales, const float* mins, uint8_t* L, block_q4_K* y);
void FinishQ5_K(const float* x, const float* scales, const float* mins, uint8_t* L, block_q5_K* y);
// x: 256 inputs; scales: 16 values from make_qx_quants; L: 256 levels (+32).
void FinishQ6_K(const float* x, const float* scales, int8_t* L, block_q6_K* y);

}  // namespace tenzro::quant
