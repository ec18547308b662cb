// AVX2 steps of QuantizeActs (act_quant_internal.h); compiled with -mavx2.
#include <immintrin.h>

#include "runtime/act_quant_internal.h"

namespace tenzro::runtime::avx2 {

float BlockAmax(const float* x) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 m = _mm256_setzero_ps();
  for (int i = 0; i < 32; i += 8)  // max_ps(a, m) returns m when a is NaN
    m = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + i), abs_mask), m);
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_movehdup_ps(h));
  return _mm_cvtss_f32(h);
}

void QuantizeBlock(const float* x, float id, int8_t* q, int sums[2]) {
  const __m256 vid = _mm256_set1_ps(id);
  const __m256 lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
  __m256i v[4];
  for (int k = 0; k < 4; ++k) {
    const __m256 r = _mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), vid);
    const __m256 ord = _mm256_cmp_ps(r, r, _CMP_ORD_Q);
    const __m256 c = _mm256_min_ps(_mm256_max_ps(r, lo), hi);
    const __m256 rn = _mm256_round_ps(c, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    v[k] = _mm256_and_si256(_mm256_cvttps_epi32(rn), _mm256_castps_si256(ord));
  }
  const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3]));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q),
                      _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
  for (int h = 0; h < 2; ++h) {
    const __m256i s = _mm256_add_epi32(v[2 * h], v[2 * h + 1]);
    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    t = _mm_add_epi32(t, _mm_unpackhi_epi64(t, t));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x55));
    sums[h] = _mm_cvtsi128_si32(t);
  }
}

}  // namespace tenzro::runtime::avx2
