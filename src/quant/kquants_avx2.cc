// AVX2 k-quant quantizers. The expensive part of quantize_row_q{4,5,6}_K_ref
// is the per-sub-block scale search (make_qkx2_quants / make_qx_quants): a
// sequence of candidate scales, each a sequential float reduction over the
// sub-block. Reductions cannot be reordered without changing the bytes, so
// instead of vectorizing inside a sub-block we run 8 sub-blocks side by side,
// one per lane: lane j performs exactly the float operations, in exactly the
// order, that the reference performs for sub-block j, and data-dependent
// branches become per-lane blends. The scalar tail (kquants_common.h) is
// shared with the reference.
#include <immintrin.h>

#include <cstring>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/kernels.h"
#include "quant/kquants_common.h"

namespace tenzro::quant::avx2 {
namespace {

inline __m256i NearestInt8(__m256 f) {
  const __m256 val = _mm256_add_ps(f, _mm256_set1_ps(12582912.f));
  const __m256i i = _mm256_castps_si256(val);
  return _mm256_sub_epi32(_mm256_and_si256(i, _mm256_set1_epi32(0x007fffff)), _mm256_set1_epi32(0x00400000));
}

inline __m256i Clamp(__m256i v, int lo, int hi) {
  return _mm256_max_epi32(_mm256_set1_epi32(lo), _mm256_min_epi32(_mm256_set1_epi32(hi), v));
}

inline __m256 Abs(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

inline bool Any(__m256 mask) { return _mm256_movemask_ps(mask) != 0; }

// make_qkx2_quants(32, nmax, ...) with use_mad false, for the 8 sub-blocks of
// one super-block at once (q4_K / q5_K weights: av_x + |x|).
// x: 256 inputs. Writes L[256] (natural order), scales[8], mins[8].
void SearchQkx2(const float* x, int nmax, float rmin, float rdelta, int nstep, uint8_t* L, float* scales,
                float* mins) {
  __m256 xt[32], w[32];
  const __m256i idx = _mm256_setr_epi32(0, 32, 64, 96, 128, 160, 192, 224);
  for (int i = 0; i < 32; ++i) xt[i] = _mm256_i32gather_ps(x + i, idx, 4);

  const __m256 zero = _mm256_setzero_ps();
  __m256 sum_x2 = zero;
  for (int i = 0; i < 32; ++i) sum_x2 = _mm256_add_ps(sum_x2, _mm256_mul_ps(xt[i], xt[i]));
  const __m256 av_x = _mm256_sqrt_ps(_mm256_div_ps(sum_x2, _mm256_set1_ps(32.f)));
  for (int i = 0; i < 32; ++i) w[i] = _mm256_add_ps(av_x, Abs(xt[i]));

  __m256 min = xt[0], max = xt[0];
  __m256 sum_w = w[0];
  __m256 sum_x = _mm256_mul_ps(sum_w, xt[0]);
  for (int i = 1; i < 32; ++i) {
    min = _mm256_min_ps(xt[i], min);  // (x < min) ? x : min
    max = _mm256_max_ps(xt[i], max);  // (x > max) ? x : max
    sum_w = _mm256_add_ps(sum_w, w[i]);
    sum_x = _mm256_add_ps(sum_x, _mm256_mul_ps(w[i], xt[i]));
  }
  min = _mm256_min_ps(zero, min);  // if (min > 0) min = 0
  const __m256 flat = _mm256_cmp_ps(max, min, _CMP_EQ_OQ);
  const __m256 min0 = min;

  __m256 iscale = _mm256_div_ps(_mm256_set1_ps(static_cast<float>(nmax)), _mm256_sub_ps(max, min));
  __m256 scale = _mm256_div_ps(_mm256_set1_ps(1.f), iscale);
  __m256 best_error = zero;
  __m256i Lv[32], La[32];
  for (int i = 0; i < 32; ++i) {
    const __m256i l = Clamp(NearestInt8(_mm256_mul_ps(iscale, _mm256_sub_ps(xt[i], min))), 0, nmax);
    Lv[i] = l;
    __m256 diff = _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(scale, _mm256_cvtepi32_ps(l)), min), xt[i]);
    diff = _mm256_mul_ps(diff, diff);
    best_error = _mm256_add_ps(best_error, _mm256_mul_ps(w[i], diff));
  }
  for (int is = 0; is <= nstep; ++is) {
    const float numer = rmin + rdelta * is + nmax;
    iscale = _mm256_div_ps(_mm256_set1_ps(numer), _mm256_sub_ps(max, min));
    __m256 sum_l = zero, sum_l2 = zero, sum_xl = zero;
    for (int i = 0; i < 32; ++i) {
      const __m256i l = Clamp(NearestInt8(_mm256_mul_ps(iscale, _mm256_sub_ps(xt[i], min))), 0, nmax);
      La[i] = l;
      const __m256 lf = _mm256_cvtepi32_ps(l);
      const __m256 wl = _mm256_mul_ps(w[i], lf);
      sum_l = _mm256_add_ps(sum_l, wl);
      sum_l2 = _mm256_add_ps(sum_l2, _mm256_mul_ps(wl, lf));
      sum_xl = _mm256_add_ps(sum_xl, _mm256_mul_ps(wl, xt[i]));
    }
    const __m256 D = _mm256_sub_ps(_mm256_mul_ps(sum_w, sum_l2), _mm256_mul_ps(sum_l, sum_l));
    const __m256 d_pos = _mm256_cmp_ps(D, zero, _CMP_GT_OQ);
    if (!Any(d_pos)) continue;
    __m256 this_scale = _mm256_div_ps(_mm256_sub_ps(_mm256_mul_ps(sum_w, sum_xl), _mm256_mul_ps(sum_x, sum_l)), D);
    __m256 this_min = _mm256_div_ps(_mm256_sub_ps(_mm256_mul_ps(sum_l2, sum_x), _mm256_mul_ps(sum_l, sum_xl)), D);
    const __m256 min_pos = _mm256_cmp_ps(this_min, zero, _CMP_GT_OQ);
    this_min = _mm256_blendv_ps(this_min, zero, min_pos);
    this_scale = _mm256_blendv_ps(this_scale, _mm256_div_ps(sum_xl, sum_l2), min_pos);
    __m256 cur_error = zero;
    for (int i = 0; i < 32; ++i) {
      __m256 diff = _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(this_scale, _mm256_cvtepi32_ps(La[i])), this_min), xt[i]);
      diff = _mm256_mul_ps(diff, diff);
      cur_error = _mm256_add_ps(cur_error, _mm256_mul_ps(w[i], diff));
    }
    const __m256 take = _mm256_and_ps(d_pos, _mm256_cmp_ps(cur_error, best_error, _CMP_LT_OQ));
    if (!Any(take)) continue;
    const __m256i takei = _mm256_castps_si256(take);
    for (int i = 0; i < 32; ++i) Lv[i] = _mm256_blendv_epi8(Lv[i], La[i], takei);
    best_error = _mm256_blendv_ps(best_error, cur_error, take);
    scale = _mm256_blendv_ps(scale, this_scale, take);
    min = _mm256_blendv_ps(min, this_min, take);
  }
  // Lanes whose sub-block is flat (max == min) returned early in ggml.
  scale = _mm256_blendv_ps(scale, zero, flat);
  min = _mm256_blendv_ps(min, min0, flat);
  const __m256 the_min = _mm256_xor_ps(min, _mm256_set1_ps(-0.0f));
  _mm256_storeu_ps(scales, scale);
  _mm256_storeu_ps(mins, the_min);
  const __m256i flati = _mm256_castps_si256(flat);
  alignas(32) int32_t lanes[8];
  for (int i = 0; i < 32; ++i) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), _mm256_andnot_si256(flati, Lv[i]));
    for (int j = 0; j < 8; ++j) L[32 * j + i] = static_cast<uint8_t>(lanes[j]);
  }
}

// make_qx_quants(16, 32, x, L, rmse_type 1, NULL) for 8 sub-blocks of 16 at
// once: lane j handles x[16*j .. 16*j+15]. Writes L[128] and scales[8].
void SearchQx(const float* x, int8_t* L, float* scales) {
  constexpr int nmax = 32;
  __m256 xt[16], xw[16];  // xw = w*x with w = x*x, as the reference's (w*x[i])*l
  const __m256i idx = _mm256_setr_epi32(0, 16, 32, 48, 64, 80, 96, 112);
  for (int i = 0; i < 16; ++i) xt[i] = _mm256_i32gather_ps(x + i, idx, 4);

  const __m256 zero = _mm256_setzero_ps();
  __m256 max = zero, amax = zero;
  for (int i = 0; i < 16; ++i) {
    const __m256 ax = Abs(xt[i]);
    const __m256 gt = _mm256_cmp_ps(ax, amax, _CMP_GT_OQ);
    amax = _mm256_blendv_ps(amax, ax, gt);
    max = _mm256_blendv_ps(max, xt[i], gt);
  }
  const __m256 tiny = _mm256_cmp_ps(amax, _mm256_set1_ps(1e-15f), _CMP_LT_OQ);
  __m256 w[16];
  for (int i = 0; i < 16; ++i) {
    w[i] = _mm256_mul_ps(xt[i], xt[i]);
    xw[i] = _mm256_mul_ps(w[i], xt[i]);
  }
  __m256 iscale = _mm256_div_ps(_mm256_set1_ps(static_cast<float>(-nmax)), max);
  __m256 sumlx = zero, suml2 = zero;
  __m256i Lv[16], La[16];
  for (int i = 0; i < 16; ++i) {
    const __m256i l = Clamp(NearestInt8(_mm256_mul_ps(iscale, xt[i])), -nmax, nmax - 1);
    Lv[i] = _mm256_add_epi32(l, _mm256_set1_epi32(nmax));
    const __m256 lf = _mm256_cvtepi32_ps(l);
    sumlx = _mm256_add_ps(sumlx, _mm256_mul_ps(xw[i], lf));
    suml2 = _mm256_add_ps(suml2, _mm256_mul_ps(_mm256_mul_ps(w[i], lf), lf));
  }
  // suml2 ? sumlx/suml2 : 0 (NaN counts as true)
  __m256 scale = _mm256_and_ps(_mm256_div_ps(sumlx, suml2), _mm256_cmp_ps(suml2, zero, _CMP_NEQ_UQ));
  __m256 best = _mm256_mul_ps(scale, sumlx);
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    const float numer = -(nmax + 0.1f * is);
    iscale = _mm256_div_ps(_mm256_set1_ps(numer), max);
    sumlx = zero;
    suml2 = zero;
    for (int i = 0; i < 16; ++i) {
      const __m256i l = Clamp(NearestInt8(_mm256_mul_ps(iscale, xt[i])), -nmax, nmax - 1);
      La[i] = l;
      const __m256 lf = _mm256_cvtepi32_ps(l);
      sumlx = _mm256_add_ps(sumlx, _mm256_mul_ps(xw[i], lf));
      suml2 = _mm256_add_ps(suml2, _mm256_mul_ps(_mm256_mul_ps(w[i], lf), lf));
    }
    const __m256 take = _mm256_and_ps(_mm256_cmp_ps(suml2, zero, _CMP_GT_OQ),
                                      _mm256_cmp_ps(_mm256_mul_ps(sumlx, sumlx), _mm256_mul_ps(best, suml2), _CMP_GT_OQ));
    if (!Any(take)) continue;
    const __m256i takei = _mm256_castps_si256(take);
    for (int i = 0; i < 16; ++i) Lv[i] = _mm256_blendv_epi8(Lv[i], _mm256_add_epi32(La[i], _mm256_set1_epi32(nmax)), takei);
    const __m256 new_scale = _mm256_div_ps(sumlx, suml2);
    scale = _mm256_blendv_ps(scale, new_scale, take);
    best = _mm256_blendv_ps(best, _mm256_mul_ps(new_scale, sumlx), take);
  }
  scale = _mm256_blendv_ps(scale, zero, tiny);
  _mm256_storeu_ps(scales, scale);
  const __m256i tinyi = _mm256_castps_si256(tiny);
  alignas(32) int32_t lanes[8];
  for (int i = 0; i < 16; ++i) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), _mm256_andnot_si256(tinyi, Lv[i]));
    for (int j = 0; j < 8; ++j) L[16 * j + i] = static_cast<int8_t>(lanes[j]);
  }
}

}  // namespace

void QuantizeRowQ4_K(const float* x, void* vy, int64_t k) {
  auto* y = static_cast<block_q4_K*>(vy);
  const int64_t nb = k / QK_K;
  uint8_t L[QK_K];
  float mins[QK_K / 32];
  float scales[QK_K / 32];
  for (int64_t i = 0; i < nb; i++, x += QK_K) {
    SearchQkx2(x, 15, -1.f, 0.1f, 20, L, scales, mins);
    FinishQ4_K(x, scales, mins, L, &y[i]);
  }
}

void QuantizeRowQ5_K(const float* x, void* vy, int64_t k) {
  auto* y = static_cast<block_q5_K*>(vy);
  const int64_t nb = k / QK_K;
  uint8_t L[QK_K];
  float mins[QK_K / 32];
  float scales[QK_K / 32];
  for (int64_t i = 0; i < nb; i++, x += QK_K) {
    SearchQkx2(x, 31, -0.5f, 0.1f, 15, L, scales, mins);
    FinishQ5_K(x, scales, mins, L, &y[i]);
  }
}

void QuantizeRowQ6_K(const float* x, void* vy, int64_t k) {
  auto* y = static_cast<block_q6_K*>(vy);
  const int64_t nb = k / QK_K;
  int8_t L[QK_K];
  float scales[QK_K / 16];
  for (int64_t i = 0; i < nb; i++, x += QK_K) {
    SearchQx(x, L, scales);
    SearchQx(x + 128, L + 128, scales + 8);
    FinishQ6_K(x, scales, L, &y[i]);
  }
}

}  // namespace tenzro::quant::avx2
