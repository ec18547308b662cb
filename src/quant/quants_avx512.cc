// AVX-512 dequantizers for the hottest decode paths (f16, bf16, q8_0, q4_K).
// Same arithmetic as quants_avx2.cc on 16 lanes: exact conversions and the
// reference's multiply-then-subtract, no FMA. Chosen at run time only when
// core/cpu.h reports the AVX-512 set; the golden tests run it when the CPU
// has it (the development machine does not, so keep this file small).
// GCC 12 warns inside its own avx512fintrin.h (_mm512_undefined_*).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/kquants_common.h"
#include "quant/quantize_kernels.h"

namespace tenzro::quant::avx512 {
namespace {

inline __m512 U8ToF32(__m128i bytes) { return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes)); }

}  // namespace

void DequantizeRowF16(const void* vx, float* y, int64_t n) {
  const auto* x = static_cast<const uint16_t*>(vx);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i))));
  ref::DequantizeRowF16(x + i, y + i, n - i);
}

void DequantizeRowBf16(const void* vx, float* y, int64_t n) {
  const auto* x = static_cast<const uint16_t*>(vx);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i h = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)));
    _mm512_storeu_si512(y + i, _mm512_slli_epi32(h, 16));
  }
  ref::DequantizeRowBf16(x + i, y + i, n - i);
}

void DequantizeRowQ8_0(const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const block_q8_0*>(vx);
  const int64_t nb = k / QK8_0;
  for (int64_t i = 0; i < nb; i++, y += QK8_0) {
    const __m512 d = _mm512_set1_ps(Fp16ToFp32(x[i].d));
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs + 16));
    _mm512_storeu_ps(y + 0, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(a)), d));
    _mm512_storeu_ps(y + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b)), d));
  }
}

void DequantizeRowQ4_K(const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const block_q4_K*>(vx);
  const int64_t nb = k / QK_K;
  const __m128i low = _mm_set1_epi8(0x0F);
  for (int64_t i = 0; i < nb; i++) {
    const uint8_t* q = x[i].qs;
    const float d = Fp16ToFp32(x[i].d);
    const float min = Fp16ToFp32(x[i].dmin);
    uint8_t sc, m;
    for (int j = 0, is = 0; j < QK_K; j += 64, is += 2, q += 32, y += 64) {
      GetScaleMinK4(is + 0, x[i].scales, &sc, &m);
      const __m512 d1 = _mm512_set1_ps(d * sc), m1 = _mm512_set1_ps(min * m);
      GetScaleMinK4(is + 1, x[i].scales, &sc, &m);
      const __m512 d2 = _mm512_set1_ps(d * sc), m2 = _mm512_set1_ps(min * m);
      for (int h = 0; h < 2; ++h) {
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16 * h));
        const __m128i lo = _mm_and_si128(b, low);
        const __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), low);
        _mm512_storeu_ps(y + 16 * h, _mm512_sub_ps(_mm512_mul_ps(d1, U8ToF32(lo)), m1));
        _mm512_storeu_ps(y + 32 + 16 * h, _mm512_sub_ps(_mm512_mul_ps(d2, U8ToF32(hi)), m2));
      }
    }
  }
}

}  // namespace tenzro::quant::avx512
