// AVX-512 VNNI kernels for the k-quants (Q4_K, Q5_K, Q6_K): the decode row
// kernels and the token-tile batch kernel. Compiled with the AVX-512 flags
// (F/BW/VL/DQ/VNNI); called only when core/cpu.h reports that set.
//
// Contract: bit for bit the output of kquant_avx2.cc, for every type, batch
// and row range. Both files form, per row, token and super-block, the same
// exact int32 sums (kquant_avx2.cc's comment block; docs/compute.md)
//   isum = sum_j sc_j * mul_j * (w_j . q_j)  (Q6_K: - 32 * sum_16 sc * b16)
//   imin = sum_16 m * b16                    (Q4_K, Q5_K)
// and then the same f32 steps in the same order,
//   acc = fma(float(isum), d * base, acc);  acc = fma(-float(imin), dmin * base, acc),
// so only the integer work differs (integers are exact: any order gives the
// same sums):
//  * Row kernels (decode, < kTileMin tokens): two 32-value sub-blocks per
//    zmm; vpmaddubsw (weights x activations, int16 pairs) then vpdpwssd by
//    the int16 factor sc * mul of each sub-block (or 16-value half, Q6_K),
//    accumulating into int32 in one instruction.
//  * Tile kernel (8-token tiles, act_quant.h): vpdpbusd on zmm lanes of 8
//    tokens x 2 interleaved 4-value groups, 64 multiply-adds straight into
//    int32, then one vpdpwssd per int16-safe chunk applies sc * mul (see the
//    tile kernel section). 4 rows x 2 tiles per step: 16 zmm accumulators.
// GCC 12 flags its own _mm512_inserti64x4 / broadcast / extract intrinsics
// (their undefined-register idiom) as -Wuninitialized; not our variables.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>
#include <vector>

#include "quant/blocks.h"
#include "runtime/kernels.h"
#include "runtime/simd_avx512.h"

namespace tenzro::runtime::avx512 {
namespace {

using quant::GgmlType;
using quant::QK_K;

// ggml's get_scale_min_k4 for all eight sub-blocks: sc[0..7], m[0..7].
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

enum class KKind { kQ4, kQ5, kQ6 };

template <KKind K>
struct KTraits;
template <>
struct KTraits<KKind::kQ4> {
  using Block = quant::block_q4_K;
  static constexpr bool kMins = true;
};
template <>
struct KTraits<KKind::kQ5> {
  using Block = quant::block_q5_K;
  static constexpr bool kMins = true;
};
template <>
struct KTraits<KKind::kQ6> {
  using Block = quant::block_q6_K;
  static constexpr bool kMins = false;
};

// The unpacked weights come as 4 zmm, each holding two 32-value sub-blocks:
// PairLo(p) in the low 256 bits, PairHi(p) in the high ones. The pairing
// follows the block layouts (one 64-byte load each): Q4_K/Q5_K nibbles give
// (0,2) (1,3) (4,6) (5,7), Q6_K (0,1) (2,3) (4,5) (6,7).
template <KKind K>
constexpr int PairLo(int p) { return K == KKind::kQ6 ? 2 * p : (p / 2) * 4 + p % 2; }
template <KKind K>
constexpr int PairHi(int p) { return K == KKind::kQ6 ? 2 * p + 1 : PairLo<K>(p) + 2; }

// 16-bit words: a in the low 256 bits, b in the high ones.
inline __m512i Halves16(int a, int b) {
  return _mm512_inserti64x4(_mm512_set1_epi16(static_cast<int16_t>(a)), _mm256_set1_epi16(static_cast<int16_t>(b)), 1);
}

inline void UnpackWeights(const quant::block_q4_K& b, __m512i* w) {
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  for (int h = 0; h < 2; ++h) {
    const __m512i v = _mm512_loadu_si512(b.qs + 64 * h);
    w[2 * h] = _mm512_and_si512(v, m4);
    w[2 * h + 1] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
  }
}

inline void UnpackWeights(const quant::block_q5_K& b, __m512i* w) {
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const __m512i one = _mm512_set1_epi8(1);
  const __m512i hb = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh)));
  for (int h = 0; h < 2; ++h) {
    const __m512i v = _mm512_loadu_si512(b.qs + 64 * h);
    for (int n = 0; n < 2; ++n) {  // pair 2h + n: nibble n, high bits PairLo / PairHi
      const int p = 2 * h + n;
      const __m512i lo = n == 0 ? _mm512_and_si512(v, m4) : _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
      const __m512i hi = _mm512_and_si512(
          _mm512_srlv_epi16(hb, Halves16(PairLo<KKind::kQ5>(p), PairHi<KKind::kQ5>(p))), one);
      w[p] = _mm512_or_si512(lo, _mm512_slli_epi16(hi, 4));
    }
  }
}

inline void UnpackWeights(const quant::block_q6_K& b, __m512i* w) {
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const __m512i m2 = _mm512_set1_epi8(0x03);
  for (int h = 0; h < 2; ++h) {
    const __m512i l = _mm512_loadu_si512(b.ql + 64 * h);
    const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * h)));
    const __m512i h01 = _mm512_and_si512(_mm512_srlv_epi16(qh, Halves16(0, 2)), m2);
    const __m512i h23 = _mm512_and_si512(_mm512_srlv_epi16(qh, Halves16(4, 6)), m2);
    w[2 * h] = _mm512_or_si512(_mm512_and_si512(l, m4), _mm512_slli_epi16(h01, 4));
    w[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4), _mm512_slli_epi16(h23, 4));
  }
}

// ------------------------------------------------------------ row kernels

// A token's data for super-block i, shared by every row: its activations
// paired like the weights, its 8 multipliers, its per-16 sums (b16v) and
// their per-32 sums as int32 (b32).
struct TokSb {
  __m512i x[4];
  __m128i mul8;
  __m256i b16v, b32;
};

template <KKind K>
inline void LoadTokSb(const int8_t* x, const int16_t* mul, const int16_t* b16, int64_t i, TokSb* t) {
  for (int p = 0; p < 4; ++p) {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 32 * PairLo<K>(p)));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 32 * PairHi<K>(p)));
    t->x[p] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  }
  t->mul8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(mul + 8 * i));
  t->b16v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b16 + 16 * i));
  t->b32 = _mm256_madd_epi16(t->b16v, _mm256_set1_epi16(1));
}

// vpermw indices spreading the int16 factors over pair p's 16-bit words.
// Q4_K/Q5_K: factor s = sc_s * mul_s at word s; pair p takes factor PairLo
// on its low 256 bits, PairHi on the high ones. Q6_K: word e = sc[2e] *
// mul_e, word 8 + e = sc[2e+1] * mul_e (a 16-value half each); pair p's four
// 128-bit lanes are sub-block 2p's halves, then 2p+1's.
template <KKind K>
inline __m512i FactorIdx(int p) {
  if constexpr (K == KKind::kQ6) {
    const __m256i lo = _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(8 + 2 * p)),
                                        _mm_set1_epi16(static_cast<int16_t>(2 * p)));
    const __m256i hi = _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(9 + 2 * p)),
                                        _mm_set1_epi16(static_cast<int16_t>(2 * p + 1)));
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  } else {
    return Halves16(PairLo<K>(p), PairHi<K>(p));
  }
}

// The integer work of one row, one token, one super-block: int32 lanes whose
// sum is isum (*v1) and, for Q4_K / Q5_K, imin (*v2).
template <KKind K>
inline void RowSbInts(const typename KTraits<K>::Block& b, const TokSb& tk, __m256i* v1, __m256i* v2) {
  __m512i w[4];
  UnpackWeights(b, w);
  __m512i fm;
  __m256i off = _mm256_setzero_si256();
  if constexpr (KTraits<K>::kMins) {
    alignas(16) uint8_t sm[16];
    UnpackScalesK4(b.scales, sm);
    const __m128i smv = _mm_load_si128(reinterpret_cast<const __m128i*>(sm));
    fm = _mm512_castsi128_si512(_mm_mullo_epi16(_mm_cvtepu8_epi16(smv), tk.mul8));
    *v2 = _mm256_mullo_epi32(tk.b32, _mm256_cvtepu8_epi32(_mm_srli_si128(smv, 8)));
  } else {
    const __m128i even_odd = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
    fm = _mm512_castsi256_si512(_mm256_mullo_epi16(_mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, even_odd)),
                                                   _mm256_broadcastsi128_si256(tk.mul8)));
    off = _mm256_slli_epi32(_mm256_madd_epi16(_mm256_cvtepi8_epi16(sc8), tk.b16v), 5);
    *v2 = _mm256_setzero_si256();
  }
  __m512i acc = _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int p = 0; p < 4; ++p) {
    const __m512i f = _mm512_permutexvar_epi16(FactorIdx<K>(p), fm);
    acc = _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(w[p], tk.x[p]), f);
  }
  *v1 = _mm256_sub_epi32(Fold16(acc), off);
}

// One row, one token: the AVX2 KRowDot's f32 steps (scalar fma, same order).
template <KKind K>
float KRowDot(const KernelArgs& a, int64_t r, int t) {
  using Tr = KTraits<K>;
  const auto* b = reinterpret_cast<const typename Tr::Block*>(a.w->data.data() + r * a.row_bytes);
  const int64_t nb = a.w->row_len / QK_K;
  const int8_t* xq = a.q->q(t);
  const float* base = a.q->group_base(t);
  float acc = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    TokSb tk;
    LoadTokSb<K>(xq + i * QK_K, a.q->muls(t), a.q->sums16(t), i, &tk);
    __m256i v1, v2;
    RowSbInts<K>(b[i], tk, &v1, &v2);
    const __m256i h = _mm256_hadd_epi32(v1, v2);
    __m128i hs = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
    hs = _mm_hadd_epi32(hs, hs);
    const __m128 f = _mm_cvtepi32_ps(hs);
    acc = __builtin_fmaf(_mm_cvtss_f32(f), F16(b[i].d) * base[i], acc);
    if constexpr (Tr::kMins) acc = __builtin_fmaf(-_mm_cvtss_f32(_mm_movehdup_ps(f)), F16(b[i].dmin) * base[i], acc);
  }
  return acc;
}

// 8 rows x one token: the AVX2 KRow8's f32 steps on 8 lanes.
// REQUIRES nb <= kMaxSb (else KRowDot).
constexpr int64_t kMaxSb = 32;

template <KKind K>
void KRow8(const KernelArgs& a, int64_t r, int t) {
  using Tr = KTraits<K>;
  const int64_t nb = a.w->row_len / QK_K;
  const int8_t* xq = a.q->q(t);
  const float* base = a.q->group_base(t);
  TokSb tk[kMaxSb];
  for (int64_t i = 0; i < nb; ++i) LoadTokSb<K>(xq + i * QK_K, a.q->muls(t), a.q->sums16(t), i, &tk[i]);
  __m256i v1[kMaxSb][8], v2[kMaxSb][8];
  alignas(16) uint16_t dd[kMaxSb][8], dm[kMaxSb][8];
  for (int rr = 0; rr < 8; ++rr) {
    const auto* b = reinterpret_cast<const typename Tr::Block*>(a.w->data.data() + (r + rr) * a.row_bytes);
    for (int64_t i = 0; i < nb; ++i) {
      RowSbInts<K>(b[i], tk[i], &v1[i][rr], &v2[i][rr]);
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

// ------------------------------------------------------------ tile kernel
//
// zmm lanes: 8 tokens x 2 consecutive 4-value groups, interleaved (lane 2m:
// token m, group g; lane 2m+1: token m, group g+1), so each vpdpbusd does 64
// multiply-adds with the weights of groups g, g+1 broadcast as one qword
// (a plain load). The activations are put in this order once per call
// (TileActs), the token tiles' (act_quant.h) 64 bytes per group pair by one
// vpermd. A sub-block's sums are cut into chunks small enough for every
// lane to fit int16 (Q4_K: 4 vpdpbusd, 16 x 15 x 127 = 30480; Q5_K: 2,
// 8 x 31 x 127; Q6_K: 1, 4 x 63 x 127), so one vpdpwssd against (sc * mul, 0)
// int16 pairs scales a chunk and adds it to the int32 total:
// c_lo16 * sc * mul + c_hi16 * 0 = c * sc * mul, exactly.

// One super-block of one row, unpacked for the tile kernel.
struct alignas(64) KBlock {
  uint8_t w[256];   // unsigned weights in k order
  int32_t sc[16];   // Q4_K/Q5_K: sc_s (s < 8); Q6_K: its 16 signed scales
  // pair_s as int16 pairs, Q6_K (sc[2s], sc[2s+1]), Q4_K / Q5_K (m[s], m[s]):
  // pairs[q] holds pair_2q in lanes 0-7, pair_2q+1 in lanes 8-15.
  alignas(64) int32_t pairs[4][16];
  float d, dmin;
};

inline int32_t Pair16(int16_t lo, int16_t hi) {
  return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint16_t>(lo)) |
                              (static_cast<uint32_t>(static_cast<uint16_t>(hi)) << 16));
}

template <KKind K>
inline void Unpack(const typename KTraits<K>::Block& b, KBlock* kb) {
  __m512i w[4];
  UnpackWeights(b, w);
  for (int p = 0; p < 4; ++p) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(kb->w + 32 * PairLo<K>(p)), _mm512_castsi512_si256(w[p]));
    _mm256_store_si256(reinterpret_cast<__m256i*>(kb->w + 32 * PairHi<K>(p)), _mm512_extracti64x4_epi64(w[p], 1));
  }
  int32_t pair[8];
  if constexpr (KTraits<K>::kMins) {
    alignas(16) uint8_t sm[16];
    UnpackScalesK4(b.scales, sm);
    for (int s = 0; s < 8; ++s) {
      kb->sc[s] = sm[s];
      pair[s] = Pair16(sm[8 + s], sm[8 + s]);
    }
    kb->d = F16(b.d);
    kb->dmin = F16(b.dmin);
  } else {
    for (int j = 0; j < 16; ++j) kb->sc[j] = b.scales[j];
    for (int s = 0; s < 8; ++s) pair[s] = Pair16(b.scales[2 * s], b.scales[2 * s + 1]);
    kb->d = F16(b.d);
    kb->dmin = 0.0f;
  }
  for (int q = 0; q < 4; ++q)
    _mm512_store_si512(kb->pairs[q], _mm512_inserti64x4(_mm512_set1_epi32(pair[2 * q]), _mm256_set1_epi32(pair[2 * q + 1]), 1));
}

struct alignas(64) Line64 {
  int8_t b[64];
};

// The token tiles' activations, interleaved for the zmm lanes: tile v's
// group pair g2 at line v * n/8 + g2.
struct TileActs {
  std::vector<Line64> lines;
  void Build(const QuantizedActs& q) {
    const int64_t per_tile = q.n / 8;
    lines.resize(static_cast<size_t>(q.n_tiles * per_tile));
    const __m512i idx = _mm512_setr_epi32(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
    for (int v = 0; v < q.n_tiles; ++v) {
      const int8_t* src = q.tile_q(v);
      for (int64_t g2 = 0; g2 < per_tile; ++g2)
        _mm512_store_si512(lines[v * per_tile + g2].b, _mm512_permutexvar_epi32(idx, _mm512_loadu_si512(src + 64 * g2)));
    }
  }
};

// Pointers for the tiles v0 .. v0+NV-1.
template <int NV>
struct TilePtrs {
  const int8_t* x[NV];  // TileActs lines
  const int16_t* mul[NV];
  const int16_t* sum[NV];
  const float* base[NV];
  TilePtrs() = default;
  TilePtrs(const QuantizedActs& a, const TileActs& ta, int v0) {
    for (int v = 0; v < NV; ++v) {
      x[v] = ta.lines[(v0 + v) * (a.n / 8)].b;
      mul[v] = a.tile_mul(v0 + v);
      sum[v] = a.tile_sums16(v0 + v);
      base[v] = a.tile_base(v0 + v);
    }
  }
};

template <KKind K>
constexpr int kChunk = K == KKind::kQ4 ? 4 : K == KKind::kQ5 ? 2 : 1;  // vpdpbusd per int16-safe chunk

// Super-block i of R rows (kb[r * nb]) x NV 8-token tiles; acc[r * ld + v]
// holds row r's f32 sums for tile v's 8 tokens.
template <KKind K, int R, int NV>
inline void KTileSb(const KBlock* kb, int64_t nb, const TilePtrs<NV>& tp, int64_t i, __m256* acc, int ld) {
  using Tr = KTraits<K>;
  __m512i tot[R][NV];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) tot[r][v] = _mm512_setzero_si512();
#pragma GCC unroll 1
  for (int s = 0; s < 8; ++s) {
    // (mul, 0) int16 pairs: tile_mul's (mul, mul) per token, zero-extended
    // to one int32 per lane, i.e. token m's in lanes 2m and 2m+1.
    __m512i mulm[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v)
      mulm[v] = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(tp.mul[v] + (8 * i + s) * 16)));
#pragma GCC unroll 4
    for (int j0 = 0; j0 < 4; j0 += kChunk<K>) {
      __m512i c[R][NV];
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) c[r][v] = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int j = j0; j < j0 + kChunk<K>; ++j) {
        __m512i x[NV];
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) x[v] = _mm512_load_si512(tp.x[v] + (32 * i + 4 * s + j) * 64);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          int64_t w8;
          std::memcpy(&w8, kb[r * nb].w + 32 * s + 8 * j, 8);
          const __m512i wv = _mm512_set1_epi64(w8);
#pragma GCC unroll 8
          for (int v = 0; v < NV; ++v) c[r][v] = _mm512_dpbusd_epi32(c[r][v], wv, x[v]);
        }
      }
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        // Q6_K: chunks 0-1 are the sub-block's first 16 values (sc[2s]), 2-3 the rest.
        const __m512i sc = _mm512_set1_epi32(kb[r * nb].sc[Tr::kMins ? s : 2 * s + j0 / 2]);
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) tot[r][v] = _mm512_dpwssd_epi32(tot[r][v], c[r][v], _mm512_mullo_epi16(mulm[v], sc));
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const KBlock& b = kb[r * nb];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      const __m256 base = _mm256_loadu_ps(tp.base[v] + 8 * i);
      // imin, or the Q6_K offset sum: sum_s pair_s . (b16 pairs of sub-block s), two s per zmm.
      __m512i tz = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q)
        tz = _mm512_dpwssd_epi32(tz, _mm512_load_si512(b.pairs[q]), _mm512_loadu_si512(tp.sum[v] + (8 * i + 2 * q) * 16));
      const __m256i t = Fold16(tz);
      // Token m's two lanes 2m, 2m+1 -> lane m.
      const __m256i c = _mm512_cvtepi64_epi32(_mm512_add_epi32(tot[r][v], _mm512_srli_epi64(tot[r][v], 32)));
      __m256& o = acc[r * ld + v];
      if constexpr (Tr::kMins) {
        o = _mm256_fmadd_ps(_mm256_cvtepi32_ps(c), _mm256_mul_ps(_mm256_set1_ps(b.d), base), o);
        o = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(t), _mm256_mul_ps(_mm256_set1_ps(b.dmin), base), o);
      } else {
        const __m256i isum = _mm256_sub_epi32(c, _mm256_slli_epi32(t, 5));
        o = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(_mm256_set1_ps(b.d), base), o);
      }
    }
  }
}

// Rows in blocks of kRowBlock (unpacked once), tokens in passes of up to
// kPassTiles tiles. Within a pass, super-block by super-block, 4 rows at a
// time go over every tile pair: the 4 rows' weights (1 KB) and the pass's
// activations for the super-block (16 KB) both stay in L1.
constexpr int kRowBlock = 8;
constexpr int kPassTiles = 8;

template <KKind K>
void KTilePass(const KernelArgs& a, const TileActs& ta, const KBlock* kbs, int64_t nb, int64_t r, int rows, int v0,
               int nv) {
  TilePtrs<2> pairs[kPassTiles / 2];
  const int n_pairs = nv / 2;
  for (int p = 0; p < n_pairs; ++p) pairs[p] = TilePtrs<2>(*a.q, ta, v0 + 2 * p);
  TilePtrs<1> odd;
  if (nv % 2) odd = TilePtrs<1>(*a.q, ta, v0 + nv - 1);
  __m256 acc[kRowBlock * kPassTiles];
  for (auto& x : acc) x = _mm256_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    int rr = 0;
    for (; rr + 4 <= rows; rr += 4) {
      for (int p = 0; p < n_pairs; ++p)
        KTileSb<K, 4, 2>(kbs + rr * nb + i, nb, pairs[p], i, acc + rr * kPassTiles + 2 * p, kPassTiles);
      if (nv % 2) KTileSb<K, 4, 1>(kbs + rr * nb + i, nb, odd, i, acc + rr * kPassTiles + nv - 1, kPassTiles);
    }
    for (; rr < rows; ++rr) {
      for (int p = 0; p < n_pairs; ++p)
        KTileSb<K, 1, 2>(kbs + rr * nb + i, nb, pairs[p], i, acc + rr * kPassTiles + 2 * p, kPassTiles);
      if (nv % 2) KTileSb<K, 1, 1>(kbs + rr * nb + i, nb, odd, i, acc + rr * kPassTiles + nv - 1, kPassTiles);
    }
  }
  for (int v = 0; v < nv; ++v) {
    const int t0 = (v0 + v) * kTileTokens;
    const int cnt = Min(a.n_tok - t0, kTileTokens);
    if (rows == kRowBlock) {
      // 8 rows x 8 tokens -> 8 tokens x 8 rows: contiguous stores per token.
      __m256 m[8];
      for (int rr = 0; rr < 8; ++rr) m[rr] = acc[rr * kPassTiles + v];
      Transpose8(m);
      for (int l = 0; l < cnt; ++l) _mm256_storeu_ps(a.y + (t0 + l) * a.ldy + r, m[l]);
    } else {
      for (int rr = 0; rr < rows; ++rr) {
        alignas(32) float out[8];
        _mm256_store_ps(out, acc[rr * kPassTiles + v]);
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
  TileActs ta;
  ta.Build(*a.q);
  std::vector<KBlock> kbs(static_cast<size_t>(kRowBlock * nb));
  for (int64_t r = r0; r < r1; r += kRowBlock) {
    const int rows = static_cast<int>(Min<int64_t>(kRowBlock, r1 - r));
    for (int rr = 0; rr < rows; ++rr) {
      const auto* b = reinterpret_cast<const typename Tr::Block*>(a.w->data.data() + (r + rr) * a.row_bytes);
      for (int64_t i = 0; i < nb; ++i) Unpack<K>(b[i], &kbs[rr * nb + i]);
    }
    for (int v = 0; v < tiles; v += kPassTiles)
      KTilePass<K>(a, ta, kbs.data(), nb, r, rows, v, Min(kPassTiles, tiles - v));
  }
}

template <KKind K>
void KRows(const KernelArgs& a, int64_t r0, int64_t r1) {
  if (a.q->has_tiles()) return KTileRows<K>(a, r0, r1);
  for (int64_t rb = r0; rb < r1; rb += 16) {
    const int64_t re = Min(r1, rb + 16);
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

}  // namespace tenzro::runtime::avx512
