// AVX2 + FMA + F16C kernels (compiled with -mavx2 -mfma -mf16c; called only
// when core/cpu.h reports the AVX2 set): float weights, Q8_0, and the ISA's
// GetKernel. The k-quants live in kquant_avx2.cc.
//
// Float weights: up to 4 rows x 4 tokens of f32 FMA accumulators; the scalar
// tail (row_len % 8 values) is an explicit fma chain, so the bits do not
// depend on whether a compiler contracts a * b + c (kernels_arm.h does the same).
// Q8_0: each 32-value block is an int8 x int8 dot product (sign trick, then
// _mm256_maddubs_epi16 and _mm256_madd_epi16 to int32 lanes); 8 blocks are
// reduced together (Reduce8: one int32 lane per block), converted to float
// once and scaled by (weight scale x activation block scale) per lane with one
// FMA. Register tile: one weight row x up to 4 tokens.
#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "runtime/kernels.h"
#include "runtime/simd_avx2.h"

namespace tenzro::runtime::avx2 {
namespace {

using quant::GgmlType;

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
      for (int64_t k = nv; k < n; ++k) tail = std::fma(Scalar(rows[i] + k * kElemBytes), xs[j][k], tail);
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
  TokenPtrs(const QuantizedActs& a, int t0) {
    for (int j = 0; j < T; ++j) {
      q[j] = a.q(t0 + j);
      d[j] = a.scale(t0 + j);
    }
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
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K: return GetKQuantKernel(type);
    default: return nullptr;
  }
}

}  // namespace tenzro::runtime::avx2
