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
#include "quant/kquants_common.h"
#include "quant/quantize_kernels.h"

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
// G super-blocks at once (q4_K / q5_K weights: av_x + |x|). Lane j of group g
// is sub-block j of super-block x[g]; the G groups are independent and are
// interleaved only to give the core independent dependency chains.
// Writes L[g][256] (natural order), scales[g][8], mins[g][8].
template <int G>
void SearchQkx2(const float* const* x, int nmax, float rmin, float rdelta, int nstep, uint8_t (*L)[QK_K],
                float (*scales)[8], float (*mins)[8]) {
  __m256 xt[32][G], w[32][G];
  const __m256i idx = _mm256_setr_epi32(0, 32, 64, 96, 128, 160, 192, 224);
  for (int i = 0; i < 32; ++i)
    for (int g = 0; g < G; ++g) xt[i][g] = _mm256_i32gather_ps(x[g] + i, idx, 4);

  const __m256 zero = _mm256_setzero_ps();
  __m256 min[G], max[G], sum_w[G], sum_x[G], flat[G], min0[G], scale[G], best_error[G];
  for (int g = 0; g < G; ++g) {
    __m256 sum_x2 = zero;
    for (int i = 0; i < 32; ++i) sum_x2 = _mm256_add_ps(sum_x2, _mm256_mul_ps(xt[i][g], xt[i][g]));
    const __m256 av_x = _mm256_sqrt_ps(_mm256_div_ps(sum_x2, _mm256_set1_ps(32.f)));
    for (int i = 0; i < 32; ++i) w[i][g] = _mm256_add_ps(av_x, Abs(xt[i][g]));
    min[g] = xt[0][g];
    max[g] = xt[0][g];
    sum_w[g] = w[0][g];
    sum_x[g] = _mm256_mul_ps(sum_w[g], xt[0][g]);
    for (int i = 1; i < 32; ++i) {
      min[g] = _mm256_min_ps(xt[i][g], min[g]);  // (x < min) ? x : min
      max[g] = _mm256_max_ps(xt[i][g], max[g]);  // (x > max) ? x : max
      sum_w[g] = _mm256_add_ps(sum_w[g], w[i][g]);
      sum_x[g] = _mm256_add_ps(sum_x[g], _mm256_mul_ps(w[i][g], xt[i][g]));
    }
    min[g] = _mm256_min_ps(zero, min[g]);  // if (min > 0) min = 0
    flat[g] = _mm256_cmp_ps(max[g], min[g], _CMP_EQ_OQ);
    min0[g] = min[g];
  }

  __m256i Lv[32][G], La[32][G];
  for (int g = 0; g < G; ++g) {
    const __m256 iscale = _mm256_div_ps(_mm256_set1_ps(static_cast<float>(nmax)), _mm256_sub_ps(max[g], min[g]));
    scale[g] = _mm256_div_ps(_mm256_set1_ps(1.f), iscale);
    best_error[g] = zero;
    for (int i = 0; i < 32; ++i) {
      const __m256i l = Clamp(NearestInt8(_mm256_mul_ps(iscale, _mm256_sub_ps(xt[i][g], min[g]))), 0, nmax);
      Lv[i][g] = l;
      __m256 diff = _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(scale[g], _mm256_cvtepi32_ps(l)), min[g]), xt[i][g]);
      diff = _mm256_mul_ps(diff, diff);
      best_error[g] = _mm256_add_ps(best_error[g], _mm256_mul_ps(w[i][g], diff));
    }
  }
  for (int is = 0; is <= nstep; ++is) {
    const __m256 numer = _mm256_set1_ps(rmin + rdelta * is + nmax);
    __m256 iscale[G], sum_l[G], sum_l2[G], sum_xl[G];
    for (int g = 0; g < G; ++g) {
      iscale[g] = _mm256_div_ps(numer, _mm256_sub_ps(max[g], min[g]));
      sum_l[g] = sum_l2[g] = sum_xl[g] = zero;
    }
    for (int i = 0; i < 32; ++i) {
      for (int g = 0; g < G; ++g) {
        const __m256i l = Clamp(NearestInt8(_mm256_mul_ps(iscale[g], _mm256_sub_ps(xt[i][g], min[g]))), 0, nmax);
        La[i][g] = l;
        const __m256 lf = _mm256_cvtepi32_ps(l);
        const __m256 wl = _mm256_mul_ps(w[i][g], lf);
        sum_l[g] = _mm256_add_ps(sum_l[g], wl);
        sum_l2[g] = _mm256_add_ps(sum_l2[g], _mm256_mul_ps(wl, lf));
        sum_xl[g] = _mm256_add_ps(sum_xl[g], _mm256_mul_ps(wl, xt[i][g]));
      }
    }
    __m256 d_pos[G], this_scale[G], this_min[G], cur_error[G];
    bool any = false;
    for (int g = 0; g < G; ++g) {
      const __m256 D = _mm256_sub_ps(_mm256_mul_ps(sum_w[g], sum_l2[g]), _mm256_mul_ps(sum_l[g], sum_l[g]));
      d_pos[g] = _mm256_cmp_ps(D, zero, _CMP_GT_OQ);
      any |= Any(d_pos[g]);
      this_scale[g] = _mm256_div_ps(
          _mm256_sub_ps(_mm256_mul_ps(sum_w[g], sum_xl[g]), _mm256_mul_ps(sum_x[g], sum_l[g])), D);
      this_min[g] = _mm256_div_ps(
          _mm256_sub_ps(_mm256_mul_ps(sum_l2[g], sum_x[g]), _mm256_mul_ps(sum_l[g], sum_xl[g])), D);
      const __m256 min_pos = _mm256_cmp_ps(this_min[g], zero, _CMP_GT_OQ);
      this_min[g] = _mm256_blendv_ps(this_min[g], zero, min_pos);
      this_scale[g] = _mm256_blendv_ps(this_scale[g], _mm256_div_ps(sum_xl[g], sum_l2[g]), min_pos);
      cur_error[g] = zero;
    }
    if (!any) continue;
    for (int i = 0; i < 32; ++i) {
      for (int g = 0; g < G; ++g) {
        __m256 diff = _mm256_sub_ps(
            _mm256_add_ps(_mm256_mul_ps(this_scale[g], _mm256_cvtepi32_ps(La[i][g])), this_min[g]), xt[i][g]);
        diff = _mm256_mul_ps(diff, diff);
        cur_error[g] = _mm256_add_ps(cur_error[g], _mm256_mul_ps(w[i][g], diff));
      }
    }
    for (int g = 0; g < G; ++g) {
      const __m256 take = _mm256_and_ps(d_pos[g], _mm256_cmp_ps(cur_error[g], best_error[g], _CMP_LT_OQ));
      if (!Any(take)) continue;
      const __m256i takei = _mm256_castps_si256(take);
      for (int i = 0; i < 32; ++i) Lv[i][g] = _mm256_blendv_epi8(Lv[i][g], La[i][g], takei);
      best_error[g] = _mm256_blendv_ps(best_error[g], cur_error[g], take);
      scale[g] = _mm256_blendv_ps(scale[g], this_scale[g], take);
      min[g] = _mm256_blendv_ps(min[g], this_min[g], take);
    }
  }
  for (int g = 0; g < G; ++g) {
    // Lanes whose sub-block is flat (max == min) returned early in ggml.
    const __m256 sc = _mm256_blendv_ps(scale[g], zero, flat[g]);
    const __m256 mn = _mm256_blendv_ps(min[g], min0[g], flat[g]);
    _mm256_storeu_ps(scales[g], sc);
    _mm256_storeu_ps(mins[g], _mm256_xor_ps(mn, _mm256_set1_ps(-0.0f)));  // the_min = -min
    const __m256i flati = _mm256_castps_si256(flat[g]);
    alignas(32) int32_t lanes[8];
    for (int i = 0; i < 32; ++i) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), _mm256_andnot_si256(flati, Lv[i][g]));
      for (int j = 0; j < 8; ++j) L[g][32 * j + i] = static_cast<uint8_t>(lanes[j]);
    }
  }
}

// Quantizes a row of q4_K / q5_K super-blocks, two at a time.
template <typename Block, void (*Finish)(const float*, const float*, const float*, uint8_t*, Block*)>
void QuantizeRowQkx2(const float* x, Block* y, int64_t nb, int nmax, float rmin, float rdelta, int nstep) {
  uint8_t L[2][QK_K];
  float scales[2][8], mins[2][8];
  int64_t i = 0;
  for (; i + 2 <= nb; i += 2, x += 2 * QK_K) {
    const float* xs[2] = {x, x + QK_K};
    SearchQkx2<2>(xs, nmax, rmin, rdelta, nstep, L, scales, mins);
    Finish(x, scales[0], mins[0], L[0], &y[i]);
    Finish(x + QK_K, scales[1], mins[1], L[1], &y[i + 1]);
  }
  if (i < nb) {
    const float* xs[1] = {x};
    SearchQkx2<1>(xs, nmax, rmin, rdelta, nstep, L, scales, mins);
    Finish(x, scales[0], mins[0], L[0], &y[i]);
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
  QuantizeRowQkx2<block_q4_K, FinishQ4_K>(x, static_cast<block_q4_K*>(vy), k / QK_K, 15, -1.f, 0.1f, 20);
}

void QuantizeRowQ5_K(const float* x, void* vy, int64_t k) {
  QuantizeRowQkx2<block_q5_K, FinishQ5_K>(x, static_cast<block_q5_K*>(vy), k / QK_K, 31, -0.5f, 0.1f, 15);
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
