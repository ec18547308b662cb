// tenzro runtime (internal): the aarch64 kernel bodies shared by
// kernels_neon.cc, kernels_dotprod.cc and kernels_i8mm.cc. Include only from
// those files: everything here has internal linkage, so each file compiles
// its own copy with its own -march (cmake/TenzroModule.cmake) and the linker
// never hands a dotprod-compiled copy to the baseline NEON code.
//
// Output contract (kernels.h): bit-identical to the AVX2 kernels
// (kernels_avx2.cc, kquant_avx2.cc) for every type and batch. Integer sums are
// exact whatever their order (every product fits: |w| <= 128, |q| <= 127, the
// bounds of act_quant.h; int32 wrap-around is exact modulo 2^32 and every
// final sum fits), so the integer work below is shaped for ARM freely; the f32
// steps per output element are the AVX2 ones, operation for operation:
//  * F32/F16/BF16: 8 f32 accumulators (lane l takes k = l mod 8, one FMA per
//    value, in k order; here two 4-lane vectors), summed as AVX2's HSum
//    ((l + l+4), then (0 + 2) + (1 + 3)), plus the scalar tail (k >= n & ~7),
//    the same explicit fma chain in both.
//  * Q8_0: per group of 8 blocks, lane s += float(isum of block s) *
//    (f16 weight scale * activation block scale), one FMA; missing blocks of
//    a short last group add 0 * (0 * 0); then the same HSum.
//  * Q4_K/Q5_K/Q6_K: per super-block i, in this order,
//    acc = fma(float(isum), d * base, acc); acc = fma(-float(imin), dmin * base, acc)
//    (Q6_K: the first step only), isum/imin as in kquant_avx2.cc (Q6_K's -32
//    offset is taken into the weights here: the same integer).
#pragma once

#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "runtime/kernels.h"

namespace tenzro::runtime::arm {
namespace {

using quant::GgmlType;
using quant::QK_K;

// Hardware f16 -> f32 (FCVT; exact, as the AVX2 kernels' _cvtsh_ss).
inline float F16(uint16_t h) {
  __fp16 v;
  std::memcpy(&v, &h, 2);
  return static_cast<float>(v);
}

// AVX2's HSum of the 8 lanes (lo: 0-3, hi: 4-7), in its order.
inline float HSum8(float32x4_t lo, float32x4_t hi) {
  const float32x4_t s = vaddq_f32(lo, hi);
  const float32x2_t t = vadd_f32(vget_low_f32(s), vget_high_f32(s));  // (s0 + s2, s1 + s3)
  return vget_lane_f32(t, 0) + vget_lane_f32(t, 1);
}

// ---------------------------------------------------------------- integer dot policies
//
// Dot(acc, a, b): acc + int32 lanes whose total is the dot product of the 16
// int8 values of a and b (how the 16 products are spread over the lanes
// differs between policies; only the total is used).
struct NeonDot {  // armv8-a: SMULL + SMLAL2 (pairs fit int16: 2 * 128 * 127) + SADALP
  static inline int32x4_t Dot(int32x4_t acc, int8x16_t a, int8x16_t b) {
    const int16x8_t p = vmlal_high_s8(vmull_s8(vget_low_s8(a), vget_low_s8(b)), a, b);
    return vpadalq_s16(acc, p);
  }
};

#if defined(__ARM_FEATURE_DOTPROD)
struct SdotDot {  // armv8.2-a+dotprod: one SDOT
  static inline int32x4_t Dot(int32x4_t acc, int8x16_t a, int8x16_t b) { return vdotq_s32(acc, a, b); }
};
#endif

// ---------------------------------------------------------------- floats

inline float32x4_t LoadF32(const uint8_t* p) { return vld1q_f32(reinterpret_cast<const float*>(p)); }
inline float32x4_t LoadF16(const uint8_t* p) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p))));
}
inline float32x4_t LoadBf16(const uint8_t* p) {
  return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p)), 16));
}
inline float ScalarF32(const uint8_t* p) { float v; std::memcpy(&v, p, 4); return v; }
inline float ScalarF16(const uint8_t* p) { uint16_t h; std::memcpy(&h, p, 2); return quant::Fp16ToFp32(h); }
inline float ScalarBf16(const uint8_t* p) { uint16_t h; std::memcpy(&h, p, 2); return quant::Bf16ToFp32(h); }

// R rows x T tokens, each (r, t) with its 8 lanes in two vectors.
template <int R, int T, int kElemBytes, float32x4_t (*Load)(const uint8_t*), float (*Scalar)(const uint8_t*)>
void FloatTile(const KernelArgs& a, int64_t r, int t0) {
  const int64_t n = a.w->row_len;
  const int64_t nv = n & ~int64_t{7};
  const uint64_t rb = a.row_bytes;
  const uint8_t* rows[R];
  for (int i = 0; i < R; ++i) rows[i] = a.w->data.data() + (r + i) * rb;
  const float* xs[T];
  for (int j = 0; j < T; ++j) xs[j] = a.x + (t0 + j) * n;
  float32x4_t acc[R][T][2];
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < T; ++j) acc[i][j][0] = acc[i][j][1] = vdupq_n_f32(0.0f);
  for (int64_t k = 0; k < nv; k += 8) {
    float32x4_t xv[T][2];
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) xv[j][0] = vld1q_f32(xs[j] + k), xv[j][1] = vld1q_f32(xs[j] + k + 4);
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      const float32x4_t w0 = Load(rows[i] + k * kElemBytes), w1 = Load(rows[i] + (k + 4) * kElemBytes);
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) {
        acc[i][j][0] = vfmaq_f32(acc[i][j][0], w0, xv[j][0]);
        acc[i][j][1] = vfmaq_f32(acc[i][j][1], w1, xv[j][1]);
      }
    }
  }
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < T; ++j) {
      float tail = 0.0f;
      for (int64_t k = nv; k < n; ++k) tail = std::fma(Scalar(rows[i] + k * kElemBytes), xs[j][k], tail);
      a.y[(t0 + j) * a.ldy + r + i] = HSum8(acc[i][j][0], acc[i][j][1]) + tail;
    }
}

template <int kElemBytes, float32x4_t (*Load)(const uint8_t*), float (*Scalar)(const uint8_t*)>
void FloatRows(const KernelArgs& a, int64_t r0, int64_t r1) {
  int t = 0;
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

// ---------------------------------------------------------------- Q8_0

// Lane s of the result = total of p[s] (s = 0..3).
inline int32x4_t Reduce4(const int32x4_t* p) {
  return vpaddq_s32(vpaddq_s32(p[0], p[1]), vpaddq_s32(p[2], p[3]));
}

// One row, up to 4 tokens; a group's 8 blocks of weights stay in registers
// for every token of the tile.
template <class D, int T>
void Q8_0Tile(const KernelArgs& a, int64_t r, int t0) {
  const auto* b = reinterpret_cast<const quant::block_q8_0*>(a.w->data.data() + r * a.row_bytes);
  const int64_t nb = a.w->row_len / 32;
  float32x4_t acc[T][2];
  for (int j = 0; j < T; ++j) acc[j][0] = acc[j][1] = vdupq_n_f32(0.0f);
  const int32x4_t zero = vdupq_n_s32(0);
  for (int64_t g = 0; g < nb; g += 8) {
    const int cnt = nb - g < 8 ? static_cast<int>(nb - g) : 8;
    float wd[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int8x16_t w[8][2];
#pragma GCC unroll 8
    for (int s = 0; s < 8; ++s) {
      if (s < cnt) {
        wd[s] = F16(b[g + s].d);
        w[s][0] = vld1q_s8(b[g + s].qs);
        w[s][1] = vld1q_s8(b[g + s].qs + 16);
      } else {
        w[s][0] = w[s][1] = vdupq_n_s8(0);  // unused
      }
    }
    const float32x4_t wd0 = vld1q_f32(wd), wd1 = vld1q_f32(wd + 4);
    for (int j = 0; j < T; ++j) {
      const int8_t* x = a.q->q(t0 + j) + g * 32;
      int32x4_t p[8];
#pragma GCC unroll 8
      for (int s = 0; s < 8; ++s)
        p[s] = s < cnt ? D::Dot(D::Dot(zero, w[s][0], vld1q_s8(x + 32 * s)), w[s][1], vld1q_s8(x + 32 * s + 16)) : zero;
      float dx[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      std::memcpy(dx, a.q->scale(t0 + j) + g, cnt * sizeof(float));
      acc[j][0] = vfmaq_f32(acc[j][0], vcvtq_f32_s32(Reduce4(p)), vmulq_f32(wd0, vld1q_f32(dx)));
      acc[j][1] = vfmaq_f32(acc[j][1], vcvtq_f32_s32(Reduce4(p + 4)), vmulq_f32(wd1, vld1q_f32(dx + 4)));
    }
  }
  for (int j = 0; j < T; ++j) a.y[(t0 + j) * a.ldy + r] = HSum8(acc[j][0], acc[j][1]);
}

template <class D>
void Q8_0Rows(const KernelArgs& a, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    int t = 0;
    for (; t + 4 <= a.n_tok; t += 4) Q8_0Tile<D, 4>(a, r, t);
    switch (a.n_tok - t) {
      case 3: Q8_0Tile<D, 3>(a, r, t); break;
      case 2: Q8_0Tile<D, 2>(a, r, t); break;
      case 1: Q8_0Tile<D, 1>(a, r, t); break;
      default: break;
    }
  }
}

// ---------------------------------------------------------------- k-quants

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

// ggml's get_scale_min_k4 for all eight sub-blocks: out[0..7] scales, out[8..15] mins.
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

// One super-block unpacked: w[2j], w[2j+1] the 32 signed weights of sub-block
// j in k order (Q4_K 0..15, Q5_K 0..31, Q6_K -32..31); sc[h] the int scale
// of values 16h..16h+15 (Q4_K/Q5_K: sub-block h/2's 6-bit scale; Q6_K: its
// int8 scales), m[j] sub-block j's min (Q4_K/Q5_K).
struct KSb {
  int8x16_t w[16];
  int32_t sc[16];
  int32_t m[8];
  float d, dmin;
};

inline void Unpack(const quant::block_q4_K& b, KSb* k) {
  const uint8x16_t m4 = vdupq_n_u8(0x0F);
#pragma GCC unroll 4
  for (int g = 0; g < 4; ++g)
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const uint8x16_t v = vld1q_u8(b.qs + 32 * g + 16 * h);
      k->w[4 * g + h] = vreinterpretq_s8_u8(vandq_u8(v, m4));
      k->w[4 * g + 2 + h] = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
    }
  uint8_t sm[16];
  UnpackScalesK4(b.scales, sm);
  for (int j = 0; j < 8; ++j) k->sc[2 * j] = k->sc[2 * j + 1] = sm[j], k->m[j] = sm[8 + j];
  k->d = F16(b.d);
  k->dmin = F16(b.dmin);
}

inline void Unpack(const quant::block_q5_K& b, KSb* k) {
  const uint8x16_t m4 = vdupq_n_u8(0x0F), b4 = vdupq_n_u8(0x10);
  const uint8x16_t qh[2] = {vld1q_u8(b.qh), vld1q_u8(b.qh + 16)};
#pragma GCC unroll 4
  for (int g = 0; g < 4; ++g)
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const uint8x16_t v = vld1q_u8(b.qs + 32 * g + 16 * h);
      // bit j of qh: the fifth bit of sub-block j's weights.
      const uint8x16_t h0 = vandq_u8(vtstq_u8(qh[h], vdupq_n_u8(1u << (2 * g))), b4);
      const uint8x16_t h1 = vandq_u8(vtstq_u8(qh[h], vdupq_n_u8(1u << (2 * g + 1))), b4);
      k->w[4 * g + h] = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(v, m4), h0));
      k->w[4 * g + 2 + h] = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(v, 4), h1));
    }
  uint8_t sm[16];
  UnpackScalesK4(b.scales, sm);
  for (int j = 0; j < 8; ++j) k->sc[2 * j] = k->sc[2 * j + 1] = sm[j], k->m[j] = sm[8 + j];
  k->d = F16(b.d);
  k->dmin = F16(b.dmin);
}

inline void Unpack(const quant::block_q6_K& b, KSb* k) {
  const uint8x16_t m4 = vdupq_n_u8(0x0F), m30 = vdupq_n_u8(0x30);
  const int8x16_t off = vdupq_n_s8(32);
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h)
#pragma GCC unroll 2
    for (int e = 0; e < 2; ++e) {
      const uint8x16_t qa = vld1q_u8(b.ql + 64 * h + 16 * e);
      const uint8x16_t qb = vld1q_u8(b.ql + 64 * h + 32 + 16 * e);
      const uint8x16_t qh = vld1q_u8(b.qh + 32 * h + 16 * e);
      const uint8x16_t w0 = vorrq_u8(vandq_u8(qa, m4), vandq_u8(vshlq_n_u8(qh, 4), m30));
      const uint8x16_t w1 = vorrq_u8(vandq_u8(qb, m4), vandq_u8(vshlq_n_u8(qh, 2), m30));
      const uint8x16_t w2 = vorrq_u8(vshrq_n_u8(qa, 4), vandq_u8(qh, m30));
      const uint8x16_t w3 = vorrq_u8(vshrq_n_u8(qb, 4), vandq_u8(vshrq_n_u8(qh, 2), m30));
      k->w[8 * h + 0 + e] = vsubq_s8(vreinterpretq_s8_u8(w0), off);
      k->w[8 * h + 2 + e] = vsubq_s8(vreinterpretq_s8_u8(w1), off);
      k->w[8 * h + 4 + e] = vsubq_s8(vreinterpretq_s8_u8(w2), off);
      k->w[8 * h + 6 + e] = vsubq_s8(vreinterpretq_s8_u8(w3), off);
    }
  for (int s = 0; s < 16; ++s) k->sc[s] = b.scales[s];
  for (int j = 0; j < 8; ++j) k->m[j] = 0;
  k->d = F16(b.d);
  k->dmin = 0.0f;
}

// isum of one super-block against one token's 256 activations x (mul: its
// 8 block multipliers): the dot product of each run of values sharing a
// scale (kPer x 16: Q4_K/Q5_K 32, Q6_K 16) times sc * mul, in int32 lanes,
// summed.
template <class D, int kPer>
inline int32_t SbIsum(const KSb& k, const int8_t* x, const int16_t* mul) {
  const int32x4_t zero = vdupq_n_s32(0);
  int32x4_t acc = zero;
#pragma GCC unroll 16
  for (int h = 0; h < 16; h += kPer) {
    int32x4_t p = D::Dot(zero, k.w[h], vld1q_s8(x + 16 * h));
    if constexpr (kPer == 2) p = D::Dot(p, k.w[h + 1], vld1q_s8(x + 16 * h + 16));
    acc = vmlaq_n_s32(acc, p, k.sc[h] * mul[h / 2]);
  }
  return vaddvq_s32(acc);
}

// imin = sum_j m[j] * (b16[2j] + b16[2j+1]).
inline int32_t SbImin(const KSb& k, const int16_t* b16) {
  int32_t s = 0;
  for (int j = 0; j < 8; ++j) s += k.m[j] * (static_cast<int32_t>(b16[2 * j]) + b16[2 * j + 1]);
  return s;
}

// Weight-stationary: per row and super-block, the weights are unpacked once
// into registers and every token of the batch takes its turn (one token:
// the decode row kernel; more: the batch kernel, the same code).
template <class D, KKind K>
void KRows(const KernelArgs& a, int64_t r0, int64_t r1) {
  using Tr = KTraits<K>;
  const int64_t nb = a.w->row_len / QK_K;
  const int n_tok = a.n_tok;
  std::vector<float> acc(static_cast<size_t>(n_tok));
  for (int64_t r = r0; r < r1; ++r) {
    const auto* b = reinterpret_cast<const typename Tr::Block*>(a.w->data.data() + r * a.row_bytes);
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t i = 0; i < nb; ++i) {
      KSb k;
      Unpack(b[i], &k);
      for (int t = 0; t < n_tok; ++t) {
        const int32_t isum = SbIsum<D, Tr::kMins ? 2 : 1>(k, a.q->q(t) + i * QK_K, a.q->muls(t) + 8 * i);
        const float base = a.q->group_base(t)[i];
        float v = std::fma(static_cast<float>(isum), k.d * base, acc[t]);
        if constexpr (Tr::kMins)
          v = std::fma(-static_cast<float>(SbImin(k, a.q->sums16(t) + 16 * i)), k.dmin * base, v);
        acc[t] = v;
      }
    }
    for (int t = 0; t < n_tok; ++t) a.y[t * a.ldy + r] = acc[t];
  }
}

}  // namespace
}  // namespace tenzro::runtime::arm
