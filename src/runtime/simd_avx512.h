// tenzro runtime (internal): helpers shared by the *_avx512.cc kernel files.
// Include only from files compiled with the AVX-512 flags (F/BW/VL/DQ/VNNI,
// cmake/TenzroModule.cmake).
//
// These are copies of simd_avx2.h's helpers, not includes of it: an inline
// function compiled here may use AVX-512 encodings, and if the linker kept
// this copy for the AVX2 files' calls too, AVX2-only machines would fault.
// Everything here lives in an unnamed namespace, so each file keeps its own.
// The f32 helpers do exactly the operations of their AVX2 twins, in the same
// order: the AVX-512 kernels must give the AVX2 kernels' bits.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace tenzro::runtime::avx512 {
namespace {

// Hardware f16 -> f32 (exact).
inline float F16(uint16_t h) { return _cvtsh_ss(h); }

// The AVX2 HSum: ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)).
inline float HSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Lane j of the result = sum of the 8 int32 lanes of p[j] (exact integers,
// so the order of the adds does not matter).
inline __m256i Reduce8(const __m256i* p) {
  const __m256i h01 = _mm256_hadd_epi32(p[0], p[1]);
  const __m256i h23 = _mm256_hadd_epi32(p[2], p[3]);
  const __m256i h45 = _mm256_hadd_epi32(p[4], p[5]);
  const __m256i h67 = _mm256_hadd_epi32(p[6], p[7]);
  const __m256i a = _mm256_hadd_epi32(h01, h23);
  const __m256i b = _mm256_hadd_epi32(h45, h67);
  return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20), _mm256_permute2x128_si256(a, b, 0x31));
}

// Low 256 bits + high 256 bits of 16 int32 lanes.
inline __m256i Fold16(__m512i v) {
  return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}

// In-register 8x8 transpose: m[i][j] -> m[j][i].
inline void Transpose8(__m256* m) {
  const __m256 t0 = _mm256_unpacklo_ps(m[0], m[1]), t1 = _mm256_unpackhi_ps(m[0], m[1]);
  const __m256 t2 = _mm256_unpacklo_ps(m[2], m[3]), t3 = _mm256_unpackhi_ps(m[2], m[3]);
  const __m256 t4 = _mm256_unpacklo_ps(m[4], m[5]), t5 = _mm256_unpackhi_ps(m[4], m[5]);
  const __m256 t6 = _mm256_unpacklo_ps(m[6], m[7]), t7 = _mm256_unpackhi_ps(m[6], m[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  m[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  m[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  m[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  m[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  m[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  m[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  m[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  m[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

template <typename T>
inline T Min(T a, T b) { return b < a ? b : a; }

}  // namespace
}  // namespace tenzro::runtime::avx512
