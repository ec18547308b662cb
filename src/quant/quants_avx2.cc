// AVX2 (+F16C) codecs for the plain float types, the 32-element block types
// and the k-quant dequantizers. Bit-identical to quants_ref.cc /
// kquants_ref.cc: conversions are exact (F16C, integer ops) and every float
// product/sum is the reference's, lane by lane, with no FMA contraction.
// Blocks holding NaN or infinity fall back to the reference code, whose
// results there depend on evaluation order.
#include <immintrin.h>

#include <cstring>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/kquants_common.h"
#include "quant/quantize_kernels.h"

namespace tenzro::quant::avx2 {
namespace {

inline bool AllFinite(__m256 v) {
  const __m256 abs = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
  const __m256 ok = _mm256_cmp_ps(abs, _mm256_set1_ps(INFINITY), _CMP_LT_OQ);
  return _mm256_movemask_ps(ok) == 0xFF;
}

// 8 int8 -> 8 floats.
inline __m256 I8ToF32(__m128i bytes) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes)); }

// Writes 32 floats s*q[i] for 32 int8 q (one 256-bit register).
inline void StoreScaled32(__m256i q, __m256 s, float* y) {
  const __m128i lo = _mm256_castsi256_si128(q);
  const __m128i hi = _mm256_extracti128_si256(q, 1);
  _mm256_storeu_ps(y + 0, _mm256_mul_ps(I8ToF32(lo), s));
  _mm256_storeu_ps(y + 8, _mm256_mul_ps(I8ToF32(_mm_srli_si128(lo, 8)), s));
  _mm256_storeu_ps(y + 16, _mm256_mul_ps(I8ToF32(hi), s));
  _mm256_storeu_ps(y + 24, _mm256_mul_ps(I8ToF32(_mm_srli_si128(hi, 8)), s));
}

// Writes 32 floats d*q[i] - m for 32 uint8 q (values < 128).
inline void StoreAffine32(__m256i q, __m256 d, __m256 m, float* y) {
  const __m128i lo = _mm256_castsi256_si128(q);
  const __m128i hi = _mm256_extracti128_si256(q, 1);
  _mm256_storeu_ps(y + 0, _mm256_sub_ps(_mm256_mul_ps(d, I8ToF32(lo)), m));
  _mm256_storeu_ps(y + 8, _mm256_sub_ps(_mm256_mul_ps(d, I8ToF32(_mm_srli_si128(lo, 8))), m));
  _mm256_storeu_ps(y + 16, _mm256_sub_ps(_mm256_mul_ps(d, I8ToF32(hi)), m));
  _mm256_storeu_ps(y + 24, _mm256_sub_ps(_mm256_mul_ps(d, I8ToF32(_mm_srli_si128(hi, 8))), m));
}

inline __m256i Load32(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

}  // namespace

void QuantizeRowF16(const float* x, void* vy, int64_t n) {
  auto* y = static_cast<uint16_t*>(vy);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0) {
      ref::QuantizeRowF16(x + i, y + i, 8);  // NaN: ggml writes sign|0x7E00
      continue;
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  ref::QuantizeRowF16(x + i, y + i, n - i);
}

void DequantizeRowF16(const void* vx, float* y, int64_t n) {
  const auto* x = static_cast<const uint16_t*>(vx);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  ref::DequantizeRowF16(x + i, y + i, n - i);
}

void QuantizeRowBf16(const float* x, void* vy, int64_t n) {
  auto* y = static_cast<uint16_t*>(vy);
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  const __m256i inf = _mm256_set1_epi32(0x7f800000);
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i round = _mm256_set1_epi32(0x7fff);
  const __m256i quiet = _mm256_set1_epi32(64);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i out[2];
    for (int h = 0; h < 2; ++h) {
      const __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 8 * h));
      const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
      const __m256i rounded =
          _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(round, _mm256_and_si256(_mm256_srli_epi32(u, 16), one))), 16);
      const __m256i quieted = _mm256_or_si256(_mm256_srli_epi32(u, 16), quiet);
      out[h] = _mm256_blendv_epi8(rounded, quieted, nan);
    }
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(out[0], out[1]), 0xD8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), packed);
  }
  ref::QuantizeRowBf16(x + i, y + i, n - i);
}

void DequantizeRowBf16(const void* vx, float* y, int64_t n) {
  const auto* x = static_cast<const uint16_t*>(vx);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), _mm256_slli_epi32(h, 16));
  }
  ref::DequantizeRowBf16(x + i, y + i, n - i);
}

void QuantizeRowQ8_0(const float* x, void* vy, int64_t k) {
  auto* y = static_cast<block_q8_0*>(vy);
  const int64_t nb = k / QK8_0;
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 half = _mm256_set1_ps(0.5f);
  const __m256 one = _mm256_set1_ps(1.0f);
  for (int64_t i = 0; i < nb; i++, x += QK8_0) {
    __m256 v[4];
    for (int j = 0; j < 4; ++j) v[j] = _mm256_loadu_ps(x + 8 * j);
    if (!AllFinite(v[0]) || !AllFinite(v[1]) || !AllFinite(v[2]) || !AllFinite(v[3])) {
      ref::QuantizeRowQ8_0(x, &y[i], QK8_0);
      continue;
    }
    // Without NaN, max is order-independent.
    __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
                             _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4);
    const float d = amax / ((1 << 7) - 1);
    const float id = d ? 1.0f / d : 0.0f;
    y[i].d = Fp32ToFp16(d);
    const __m256 vid = _mm256_set1_ps(id);
    __m256i q[4];
    for (int j = 0; j < 4; ++j) {
      // roundf: truncate, then step away from zero when the dropped part is
      // >= 0.5 (x - trunc(x) is exact).
      const __m256 x0 = _mm256_mul_ps(v[j], vid);
      const __m256 t = _mm256_round_ps(x0, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
      const __m256 frac = _mm256_andnot_ps(sign, _mm256_sub_ps(x0, t));
      const __m256 step = _mm256_or_ps(_mm256_and_ps(x0, sign), one);
      const __m256 r = _mm256_add_ps(t, _mm256_and_ps(step, _mm256_cmp_ps(frac, half, _CMP_GE_OQ)));
      // float -> int8 as C does it on x86 (cvttss2si, keep the low byte):
      // subnormal blocks make id infinite and x0 +-inf or NaN -> 0x80000000.
      q[j] = _mm256_and_si256(_mm256_cvttps_epi32(r), _mm256_set1_epi32(0xFF));
    }
    const __m256i p16 = _mm256_packs_epi32(q[0], q[1]);  // 0..255: no saturation
    const __m256i p16b = _mm256_packs_epi32(q[2], q[3]);
    const __m256i p8 = _mm256_packus_epi16(p16, p16b);
    const __m256i ordered = _mm256_permutevar8x32_epi32(p8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[i].qs), ordered);
  }
}

void DequantizeRowQ8_0(const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const block_q8_0*>(vx);
  const int64_t nb = k / QK8_0;
  for (int64_t i = 0; i < nb; i++, y += QK8_0) {
    const __m256 d = _mm256_set1_ps(Fp16ToFp32(x[i].d));
    StoreScaled32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qs)), d, y);
  }
}

void DequantizeRowQ4_0(const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const block_q4_0*>(vx);
  const int64_t nb = k / QK4_0;
  const __m128i low = _mm_set1_epi8(0x0F);
  const __m128i eight = _mm_set1_epi8(8);
  for (int64_t i = 0; i < nb; i++, y += QK4_0) {
    const __m256 d = _mm256_set1_ps(Fp16ToFp32(x[i].d));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs));
    const __m128i lo = _mm_sub_epi8(_mm_and_si128(b, low), eight);
    const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(b, 4), low), eight);
    StoreScaled32(_mm256_set_m128i(hi, lo), d, y);
  }
}

void DequantizeRowMxfp4(const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const block_mxfp4*>(vx);
  const int64_t nb = k / QK_MXFP4;
  const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kValuesMxfp4));
  const __m128i low = _mm_set1_epi8(0x0F);
  for (int64_t i = 0; i < nb; i++, y += QK_MXFP4) {
    const __m256 d = _mm256_set1_ps(E8M0ToFp32Half(x[i].e));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs));
    const __m128i lo = _mm_shuffle_epi8(table, _mm_and_si128(b, low));
    const __m128i hi = _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(b, 4), low));
    StoreScaled32(_mm256_set_m128i(hi, lo), d, y);
  }
}

void DequantizeRowQ4_K(const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const block_q4_K*>(vx);
  const int64_t nb = k / QK_K;
  const __m256i low = _mm256_set1_epi8(0x0F);
  for (int64_t i = 0; i < nb; i++) {
    const uint8_t* q = x[i].qs;
    const float d = Fp16ToFp32(x[i].d);
    const float min = Fp16ToFp32(x[i].dmin);
    uint8_t sc, m;
    for (int j = 0, is = 0; j < QK_K; j += 64, is += 2, q += 32, y += 64) {
      GetScaleMinK4(is + 0, x[i].scales, &sc, &m);
      const __m256 d1 = _mm256_set1_ps(d * sc), m1 = _mm256_set1_ps(min * m);
      GetScaleMinK4(is + 1, x[i].scales, &sc, &m);
      const __m256 d2 = _mm256_set1_ps(d * sc), m2 = _mm256_set1_ps(min * m);
      const __m256i b = Load32(q);
      StoreAffine32(_mm256_and_si256(b, low), d1, m1, y);
      StoreAffine32(_mm256_and_si256(_mm256_srli_epi16(b, 4), low), d2, m2, y + 32);
    }
  }
}

void DequantizeRowQ5_K(const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const block_q5_K*>(vx);
  const int64_t nb = k / QK_K;
  const __m256i low = _mm256_set1_epi8(0x0F);
  const __m256i sixteen = _mm256_set1_epi8(16);
  for (int64_t i = 0; i < nb; i++) {
    const uint8_t* ql = x[i].qs;
    const __m256i qh = Load32(x[i].qh);
    const float d = Fp16ToFp32(x[i].d);
    const float min = Fp16ToFp32(x[i].dmin);
    uint8_t sc, m;
    for (int j = 0, is = 0; j < QK_K; j += 64, is += 2, ql += 32, y += 64) {
      GetScaleMinK4(is + 0, x[i].scales, &sc, &m);
      const __m256 d1 = _mm256_set1_ps(d * sc), m1 = _mm256_set1_ps(min * m);
      GetScaleMinK4(is + 1, x[i].scales, &sc, &m);
      const __m256 d2 = _mm256_set1_ps(d * sc), m2 = _mm256_set1_ps(min * m);
      const __m256i u1 = _mm256_set1_epi8(static_cast<char>(1 << is));
      const __m256i u2 = _mm256_set1_epi8(static_cast<char>(2 << is));
      const __m256i h1 = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, u1), u1), sixteen);
      const __m256i h2 = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, u2), u2), sixteen);
      const __m256i b = Load32(ql);
      StoreAffine32(_mm256_add_epi8(_mm256_and_si256(b, low), h1), d1, m1, y);
      StoreAffine32(_mm256_add_epi8(_mm256_and_si256(_mm256_srli_epi16(b, 4), low), h2), d2, m2, y + 32);
    }
  }
}

void DequantizeRowQ6_K(const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const block_q6_K*>(vx);
  const int64_t nb = k / QK_K;
  const __m256i low = _mm256_set1_epi8(0x0F);
  const __m256i three = _mm256_set1_epi8(3);
  const __m256i bias = _mm256_set1_epi8(32);
  for (int64_t i = 0; i < nb; i++) {
    const float d = Fp16ToFp32(x[i].d);
    const uint8_t* ql = x[i].ql;
    const uint8_t* qh = x[i].qh;
    const int8_t* sc = x[i].scales;
    for (int n = 0; n < QK_K; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
      const __m256i a = Load32(ql), b = Load32(ql + 32), h = Load32(qh);
      __m256i q[4];
      q[0] = _mm256_or_si256(_mm256_and_si256(a, low), _mm256_slli_epi16(_mm256_and_si256(h, three), 4));
      q[1] = _mm256_or_si256(_mm256_and_si256(b, low),
                             _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), three), 4));
      q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), low),
                             _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), three), 4));
      q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b, 4), low),
                             _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), three), 4));
      for (int g = 0; g < 4; ++g) {
        const __m256i v = _mm256_sub_epi8(q[g], bias);
        // d * sc[is] * q: the product d*sc is rounded first, as in ggml.
        const __m256 s0 = _mm256_set1_ps(d * sc[2 * g + 0]);
        const __m256 s1 = _mm256_set1_ps(d * sc[2 * g + 1]);
        const __m128i lo = _mm256_castsi256_si128(v), hi = _mm256_extracti128_si256(v, 1);
        float* out = y + 32 * g;
        _mm256_storeu_ps(out + 0, _mm256_mul_ps(s0, I8ToF32(lo)));
        _mm256_storeu_ps(out + 8, _mm256_mul_ps(s0, I8ToF32(_mm_srli_si128(lo, 8))));
        _mm256_storeu_ps(out + 16, _mm256_mul_ps(s1, I8ToF32(hi)));
        _mm256_storeu_ps(out + 24, _mm256_mul_ps(s1, I8ToF32(_mm_srli_si128(hi, 8))));
      }
    }
  }
}

}  // namespace tenzro::quant::avx2
