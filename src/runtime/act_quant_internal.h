// tenzro runtime (internal): the per-32-value steps of QuantizeActs, per ISA.
// Every ISA gives bit-identical results (the same f32 operations; max is
// exact in any order), so quantized activations never depend on the CPU.
#pragma once

#include <cstdint>

namespace tenzro::runtime {

// BlockAmax: max |x[i]| over 32 values; NaN values are ignored (as std::fmax
// does). QuantizeBlock: q[i] = nearbyint(clamp(x[i] * id, -127, 127)),
// NaN -> 0; sums[h] = sum of q over values 16h .. 16h+15.
namespace scalar {
float BlockAmax(const float* x);
void QuantizeBlock(const float* x, float id, int8_t* q, int sums[2]);
}  // namespace scalar
namespace avx2 {  // REQUIRES: the AVX2 set (core/cpu.h)
float BlockAmax(const float* x);
void QuantizeBlock(const float* x, float id, int8_t* q, int sums[2]);
}  // namespace avx2
namespace neon {  // aarch64 only (act_quant_neon.cc)
float BlockAmax(const float* x);
void QuantizeBlock(const float* x, float id, int8_t* q, int sums[2]);
}  // namespace neon

}  // namespace tenzro::runtime
