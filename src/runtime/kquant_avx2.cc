// AVX2 kernels for the k-quants (Q4_K, Q5_K, Q6_K): the decode row kernels
// and the token-tile batch kernel. Compiled with -mavx2 -mfma -mf16c; called
// only when core/cpu.h reports the AVX2 set. docs/compute.md explains the
// arithmetic; kernels.h the contract.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "quant/blocks.h"
#include "runtime/kernels.h"
#include "runtime/simd_avx2.h"

namespace tenzro::runtime::avx2 {
namespace {

using quant::GgmlType;
using quant::QK_K;

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

// ------------------------------------------------------------ k-quants
//
// One arithmetic for Q4_K, Q5_K and Q6_K, whatever the batch (act_quant.h):
// per row, token and 256-value super-block i the kernels form the exact int32
//   isum = sum_j sc_j * mul_j * (w_j . q_j)            (w unsigned: 0..15/31/63)
//        - 32 * sum_16 sc * b16                        (Q6_K: its -32 offset)
//   imin = sum_16 m * b16                              (Q4_K, Q5_K)
// and then, in this order, in f32:
//   acc = fma(float(isum), d_i * base_i, acc);  acc = fma(-float(imin), dmin_i * base_i, acc).
// Every product and sum is bounded below 2^31 (act_quant.h's bounds x the
// weight ranges), and int32 wrap-around is exact modulo 2^32 anyway, so any
// order of the integer work gives the same isum; the f32 steps are the same
// in both kernel shapes below, so a token's output never depends on the
// batch it came in.
//
// Two shapes:
//  * Row kernels (batches below kTileMin, i.e. decode): token by token; each
//    32-value sub-block is one maddubs against the token-major activations
//    and one madd by its int16 factor sc * mul (RowSbInts, the one integer
//    path of both row kernels; 14-17% faster than reducing each sub-block
//    with hadds and scaling in int32). KRow8 does 8 rows at once (the f32
//    steps on 8 lanes), KRowDot one row.
//  * Tile kernel: one row x 16 tokens (two 8-token tiles, act_quant.h). Each
//    maddubs multiplies 4 weights (broadcast) by 4 values of 8 tokens; the
//    int16 products of a sub-block (or part of it: 8/4/2 steps for 4/5/6-bit
//    weights, the most that cannot overflow) are summed with paddw, and one
//    madd per sub-block applies sc * mul. Measured ~1.5 cycles per 32 MACs
//    with everything around it (the bare loop: 0.8); 2 rows per step or 32
//    tokens measured slower (register spills).

// One super-block of one row, unpacked to bytes for the tile kernel.
struct alignas(32) KBlock {
  uint8_t w[256];          // unsigned weights in k order
  int16_t scb[8][16];      // sub-block s's scale(s) broadcast for madd (Q6_K: 8 x sc[2s], 8 x sc[2s+1])
  int32_t pair[8];         // as int16 pairs: Q6_K (sc[2s], sc[2s+1]); Q4_K / Q5_K (m[s], m[s])
  float d, dmin;
};

enum class KKind { kQ4, kQ5, kQ6 };

template <KKind K>
struct KTraits;
template <>
struct KTraits<KKind::kQ4> {
  using Block = quant::block_q4_K;
  static constexpr int kSteps = 8;  // 8 * 2*15*127 < 2^15
  static constexpr bool kMins = true;
};
template <>
struct KTraits<KKind::kQ5> {
  using Block = quant::block_q5_K;
  static constexpr int kSteps = 4;  // 4 * 2*31*127 < 2^15
  static constexpr bool kMins = true;
};
template <>
struct KTraits<KKind::kQ6> {
  using Block = quant::block_q6_K;
  static constexpr int kSteps = 2;  // 2 * 2*63*127 < 2^15
  static constexpr bool kMins = false;
};

inline int32_t Pair16(int16_t lo, int16_t hi) {
  return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint16_t>(lo)) |
                              (static_cast<uint32_t>(static_cast<uint16_t>(hi)) << 16));
}

inline void UnpackK4Scales(const uint8_t* scales, KBlock* kb) {
  alignas(16) uint8_t sm[16];
  UnpackScalesK4(scales, sm);
  for (int s = 0; s < 8; ++s) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(kb->scb[s]), _mm256_set1_epi16(sm[s]));
    kb->pair[s] = Pair16(sm[8 + s], sm[8 + s]);
  }
}

// The 8 sub-blocks' unsigned weights in k order (Q4_K 0..15, Q5_K 0..31,
// Q6_K 0..63), one 32-byte vector each; shared by both kernel shapes.
inline void UnpackWeights(const quant::block_q4_K& b, __m256i* w) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
#pragma GCC unroll 4
  for (int g = 0; g < 4; ++g) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * g));
    w[2 * g] = _mm256_and_si256(v, m4);
    w[2 * g + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
  }
}

inline void UnpackWeights(const quant::block_q5_K& b, __m256i* w) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i one = _mm256_set1_epi8(1);
  const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh));
#pragma GCC unroll 4
  for (int g = 0; g < 4; ++g) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * g));
    const __m256i h0 = _mm256_and_si256(_mm256_srli_epi16(hb, 2 * g), one);
    const __m256i h1 = _mm256_and_si256(_mm256_srli_epi16(hb, 2 * g + 1), one);
    w[2 * g] = _mm256_or_si256(_mm256_and_si256(v, m4), _mm256_slli_epi16(h0, 4));
    w[2 * g + 1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4), _mm256_slli_epi16(h1, 4));
  }
}

inline void UnpackWeights(const quant::block_q6_K& b, __m256i* w) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i m2 = _mm256_set1_epi8(0x03);
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    const __m256i qa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * h));
    const __m256i qb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * h + 32));
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * h));
    w[4 * h + 0] = _mm256_or_si256(_mm256_and_si256(qa, m4), _mm256_slli_epi16(_mm256_and_si256(qh, m2), 4));
    w[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(qb, m4),
                                   _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m2), 4));
    w[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qa, 4), m4),
                                   _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m2), 4));
    w[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qb, 4), m4),
                                   _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m2), 4));
  }
}

template <typename Block>
inline void StoreWeights(const Block& b, KBlock* kb) {
  __m256i w[8];
  UnpackWeights(b, w);
#pragma GCC unroll 8
  for (int s = 0; s < 8; ++s) _mm256_store_si256(reinterpret_cast<__m256i*>(kb->w + 32 * s), w[s]);
}

template <typename Block>  // Q4_K, Q5_K
inline void UnpackK4(const Block& b, KBlock* kb) {
  StoreWeights(b, kb);
  UnpackK4Scales(b.scales, kb);
  kb->d = F16(b.d);
  kb->dmin = F16(b.dmin);
}
inline void Unpack(const quant::block_q4_K& b, KBlock* kb) { UnpackK4(b, kb); }
inline void Unpack(const quant::block_q5_K& b, KBlock* kb) { UnpackK4(b, kb); }

inline void Unpack(const quant::block_q6_K& b, KBlock* kb) {
  StoreWeights(b, kb);
  for (int s = 0; s < 8; ++s) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(kb->scb[s]),
                       _mm256_set_m128i(_mm_set1_epi16(b.scales[2 * s + 1]), _mm_set1_epi16(b.scales[2 * s])));
    kb->pair[s] = Pair16(b.scales[2 * s], b.scales[2 * s + 1]);
  }
  kb->d = F16(b.d);
  kb->dmin = 0.0f;
}

// The token's factors for super-block i, shared by every row: its 8
// multipliers as int16 in both 128-bit lanes (mul16), its per-16 sums (b16v)
// and their per-32 sums as int32 (b32).
struct TokSb {
  __m256i mul16, b16v, b32;
};

inline TokSb LoadTokSb(const int16_t* mul, const int16_t* b16, int64_t i) {
  TokSb t;
  t.mul16 = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(mul + 8 * i)));
  t.b16v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b16 + 16 * i));
  t.b32 = _mm256_madd_epi16(t.b16v, _mm256_set1_epi16(1));
  return t;
}

// vpshufb controls: int16 element s of each 128-bit lane, broadcast over it.
alignas(32) const uint8_t kBcast16[8][32] = {
#define TENZRO_B16(s)                                                                                   \
  {2 * s, 2 * s + 1, 2 * s, 2 * s + 1, 2 * s, 2 * s + 1, 2 * s, 2 * s + 1, 2 * s, 2 * s + 1, 2 * s,     \
   2 * s + 1, 2 * s, 2 * s + 1, 2 * s, 2 * s + 1, 2 * s, 2 * s + 1, 2 * s, 2 * s + 1, 2 * s, 2 * s + 1, \
   2 * s, 2 * s + 1, 2 * s, 2 * s + 1, 2 * s, 2 * s + 1, 2 * s, 2 * s + 1, 2 * s, 2 * s + 1}
    TENZRO_B16(0), TENZRO_B16(1), TENZRO_B16(2), TENZRO_B16(3),
    TENZRO_B16(4), TENZRO_B16(5), TENZRO_B16(6), TENZRO_B16(7),
#undef TENZRO_B16
};

// The integer work of one row, one token, one super-block (x: its 256
// quantized activations): int32 lanes whose sum is isum (*v1) and, for
// Q4_K / Q5_K, imin (*v2). Each 32-value sub-block s is one maddubs against
// the unsigned weights and one madd by its int16 factor f_s (sc_s * mul_s;
// Q6_K: sc[2s] * mul_s on the first 16 values, sc[2s+1] * mul_s on the
// last 16, which is what the 128-bit lanes hold), summed over s. The factors
// fit int16 (|sc| <= 128, mul <= 16) and the madd products int32.
template <KKind K>
inline void RowSbInts(const typename KTraits<K>::Block& b, const int8_t* x, const TokSb& tk, __m256i* v1,
                      __m256i* v2) {
  __m256i w[8];
  UnpackWeights(b, w);
  // fm: int16 element s of each lane = sub-block s's factor for that lane;
  // off: Q6_K's -32 offset, 32 * sum_16 sc * b16, in lanes.
  __m256i fm, off = _mm256_setzero_si256();
  if constexpr (KTraits<K>::kMins) {
    alignas(16) uint8_t sm[16];
    UnpackScalesK4(b.scales, sm);
    const __m128i smv = _mm_load_si128(reinterpret_cast<const __m128i*>(sm));
    fm = _mm256_mullo_epi16(_mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(smv)), tk.mul16);
    *v2 = _mm256_mullo_epi32(tk.b32, _mm256_cvtepu8_epi32(_mm_srli_si128(smv, 8)));
  } else {
    // Scales 0, 2, .., 14 into the low lane, 1, 3, .., 15 into the high one.
    const __m128i even_odd = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
    fm = _mm256_mullo_epi16(_mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, even_odd)), tk.mul16);
    off = _mm256_slli_epi32(_mm256_madd_epi16(_mm256_cvtepi8_epi16(sc8), tk.b16v), 5);
    *v2 = _mm256_setzero_si256();
  }
  __m256i acc = _mm256_setzero_si256();
#pragma GCC unroll 8
  for (int s = 0; s < 8; ++s) {
    const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 32 * s));
    const __m256i f = _mm256_shuffle_epi8(fm, _mm256_load_si256(reinterpret_cast<const __m256i*>(kBcast16[s])));
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(w[s], xv), f));
  }
  *v1 = _mm256_sub_epi32(acc, off);
}

// Row kernel: one row, one token (the rows % 8 that KRow8 leaves): per
// super-block RowSbInts, one horizontal sum for isum and imin together, the
// two f32 steps.
template <KKind K>
float KRowDot(const KernelArgs& a, int64_t r, int t) {
  using Tr = KTraits<K>;
  const auto* b = reinterpret_cast<const typename Tr::Block*>(a.w->data.data() + r * a.row_bytes);
  const int64_t nb = a.w->row_len / QK_K;
  const int8_t* xq = a.q->q(t);
  const float* base = a.q->group_base(t);
  float acc = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    __m256i v1, v2;
    RowSbInts<K>(b[i], xq + i * QK_K, LoadTokSb(a.q->muls(t), a.q->sums16(t), i), &v1, &v2);
    // [isum, imin] in lanes 0, 1.
    const __m256i h = _mm256_hadd_epi32(v1, v2);
    __m128i hs = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
    hs = _mm_hadd_epi32(hs, hs);
    const __m128 f = _mm_cvtepi32_ps(hs);
    acc = std::fma(_mm_cvtss_f32(f), F16(b[i].d) * base[i], acc);
    if constexpr (Tr::kMins) acc = std::fma(-_mm_cvtss_f32(_mm_movehdup_ps(f)), F16(b[i].dmin) * base[i], acc);
  }
  return acc;
}

// Row kernel, 8 rows x one token: the same per-row integer work as KRowDot,
// row after row (one sequential weight stream for the prefetcher), each
// super-block's lanes kept; then per super-block the 8 rows' [isum] and
// [imin] gathered into lanes (Reduce8) and the f32 steps done on all 8 lanes
// at once: the same operations per output as KRowDot, without its serial
// scalar tail. REQUIRES nb <= kMaxSb (else KRowDot).
constexpr int64_t kMaxSb = 32;

template <KKind K>
void KRow8(const KernelArgs& a, int64_t r, int t) {
  using Tr = KTraits<K>;
  const int64_t nb = a.w->row_len / QK_K;
  const int8_t* xq = a.q->q(t);
  const float* base = a.q->group_base(t);
  TokSb tk[kMaxSb];  // token-only factors, once for all 8 rows
  for (int64_t i = 0; i < nb; ++i) tk[i] = LoadTokSb(a.q->muls(t), a.q->sums16(t), i);
  __m256i v1[kMaxSb][8], v2[kMaxSb][8];
  alignas(16) uint16_t dd[kMaxSb][8], dm[kMaxSb][8];  // raw f16, converted 8 at a time
  for (int rr = 0; rr < 8; ++rr) {
    const auto* b = reinterpret_cast<const typename Tr::Block*>(a.w->data.data() + (r + rr) * a.row_bytes);
    for (int64_t i = 0; i < nb; ++i) {
      RowSbInts<K>(b[i], xq + i * QK_K, tk[i], &v1[i][rr], &v2[i][rr]);
      dd[i][rr] = b[i].d;
      if constexpr (Tr::kMins) dm[i][rr] = b[i].dmin;
    }
  }
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const __m256 bs = _mm256_set1_ps(base[i]);
    const __m256 d = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(dd[i])));
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(Reduce8(v1[i])), _mm256_mul_ps(d, bs), acc);
    if constexpr (Tr::kMins) {
      const __m256 dmin = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(dm[i])));
      acc = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(Reduce8(v2[i])), _mm256_mul_ps(dmin, bs), acc);
    }
  }
  _mm256_storeu_ps(a.y + t * a.ldy + r, acc);
}

// Pointers into the token tiles v0 .. v0+NV-1.
template <int NV>
struct TilePtrs {
  const int8_t* q[NV];
  const int16_t* mul[NV];
  const int16_t* sum[NV];
  const float* base[NV];
  TilePtrs(const QuantizedActs& a, int v0) {
    for (int v = 0; v < NV; ++v) {
      q[v] = a.tile_q(v0 + v);
      mul[v] = a.tile_mul(v0 + v);
      sum[v] = a.tile_sums16(v0 + v);
      base[v] = a.tile_base(v0 + v);
    }
  }
};

// Tile kernel, one super-block i of one row (kb) x NV (1-2) 8-token tiles,
// acc[v] holding the f32 sums of the row for tile v's 8 tokens. (2 rows per
// step measured 3-24% slower: register spills.)
template <KKind K, int NV>
inline void KTileSb(const KBlock* kb, const TilePtrs<NV>& tp, int64_t i, __m256* acc) {
  using Tr = KTraits<K>;
  __m256i c[NV];
  for (int v = 0; v < NV; ++v) c[v] = _mm256_setzero_si256();
#pragma GCC unroll 1
  for (int s = 0; s < 8; ++s) {
    __m256i mul[NV];
    for (int v = 0; v < NV; ++v)
      mul[v] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tp.mul[v] + (8 * i + s) * 16));
#pragma GCC unroll 8
    for (int h = 0; h < 8; h += Tr::kSteps) {
      __m256i acc16[NV];
      for (int v = 0; v < NV; ++v) acc16[v] = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int st = h; st < h + Tr::kSteps; ++st) {
        __m256i x[NV];
        for (int v = 0; v < NV; ++v)
          x[v] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tp.q[v] + (64 * i + 8 * s + st) * 32));
        int32_t w4;
        std::memcpy(&w4, kb->w + 32 * s + 4 * st, 4);
        const __m256i bw = _mm256_set1_epi32(w4);
        for (int v = 0; v < NV; ++v) acc16[v] = _mm256_add_epi16(acc16[v], _mm256_maddubs_epi16(bw, x[v]));
        // Keeps GCC from hoisting every step's maddubs ahead of the adds
        // (it did, and spilled them all); no instruction is emitted.
        for (int v = 0; v < NV; ++v) asm("" : "+x"(acc16[v]));
      }
      // Lane 0 of scb[s] is this part's scale for Q4_K/Q5_K; for Q6_K the
      // first 4 steps use sc[2s], the last 4 sc[2s+1].
      const __m256i sc = _mm256_set1_epi16(kb->scb[s][h < 4 ? 0 : 8]);
      for (int v = 0; v < NV; ++v)
        c[v] = _mm256_add_epi32(c[v], _mm256_madd_epi16(acc16[v], _mm256_mullo_epi16(mul[v], sc)));
    }
  }
  for (int v = 0; v < NV; ++v) {
    const __m256 base = _mm256_loadu_ps(tp.base[v] + 8 * i);
    __m256i t = _mm256_setzero_si256();  // imin, or the Q6_K offset sum
    for (int s = 0; s < 8; ++s)
      t = _mm256_add_epi32(t, _mm256_madd_epi16(_mm256_set1_epi32(kb->pair[s]),
                                                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tp.sum[v] + (8 * i + s) * 16))));
    if constexpr (Tr::kMins) {
      acc[v] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(c[v]), _mm256_mul_ps(_mm256_set1_ps(kb->d), base), acc[v]);
      acc[v] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(t), _mm256_mul_ps(_mm256_set1_ps(kb->dmin), base), acc[v]);
    } else {
      const __m256i isum = _mm256_sub_epi32(c[v], _mm256_slli_epi32(t, 5));
      acc[v] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(_mm256_set1_ps(kb->d), base), acc[v]);
    }
  }
}

// Tile kernel driver. Rows go in blocks of kRowBlock (unpacked once, ~55 KB
// for 3072-wide rows: L2); for each pair of tiles, super-block by super-block,
// every row of the block takes its turn, so a super-block's activations
// (16 tokens x 256 bytes) stay in L1 while all the block's rows use them.
constexpr int kRowBlock = 8;

template <KKind K, int NV>
void KTileBlock(const KernelArgs& a, const KBlock* kbs, int64_t nb, int64_t r, int rows, int v0) {
  const TilePtrs<NV> tp(*a.q, v0);
  __m256 acc[kRowBlock * NV];
  for (auto& x : acc) x = _mm256_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    for (int rr = 0; rr < rows; ++rr) KTileSb<K, NV>(kbs + rr * nb + i, tp, i, acc + rr * NV);
  }
  for (int v = 0; v < NV; ++v) {
    const int t0 = (v0 + v) * kTileTokens;
    const int cnt = a.n_tok - t0 < kTileTokens ? a.n_tok - t0 : kTileTokens;
    if (rows == kRowBlock) {
      // 8 rows x 8 tokens -> 8 tokens x 8 rows: contiguous stores per token.
      __m256 m[8];
      for (int rr = 0; rr < 8; ++rr) m[rr] = acc[rr * NV + v];
      Transpose8(m);
      for (int l = 0; l < cnt; ++l) _mm256_storeu_ps(a.y + (t0 + l) * a.ldy + r, m[l]);
    } else {
      for (int rr = 0; rr < rows; ++rr) {
        alignas(32) float out[8];
        _mm256_store_ps(out, acc[rr * NV + v]);
        for (int l = 0; l < cnt; ++l) a.y[(t0 + l) * a.ldy + r + rr] = out[l];
      }
    }
  }
}

template <KKind K>
void KTileRows(const KernelArgs& a, int64_t r0, int64_t r1) {
  using Tr = KTraits<K>;
  const int64_t nb = a.w->row_len / QK_K;
  const int tiles = a.q->n_tiles;
  std::vector<KBlock> kbs(static_cast<size_t>(kRowBlock * nb));
  for (int64_t r = r0; r < r1; r += kRowBlock) {
    const int rows = static_cast<int>(std::min<int64_t>(kRowBlock, r1 - r));
    for (int rr = 0; rr < rows; ++rr) {
      const auto* b = reinterpret_cast<const typename Tr::Block*>(a.w->data.data() + (r + rr) * a.row_bytes);
      for (int64_t i = 0; i < nb; ++i) Unpack(b[i], &kbs[rr * nb + i]);
    }
    int v = 0;
    for (; v + 2 <= tiles; v += 2) KTileBlock<K, 2>(a, kbs.data(), nb, r, rows, v);
    if (v < tiles) KTileBlock<K, 1>(a, kbs.data(), nb, r, rows, v);
  }
}

template <KKind K>
void KRows(const KernelArgs& a, int64_t r0, int64_t r1) {
  if (a.q->has_tiles()) return KTileRows<K>(a, r0, r1);
  // Few tokens: token by token over blocks of 16 rows (~30 KB, in L2 for the
  // next token).
  for (int64_t rb = r0; rb < r1; rb += 16) {
    const int64_t re = std::min(r1, rb + 16);
    for (int t = 0; t < a.n_tok; ++t) {
      int64_t r = rb;
      if (a.w->row_len / QK_K <= kMaxSb)
          for (; r + 8 <= re; r += 8) KRow8<K>(a, r, t);
      for (; r < re; ++r) a.y[t * a.ldy + r] = KRowDot<K>(a, r, t);
    }
  }
}

}  // namespace

RowsKernel GetKQuantKernel(quant::GgmlType type) {
  switch (type) {
    case GgmlType::Q4_K: return KRows<KKind::kQ4>;
    case GgmlType::Q5_K: return KRows<KKind::kQ5>;
    case GgmlType::Q6_K: return KRows<KKind::kQ6>;
    default: return nullptr;
  }
}

}  // namespace tenzro::runtime::avx2
