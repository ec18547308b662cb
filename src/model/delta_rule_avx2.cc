// AVX2 + FMA delta-rule step (delta_rule.h). Column tiles of 32 values keep
// the accumulators in four registers while the d_k rows stream through.
#include <immintrin.h>

#include "model/delta_rule.h"

namespace tenzro::model {

void DeltaRuleStepAvx2(float* S, const float* q, const float* k, const float* v, float decay, float beta, int d_k,
                       int d_v, float* o) {
  alignas(32) float delta[kMaxDeltaDv];
  const __m256 dec = _mm256_set1_ps(decay);
  // Pass 1: decay S and read m = S^T k, then delta = beta (v - m).
  for (int j = 0; j < d_v; j += 32) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int i = 0; i < d_k; ++i) {
      float* row = S + static_cast<int64_t>(i) * d_v + j;
      const __m256 ki = _mm256_set1_ps(k[i]);
      __m256 r0 = _mm256_mul_ps(_mm256_loadu_ps(row), dec);
      __m256 r1 = _mm256_mul_ps(_mm256_loadu_ps(row + 8), dec);
      __m256 r2 = _mm256_mul_ps(_mm256_loadu_ps(row + 16), dec);
      __m256 r3 = _mm256_mul_ps(_mm256_loadu_ps(row + 24), dec);
      _mm256_storeu_ps(row, r0);
      _mm256_storeu_ps(row + 8, r1);
      _mm256_storeu_ps(row + 16, r2);
      _mm256_storeu_ps(row + 24, r3);
      a0 = _mm256_fmadd_ps(r0, ki, a0);
      a1 = _mm256_fmadd_ps(r1, ki, a1);
      a2 = _mm256_fmadd_ps(r2, ki, a2);
      a3 = _mm256_fmadd_ps(r3, ki, a3);
    }
    const __m256 b = _mm256_set1_ps(beta);
    _mm256_store_ps(delta + j, _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(v + j), a0), b));
    _mm256_store_ps(delta + j + 8, _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(v + j + 8), a1), b));
    _mm256_store_ps(delta + j + 16, _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(v + j + 16), a2), b));
    _mm256_store_ps(delta + j + 24, _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(v + j + 24), a3), b));
  }
  // Pass 2: S += k delta^T and o = S^T q.
  for (int j = 0; j < d_v; j += 32) {
    const __m256 d0 = _mm256_load_ps(delta + j), d1 = _mm256_load_ps(delta + j + 8);
    const __m256 d2 = _mm256_load_ps(delta + j + 16), d3 = _mm256_load_ps(delta + j + 24);
    __m256 o0 = _mm256_setzero_ps(), o1 = o0, o2 = o0, o3 = o0;
    for (int i = 0; i < d_k; ++i) {
      float* row = S + static_cast<int64_t>(i) * d_v + j;
      const __m256 ki = _mm256_set1_ps(k[i]), qi = _mm256_set1_ps(q[i]);
      __m256 r0 = _mm256_fmadd_ps(ki, d0, _mm256_loadu_ps(row));
      __m256 r1 = _mm256_fmadd_ps(ki, d1, _mm256_loadu_ps(row + 8));
      __m256 r2 = _mm256_fmadd_ps(ki, d2, _mm256_loadu_ps(row + 16));
      __m256 r3 = _mm256_fmadd_ps(ki, d3, _mm256_loadu_ps(row + 24));
      _mm256_storeu_ps(row, r0);
      _mm256_storeu_ps(row + 8, r1);
      _mm256_storeu_ps(row + 16, r2);
      _mm256_storeu_ps(row + 24, r3);
      o0 = _mm256_fmadd_ps(r0, qi, o0);
      o1 = _mm256_fmadd_ps(r1, qi, o1);
      o2 = _mm256_fmadd_ps(r2, qi, o2);
      o3 = _mm256_fmadd_ps(r3, qi, o3);
    }
    _mm256_storeu_ps(o + j, o0);
    _mm256_storeu_ps(o + j + 8, o1);
    _mm256_storeu_ps(o + j + 16, o2);
    _mm256_storeu_ps(o + j + 24, o3);
  }
}

}  // namespace tenzro::model
