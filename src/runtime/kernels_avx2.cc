// AVX2 + FMA + F16C kernels (compiled with -mavx2 -mfma -mf16c; called only
// when core/cpu.h reports the AVX2 set).
//
// Quantized weights: each 32-value sub-block is an int8 x uint8 dot product
// (_mm256_maddubs_epi16, then _mm256_madd_epi16 with the sub-block's integer
// weight scale), converted to float and multiplied by the activation block's
// scale into 8 float lanes (SubBlockTile); the super-block's float scale and
// min/offset terms are applied once per super-block, and the lanes are summed
// once per row. No horizontal adds in the inner loop. Register tile: up to 8
// tokens x 1 row (4 rows for 1 token, 2 rows for 2-3 tokens, for enough
// independent FMA chains); each sub-block is unpacked once for every token of
// the tile, and the tile's activations stay in L1 while the rows stream.
// Float weights: up to 4 rows x 4 tokens of f32 FMA accumulators.
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

constexpr int kMaxTile = 8;  // tokens per register tile

// Runs Tile<T, R> over rows [r0, r1): R rows at a time, then the rest one
// by one. Small token tiles take several rows at once so that enough
// independent FMA chains are in flight (one token alone is one chain of
// dependent FMAs per row); each (row, token) still sees the same sequence of
// operations, so R never changes a result bit.
template <template <int, int> class Tile, int T, int R>
void TileRows(const KernelArgs& a, int64_t r0, int64_t r1, int t0) {
  int64_t r = r0;
  if constexpr (R > 1)
    for (; r + R <= r1; r += R) Tile<T, R>::Run(a, r, t0);
  for (; r < r1; ++r) Tile<T, 1>::Run(a, r, t0);
}

// Loops over tiles of up to kMaxTile tokens, and within a tile over the rows:
// the tile's activations (8 x n int8, 24 KiB at n = 3072) stay in L1 while
// the chunk's weight rows stream past them.
template <template <int, int> class Tile>
void QuantRows(const KernelArgs& a, int64_t r0, int64_t r1) {
  int t = 0;
  for (; t + kMaxTile <= a.n_tok; t += kMaxTile) TileRows<Tile, kMaxTile, 1>(a, r0, r1, t);
  switch (a.n_tok - t) {
    case 7: TileRows<Tile, 7, 1>(a, r0, r1, t); break;
    case 6: TileRows<Tile, 6, 1>(a, r0, r1, t); break;
    case 5: TileRows<Tile, 5, 1>(a, r0, r1, t); break;
    case 4: TileRows<Tile, 4, 1>(a, r0, r1, t); break;
    case 3: TileRows<Tile, 3, 2>(a, r0, r1, t); break;
    case 2: TileRows<Tile, 2, 2>(a, r0, r1, t); break;
    case 1: TileRows<Tile, 1, 4>(a, r0, r1, t); break;
    default: break;
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

// One 32-value sub-block against every token of the tile:
//   t[j] += float(sum_pairs(w * x_j) * wsc) * d_j[s]   (8 float lanes)
// `w` holds unsigned weight values (< 64), `wsc` the int16 sub-block scale(s)
// per lane. Each token's lanes see one fixed sequence of operations, whatever
// the tile size, so tiling never changes the result bits. No horizontal adds
// until the end of the row: lanes are summed once, by HSum.
template <int T>
inline void SubBlockTile(__m256i w, __m256i wsc, const TokenPtrs<T>& tp, int64_t off, int64_t blk,
                         __m256* t) {
#pragma GCC unroll 8
  for (int j = 0; j < T; ++j) {
    const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tp.q[j] + off));
    const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(w, xv), wsc);
    t[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_broadcast_ss(tp.d[j] + blk), t[j]);
  }
}

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

// Q4_K and Q5_K: y = sum_i d_i * sum_s sc_s * (w . x)_s * dx_s - dmin_i * sum_s m_s * dxs_s,
// for R rows x T tokens. Sub-block s of super-block i: Unpack(block, s)
// returns its 32 unsigned values.
template <int T, int R, typename Block, typename Unpack>
inline void KQuantMinRows(const KernelArgs& a, int64_t r, int t0, Unpack unpack) {
  const Block* b[R];
#pragma GCC unroll 4
  for (int k = 0; k < R; ++k) b[k] = reinterpret_cast<const Block*>(a.w->data.data() + (r + k) * a.row_bytes);
  const int64_t nb = a.w->row_len / QK_K;
  const TokenPtrs<T> tp(*a.q, t0);
  __m256 acc[R][T];
#pragma GCC unroll 4
  for (int k = 0; k < R; ++k)
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) acc[k][j] = _mm256_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    alignas(16) uint8_t sm[R][16];
    __m256 t[R][T];
#pragma GCC unroll 4
    for (int k = 0; k < R; ++k) {
      UnpackScalesK4(b[k][i].scales, sm[k]);
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) t[k][j] = _mm256_setzero_ps();
    }
#pragma GCC unroll 8
    for (int s = 0; s < 8; ++s)
#pragma GCC unroll 4
      for (int k = 0; k < R; ++k)
        SubBlockTile<T>(unpack(b[k][i], s), _mm256_set1_epi16(sm[k][s]), tp, i * QK_K + 32 * s, 8 * i + s, t[k]);
#pragma GCC unroll 4
    for (int k = 0; k < R; ++k) {
      const __m256 d = _mm256_set1_ps(F16(b[k][i].d));
      const __m256 mv = _mm256_mul_ps(
          _mm256_set1_ps(F16(b[k][i].dmin)),
          _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sm[k] + 8)))));
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) {
        acc[k][j] = _mm256_fmadd_ps(t[k][j], d, acc[k][j]);
        acc[k][j] = _mm256_fnmadd_ps(mv, _mm256_loadu_ps(tp.dxs[j] + 8 * i), acc[k][j]);
      }
    }
  }
#pragma GCC unroll 4
  for (int k = 0; k < R; ++k)
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) a.y[(t0 + j) * a.ldy + r + k] = HSum(acc[k][j]);
}

template <int T, int R>
struct Q4_KTile {
  static void Run(const KernelArgs& a, int64_t r, int t0) {
    KQuantMinRows<T, R, quant::block_q4_K>(a, r, t0, [](const quant::block_q4_K& b, int s) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * (s / 2)));
      const __m256i m4 = _mm256_set1_epi8(0x0F);
      return (s & 1) ? _mm256_and_si256(_mm256_srli_epi16(v, 4), m4) : _mm256_and_si256(v, m4);
    });
  }
};

template <int T, int R>
struct Q5_KTile {
  static void Run(const KernelArgs& a, int64_t r, int t0) {
    KQuantMinRows<T, R, quant::block_q5_K>(a, r, t0, [](const quant::block_q5_K& b, int s) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * (s / 2)));
      const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh));
      const __m256i m4 = _mm256_set1_epi8(0x0F);
      const __m256i lo = (s & 1) ? _mm256_and_si256(_mm256_srli_epi16(v, 4), m4) : _mm256_and_si256(v, m4);
      const __m256i h = _mm256_and_si256(_mm256_srli_epi16(hb, s), _mm256_set1_epi8(1));
      return _mm256_or_si256(lo, _mm256_slli_epi16(h, 4));
    });
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

// Q6_K: y = sum_i d_i * sum_s (sum_16 sc * q . x) * dx_s - 32 * (sum_16 sc * sum x) * dx_s,
// for R rows x T tokens.
template <int T, int R>
struct Q6_KTile {
  static void Run(const KernelArgs& a, int64_t r, int t0) {
    const quant::block_q6_K* b[R];
#pragma GCC unroll 4
    for (int k = 0; k < R; ++k)
      b[k] = reinterpret_cast<const quant::block_q6_K*>(a.w->data.data() + (r + k) * a.row_bytes);
    const int64_t nb = a.w->row_len / QK_K;
    const TokenPtrs<T> tp(*a.q, t0);
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i m2 = _mm256_set1_epi8(0x03);
    __m256 acc[R][T];
#pragma GCC unroll 4
    for (int k = 0; k < R; ++k)
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) acc[k][j] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
      __m256i scb[R];
      __m256 t[R][T], u[R][T];
#pragma GCC unroll 4
      for (int k = 0; k < R; ++k) {
        const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[k][i].scales));
        const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
        scb[k] = _mm256_broadcastsi128_si256(sc8);
        // The -32 offset first: lane s of madd(sums16, sc16) is sub-block s's term.
#pragma GCC unroll 8
        for (int j = 0; j < T; ++j) {
          const __m256i off = _mm256_madd_epi16(
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tp.s16[j] + 16 * i)), sc16);
          t[k][j] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_slli_epi32(off, 5)), _mm256_loadu_ps(tp.d[j] + 8 * i));
          u[k][j] = _mm256_setzero_ps();
        }
      }
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
#pragma GCC unroll 4
        for (int k = 0; k < R; ++k) {
          const __m256i qa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[k][i].ql + 64 * h));
          const __m256i qb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[k][i].ql + 64 * h + 32));
          const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[k][i].qh + 32 * h));
          const __m256i w[4] = {
              _mm256_or_si256(_mm256_and_si256(qa, m4), _mm256_slli_epi16(_mm256_and_si256(qh, m2), 4)),
              _mm256_or_si256(_mm256_and_si256(qb, m4),
                              _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m2), 4)),
              _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qa, 4), m4),
                              _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m2), 4)),
              _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qb, 4), m4),
                              _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m2), 4)),
          };
#pragma GCC unroll 4
          for (int q = 0; q < 4; ++q) {
            const int s = 4 * h + q;
            const __m256i scp = _mm256_srai_epi16(
                _mm256_shuffle_epi8(scb[k], _mm256_load_si256(reinterpret_cast<const __m256i*>(kQ6ScaleShuffle[s]))),
                8);
            SubBlockTile<T>(w[q], scp, tp, i * QK_K + 32 * s, 8 * i + s, u[k]);
          }
        }
      }
#pragma GCC unroll 4
      for (int k = 0; k < R; ++k) {
        const __m256 d = _mm256_set1_ps(F16(b[k][i].d));
#pragma GCC unroll 8
        for (int j = 0; j < T; ++j) acc[k][j] = _mm256_fmadd_ps(_mm256_sub_ps(u[k][j], t[k][j]), d, acc[k][j]);
      }
    }
#pragma GCC unroll 4
    for (int k = 0; k < R; ++k)
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) a.y[(t0 + j) * a.ldy + r + k] = HSum(acc[k][j]);
  }
};

// Q8_0: per 32-value block, float(sum |w| * sign(x, w)) * wd * dx, for R rows
// x T tokens.
template <int T, int R>
struct Q8_0Tile {
  static void Run(const KernelArgs& a, int64_t r, int t0) {
    const quant::block_q8_0* b[R];
#pragma GCC unroll 4
    for (int k = 0; k < R; ++k)
      b[k] = reinterpret_cast<const quant::block_q8_0*>(a.w->data.data() + (r + k) * a.row_bytes);
    const int64_t nb = a.w->row_len / 32;
    const TokenPtrs<T> tp(*a.q, t0);
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[R][T];
#pragma GCC unroll 4
    for (int k = 0; k < R; ++k)
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) acc[k][j] = _mm256_setzero_ps();
    for (int64_t s = 0; s < nb; ++s) {
#pragma GCC unroll 4
      for (int k = 0; k < R; ++k) {
        const __m256i wq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[k][s].qs));
        const __m256i wabs = _mm256_sign_epi8(wq, wq);
        const __m256 wd = _mm256_set1_ps(F16(b[k][s].d));
#pragma GCC unroll 8
        for (int j = 0; j < T; ++j) {
          const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tp.q[j] + 32 * s));
          const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(wabs, _mm256_sign_epi8(xv, wq)), ones);
          const __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(p), wd);
          acc[k][j] = _mm256_fmadd_ps(f, _mm256_broadcast_ss(tp.d[j] + s), acc[k][j]);
        }
      }
    }
#pragma GCC unroll 4
    for (int k = 0; k < R; ++k)
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) a.y[(t0 + j) * a.ldy + r + k] = HSum(acc[k][j]);
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
