// NEON steps of QuantizeActs (act_quant_internal.h), aarch64 baseline.
// Bit-identical to avx2:: and scalar::: the same f32 multiply per value, max
// (exact in any order; FMAXNM ignores NaN as the AVX2 max_ps operand order
// does), clamp to +-127 and round half to even (FCVTNS, which also maps NaN
// to 0, as the AVX2 ordered-compare mask does).
#include <arm_neon.h>

#include "runtime/act_quant_internal.h"

namespace tenzro::runtime::neon {

float BlockAmax(const float* x) {
  float32x4_t m = vdupq_n_f32(0.0f);
  for (int i = 0; i < 32; i += 4) m = vmaxnmq_f32(m, vabsq_f32(vld1q_f32(x + i)));
  return vmaxnmvq_f32(m);
}

void QuantizeBlock(const float* x, float id, int8_t* q, int sums[2]) {
  const float32x4_t vid = vdupq_n_f32(id);
  const float32x4_t lo = vdupq_n_f32(-127.0f), hi = vdupq_n_f32(127.0f);
  int32x4_t v[8];
  for (int k = 0; k < 8; ++k) {
    const float32x4_t r = vmulq_f32(vld1q_f32(x + 4 * k), vid);
    v[k] = vcvtnq_s32_f32(vminq_f32(vmaxq_f32(r, lo), hi));  // NaN stays NaN through min/max, then 0
  }
  for (int h = 0; h < 2; ++h) {
    const int32x4_t* w = v + 4 * h;
    const int16x8_t a = vcombine_s16(vmovn_s32(w[0]), vmovn_s32(w[1]));
    const int16x8_t b = vcombine_s16(vmovn_s32(w[2]), vmovn_s32(w[3]));
    vst1q_s8(q + 16 * h, vcombine_s8(vmovn_s16(a), vmovn_s16(b)));
    sums[h] = vaddvq_s32(vaddq_s32(vaddq_s32(w[0], w[1]), vaddq_s32(w[2], w[3])));
  }
}

}  // namespace tenzro::runtime::neon
