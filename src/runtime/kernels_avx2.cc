// AVX2 + FMA + F16C kernels (compiled with -mavx2 -mfma -mf16c; called only
// when core/cpu.h reports the AVX2 set).
//
// Quantized weights: each 32-value sub-block is an int8 x uint8 dot product
// (_mm256_maddubs_epi16, then _mm256_madd_epi16 to int32 lanes). The eight
// sub-block vectors of a 256-value super-block are reduced together
// (Reduce8: one int32 lane per sub-block), converted to float once and
// scaled by (weight scale x activation scale) per lane with one FMA.
// Register tile: one weight row x up to 4 tokens; the row's super-block is
// unpacked once and used for every token of the tile, and stays in L1 for the
// next tiles. Float weights: up to 4 rows x 4 tokens of f32 FMA accumulators.
#include <immintrin.h>

#include <cstring>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "runtime/kernels.h"

namespace tenzro::runtime::avx2 {
namespace {

using quant::GgmlType;
using quant::QK_K;

// Hardware f16 -> f32 (exact, same value as quant::Fp16ToFp32).
inline float F16(uint16_t h) { return _cvtsh_ss(h); }

inline float HSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Lane j of the result = sum of the 8 int32 lanes of p[j].
inline __m256i Reduce8(const __m256i* p) {
  const __m256i h01 = _mm256_hadd_epi32(p[0], p[1]);
  const __m256i h23 = _mm256_hadd_epi32(p[2], p[3]);
  const __m256i h45 = _mm256_hadd_epi32(p[4], p[5]);
  const __m256i h67 = _mm256_hadd_epi32(p[6], p[7]);
  const __m256i a = _mm256_hadd_epi32(h01, h23);
  const __m256i b = _mm256_hadd_epi32(h45, h67);
  return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20), _mm256_permute2x128_si256(a, b, 0x31));
}

// ---------------------------------------------------------------- floats

inline __m256 LoadF32(const uint8_t* p) { return _mm256_loadu_ps(reinterpret_cast<const float*>(p)); }
inline __m256 LoadF16(const uint8_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline __m256 LoadBf16(const uint8_t* p) {
  const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}
inline float ScalarF32(const uint8_t* p) { float v; std::memcpy(&v, p, 4); return v; }
inline float ScalarF16(const uint8_t* p) { uint16_t h; std::memcpy(&h, p, 2); return quant::Fp16ToFp32(h); }
inline float ScalarBf16(const uint8_t* p) { uint16_t h; std::memcpy(&h, p, 2); return quant::Bf16ToFp32(h); }

// R rows x T tokens; each (r, t) has one accumulator fed in k order, so the
// result does not depend on R or T.
template <int R, int T, int kElemBytes, __m256 (*Load)(const uint8_t*), float (*Scalar)(const uint8_t*)>
void FloatTile(const KernelArgs& a, int64_t r, int t0) {
  const int64_t n = a.w->row_len;
  const int64_t nv = n & ~int64_t{7};
  const uint64_t rb = a.row_bytes;
  const uint8_t* rows[R];
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i) rows[i] = a.w->data.data() + (r + i) * rb;
  const float* xs[T];
#pragma GCC unroll 8
  for (int j = 0; j < T; ++j) xs[j] = a.x + (t0 + j) * n;
  __m256 acc[R][T];
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) acc[i][j] = _mm256_setzero_ps();
  for (int64_t k = 0; k < nv; k += 8) {
    __m256 xv[T];
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) xv[j] = _mm256_loadu_ps(xs[j] + k);
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      const __m256 wv = Load(rows[i] + k * kElemBytes);
      #pragma GCC unroll 8
      for (int j = 0; j < T; ++j) acc[i][j] = _mm256_fmadd_ps(wv, xv[j], acc[i][j]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) {
      float tail = 0.0f;
      for (int64_t k = nv; k < n; ++k) tail += Scalar(rows[i] + k * kElemBytes) * xs[j][k];
      a.y[(t0 + j) * a.ldy + r + i] = HSum(acc[i][j]) + tail;
    }
}

template <int kElemBytes, __m256 (*Load)(const uint8_t*), float (*Scalar)(const uint8_t*)>
void FloatRows(const KernelArgs& a, int64_t r0, int64_t r1) {
  int t = 0;
  // One token: 4 independent rows hide the FMA latency. More: 2 rows x 4 tokens.
  for (; t + 4 <= a.n_tok; t += 4) {
    int64_t r = r0;
    for (; r + 2 <= r1; r += 2) FloatTile<2, 4, kElemBytes, Load, Scalar>(a, r, t);
    for (; r < r1; ++r) FloatTile<1, 4, kElemBytes, Load, Scalar>(a, r, t);
  }
  for (; t < a.n_tok; ++t) {
    int64_t r = r0;
    for (; r + 4 <= r1; r += 4) FloatTile<4, 1, kElemBytes, Load, Scalar>(a, r, t);
    for (; r < r1; ++r) FloatTile<1, 1, kElemBytes, Load, Scalar>(a, r, t);
  }
}

// ---------------------------------------------------------------- quantized

// Loops over rows and tiles of up to 4 tokens, calling Tile<T>(a, r, t0).
template <template <int> class Tile>
void QuantRows(const KernelArgs& a, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    int t = 0;
    for (; t + 4 <= a.n_tok; t += 4) Tile<4>::Run(a, r, t);
    switch (a.n_tok - t) {
      case 3: Tile<3>::Run(a, r, t); break;
      case 2: Tile<2>::Run(a, r, t); break;
      case 1: Tile<1>::Run(a, r, t); break;
      default: break;
    }
  }
}

// Per-token activation pointers of a tile, hoisted out of the block loops
// (the compiler cannot prove the scale scratch stores do not alias them).
template <int T>
struct TokenPtrs {
  const int8_t* q[T];
  const float* d[T];
  const float* dxs[T];
  const int16_t* s16[T];
  TokenPtrs(const QuantizedActs& a, int t0) {
    for (int j = 0; j < T; ++j) {
      q[j] = a.q(t0 + j);
      d[j] = a.scale(t0 + j);
      dxs[j] = a.scaled_sums(t0 + j);
      s16[j] = a.sums16(t0 + j);
    }
  }
};

// Unpacks the 6-bit scales and mins of a Q4_K / Q5_K block into sc[0..7],
// m[0..7] (ggml's get_scale_min_k4 for all eight sub-blocks at once).
inline void UnpackScalesK4(const uint8_t* scales, uint8_t out[16]) {
  uint32_t u[4];
  std::memcpy(u, scales, 12);
  const uint32_t kmask1 = 0x3f3f3f3f, kmask2 = 0x0f0f0f0f, kmask3 = 0x03030303;
  u[3] = ((u[2] >> 4) & kmask2) | (((u[1] >> 6) & kmask3) << 4);
  const uint32_t uaux = u[1] & kmask1;
  u[1] = (u[2] & kmask2) | (((u[0] >> 6) & kmask3) << 4);
  u[2] = uaux;
  u[0] &= kmask1;
  std::memcpy(out, u, 16);
}

// Shared tail of Q4_K / Q5_K: w[8] hold the unsigned sub-block values.
template <int T>
inline void KQuantMinTile(const __m256i* w, __m256 scv, __m256 mv, const TokenPtrs<T>& tp, int64_t i,
                          __m256* acc) {
  const __m256i ones = _mm256_set1_epi16(1);
#pragma GCC unroll 8
  for (int j = 0; j < T; ++j) {
    const int8_t* x = tp.q[j] + i * QK_K;
    __m256i p[8];
#pragma GCC unroll 8
    for (int s = 0; s < 8; ++s) {
      const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 32 * s));
      p[s] = _mm256_madd_epi16(_mm256_maddubs_epi16(w[s], xv), ones);
    }
    const __m256 sum = _mm256_cvtepi32_ps(Reduce8(p));
    const __m256 f = _mm256_mul_ps(scv, _mm256_loadu_ps(tp.d[j] + 8 * i));
    acc[j] = _mm256_fmadd_ps(sum, f, acc[j]);
    acc[j] = _mm256_fnmadd_ps(mv, _mm256_loadu_ps(tp.dxs[j] + 8 * i), acc[j]);
  }
}

template <int T>
struct Q4_KTile {
  static void Run(const KernelArgs& a, int64_t r, int t0) {
    const auto* b = reinterpret_cast<const quant::block_q4_K*>(a.w->data.data() + r * a.row_bytes);
    const int64_t nb = a.w->row_len / QK_K;
    const TokenPtrs<T> tp(*a.q, t0);
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc[T];
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) acc[j] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
      alignas(16) uint8_t sm[16];
      UnpackScalesK4(b[i].scales, sm);
      const __m128i smv = _mm_load_si128(reinterpret_cast<const __m128i*>(sm));
      const __m256 scv = _mm256_mul_ps(_mm256_set1_ps(F16(b[i].d)),
                                       _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(smv)));
      const __m256 mv = _mm256_mul_ps(_mm256_set1_ps(F16(b[i].dmin)),
                                      _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(smv, 8))));
      __m256i w[8];
      #pragma GCC unroll 8
      for (int s = 0; s < 4; ++s) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[i].qs + 32 * s));
        w[2 * s] = _mm256_and_si256(v, m4);
        w[2 * s + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
      }
      KQuantMinTile<T>(w, scv, mv, tp, i, acc);
    }
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) a.y[(t0 + j) * a.ldy + r] = HSum(acc[j]);
  }
};

template <int T>
struct Q5_KTile {
  static void Run(const KernelArgs& a, int64_t r, int t0) {
    const auto* b = reinterpret_cast<const quant::block_q5_K*>(a.w->data.data() + r * a.row_bytes);
    const int64_t nb = a.w->row_len / QK_K;
    const TokenPtrs<T> tp(*a.q, t0);
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i one = _mm256_set1_epi8(1);
    __m256 acc[T];
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) acc[j] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
      alignas(16) uint8_t sm[16];
      UnpackScalesK4(b[i].scales, sm);
      const __m128i smv = _mm_load_si128(reinterpret_cast<const __m128i*>(sm));
      const __m256 scv = _mm256_mul_ps(_mm256_set1_ps(F16(b[i].d)),
                                       _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(smv)));
      const __m256 mv = _mm256_mul_ps(_mm256_set1_ps(F16(b[i].dmin)),
                                      _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(smv, 8))));
      const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[i].qh));
      __m256i w[8];
      #pragma GCC unroll 8
      for (int s = 0; s < 4; ++s) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[i].qs + 32 * s));
        const __m256i h0 = _mm256_and_si256(_mm256_srli_epi16(hb, 2 * s), one);
        const __m256i h1 = _mm256_and_si256(_mm256_srli_epi16(hb, 2 * s + 1), one);
        w[2 * s] = _mm256_or_si256(_mm256_and_si256(v, m4), _mm256_slli_epi16(h0, 4));
        w[2 * s + 1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4), _mm256_slli_epi16(h1, 4));
      }
      KQuantMinTile<T>(w, scv, mv, tp, i, acc);
    }
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) a.y[(t0 + j) * a.ldy + r] = HSum(acc[j]);
  }
};

// Shuffle controls that put scale byte 2j (low 128 bits) / 2j+1 (high 128
// bits) into the high byte of every int16 (then >> 8 sign-extends it).
alignas(32) const uint8_t kQ6ScaleShuffle[8][32] = {
#define TENZRO_Q6_ROW(a, b)                                                                           \
  {0x80, a, 0x80, a, 0x80, a, 0x80, a, 0x80, a, 0x80, a, 0x80, a, 0x80, a,                            \
   0x80, b, 0x80, b, 0x80, b, 0x80, b, 0x80, b, 0x80, b, 0x80, b, 0x80, b}
    TENZRO_Q6_ROW(0, 1),  TENZRO_Q6_ROW(2, 3),   TENZRO_Q6_ROW(4, 5),   TENZRO_Q6_ROW(6, 7),
    TENZRO_Q6_ROW(8, 9),  TENZRO_Q6_ROW(10, 11), TENZRO_Q6_ROW(12, 13), TENZRO_Q6_ROW(14, 15),
#undef TENZRO_Q6_ROW
};

template <int T>
struct Q6_KTile {
  static void Run(const KernelArgs& a, int64_t r, int t0) {
    const auto* b = reinterpret_cast<const quant::block_q6_K*>(a.w->data.data() + r * a.row_bytes);
    const int64_t nb = a.w->row_len / QK_K;
    const TokenPtrs<T> tp(*a.q, t0);
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i m2 = _mm256_set1_epi8(0x03);
    __m256 acc[T];
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) acc[j] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
      const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[i].scales));
      const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
      const __m256i scb = _mm256_broadcastsi128_si256(sc8);
      __m256i scp[8];
      #pragma GCC unroll 8
      for (int s = 0; s < 8; ++s)
        scp[s] = _mm256_srai_epi16(
            _mm256_shuffle_epi8(scb, _mm256_load_si256(reinterpret_cast<const __m256i*>(kQ6ScaleShuffle[s]))), 8);
      __m256i w[8];
      for (int h = 0; h < 2; ++h) {
        const __m256i qa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[i].ql + 64 * h));
        const __m256i qb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[i].ql + 64 * h + 32));
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[i].qh + 32 * h));
        w[4 * h + 0] = _mm256_or_si256(_mm256_and_si256(qa, m4), _mm256_slli_epi16(_mm256_and_si256(qh, m2), 4));
        w[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(qb, m4),
                                       _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m2), 4));
        w[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qa, 4), m4),
                                       _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m2), 4));
        w[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qb, 4), m4),
                                       _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m2), 4));
      }
      const __m256 d = _mm256_set1_ps(F16(b[i].d));
      #pragma GCC unroll 8
      for (int j = 0; j < T; ++j) {
        const int8_t* x = tp.q[j] + i * QK_K;
        __m256i p[8];
        #pragma GCC unroll 8
        for (int s = 0; s < 8; ++s) {
          const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 32 * s));
          p[s] = _mm256_madd_epi16(_mm256_maddubs_epi16(w[s], xv), scp[s]);
        }
        // sum sc * (q - 32) * x = sum sc * q * x - 32 * sum sc * (sum of x per 16).
        const __m256i off = _mm256_madd_epi16(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tp.s16[j] + 16 * i)), sc16);
        const __m256i isum = _mm256_sub_epi32(Reduce8(p), _mm256_slli_epi32(off, 5));
        const __m256 f = _mm256_mul_ps(d, _mm256_loadu_ps(tp.d[j] + 8 * i));
        acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), f, acc[j]);
      }
    }
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) a.y[(t0 + j) * a.ldy + r] = HSum(acc[j]);
  }
};

// Q8_0: groups of 8 blocks (256 values) reduced like a k-quant super-block;
// a row's last group may be partial (missing blocks contribute zero).
template <int T>
struct Q8_0Tile {
  static void Run(const KernelArgs& a, int64_t r, int t0) {
    const auto* b = reinterpret_cast<const quant::block_q8_0*>(a.w->data.data() + r * a.row_bytes);
    const int64_t nb = a.w->row_len / 32;
    const TokenPtrs<T> tp(*a.q, t0);
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[T];
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) acc[j] = _mm256_setzero_ps();
    for (int64_t g = 0; g < nb; g += 8) {
      const int cnt = nb - g < 8 ? static_cast<int>(nb - g) : 8;
      alignas(32) float wd[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      __m256i wabs[8], wq[8];
      #pragma GCC unroll 8
      for (int s = 0; s < cnt; ++s) {
        wd[s] = F16(b[g + s].d);
        wq[s] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[g + s].qs));
        wabs[s] = _mm256_sign_epi8(wq[s], wq[s]);
      }
      const __m256 wdv = _mm256_load_ps(wd);
      #pragma GCC unroll 8
      for (int j = 0; j < T; ++j) {
        const int8_t* x = tp.q[j] + g * 32;
        __m256i p[8];
        #pragma GCC unroll 8
        for (int s = 0; s < 8; ++s) {
          if (s < cnt) {
            const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 32 * s));
            p[s] = _mm256_madd_epi16(_mm256_maddubs_epi16(wabs[s], _mm256_sign_epi8(xv, wq[s])), ones);
          } else {
            p[s] = _mm256_setzero_si256();
          }
        }
        const float* dx = tp.d[j] + g;
        __m256 dxv;
        if (cnt == 8) {
          dxv = _mm256_loadu_ps(dx);
        } else {
          alignas(32) float tmp[8] = {0, 0, 0, 0, 0, 0, 0, 0};
          #pragma GCC unroll 8
          for (int s = 0; s < cnt; ++s) tmp[s] = dx[s];
          dxv = _mm256_load_ps(tmp);
        }
        acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(Reduce8(p)), _mm256_mul_ps(wdv, dxv), acc[j]);
      }
    }
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) a.y[(t0 + j) * a.ldy + r] = HSum(acc[j]);
  }
};

}  // namespace

RowsKernel GetKernel(quant::GgmlType type) {
  switch (type) {
    case GgmlType::F32: return FloatRows<4, LoadF32, ScalarF32>;
    case GgmlType::F16: return FloatRows<2, LoadF16, ScalarF16>;
    case GgmlType::BF16: return FloatRows<2, LoadBf16, ScalarBf16>;
    case GgmlType::Q8_0: return QuantRows<Q8_0Tile>;
    case GgmlType::Q4_K: return QuantRows<Q4_KTile>;
    case GgmlType::Q5_K: return QuantRows<Q5_KTile>;
    case GgmlType::Q6_K: return QuantRows<Q6_KTile>;
    default: return nullptr;
  }
}

}  // namespace tenzro::runtime::avx2
