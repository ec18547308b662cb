// aarch64 kernels with the int8 matrix-multiply extension (compiled with
// -march=armv8.2-a+dotprod+i8mm; called only when core/cpu.h reports i8mm):
// Q8_0 and the k-quants for batches of 2+ tokens, 2 rows x 2 tokens per
// SMMLA (a 2x8 by 8x2 int8 product into a 2x2 int32 tile: 32 multiply-adds,
// twice SDOT's 16). One token (decode) runs the SDOT row kernels of
// kernels_arm.h; float weights fall back to kernels_neon.cc.
//
// Layout: the activations of each token pair are interleaved 8 values at a
// time (16 bytes: token 2p's values 8c..8c+7, then token 2p+1's), the two
// rows' weights the same way, so each SMMLA reads one 16-byte register of
// each. An odd last row or token is paired with itself and its copy dropped.
// The f32 steps per output are those of kernels_arm.h (the AVX2 ones), on the
// 4 lanes [row a x token 0, a x 1, b x 0, b x 1] at once.
#include "runtime/kernels_arm.h"

namespace tenzro::runtime::i8mm {
namespace {

using namespace arm;

inline int8x16_t Zip1(int8x16_t a, int8x16_t b) {
  return vreinterpretq_s8_s64(vzip1q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
}
inline int8x16_t Zip2(int8x16_t a, int8x16_t b) {
  return vreinterpretq_s8_s64(vzip2q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
}

// Token pairs, interleaved as above. REQUIRES n % 16 == 0.
struct PairActs {
  int64_t n = 0;
  int n_pairs = 0;
  std::vector<int8_t> x;
  const int8_t* pair(int p) const { return x.data() + static_cast<int64_t>(p) * 2 * n; }
};

void Interleave(const QuantizedActs& q, int n_tok, PairActs* out) {
  out->n = q.n;
  out->n_pairs = (n_tok + 1) / 2;
  out->x.resize(static_cast<size_t>(out->n_pairs) * 2 * q.n);
  for (int p = 0; p < out->n_pairs; ++p) {
    const int8_t* a = q.q(2 * p);
    const int8_t* b = q.q(std::min(2 * p + 1, n_tok - 1));
    int8_t* d = out->x.data() + static_cast<int64_t>(p) * 2 * q.n;
    for (int64_t k = 0; k < q.n; k += 16) {
      const int8x16_t va = vld1q_s8(a + k), vb = vld1q_s8(b + k);
      vst1q_s8(d + 2 * k, Zip1(va, vb));
      vst1q_s8(d + 2 * k + 16, Zip2(va, vb));
    }
  }
}

// Stores the 4 lanes [ra x t0, ra x t1, rb x t0, rb x t1], skipping copies.
inline void Store4(const KernelArgs& a, float32x4_t v, int64_t ra, int64_t rb, int t0, int t1) {
  a.y[t0 * a.ldy + ra] = vgetq_lane_f32(v, 0);
  if (t1 != t0) a.y[t1 * a.ldy + ra] = vgetq_lane_f32(v, 1);
  if (rb != ra) {
    a.y[t0 * a.ldy + rb] = vgetq_lane_f32(v, 2);
    if (t1 != t0) a.y[t1 * a.ldy + rb] = vgetq_lane_f32(v, 3);
  }
}

inline int32x4_t Lanes(int32_t ra, int32_t rb) { return vcombine_s32(vdup_n_s32(ra), vdup_n_s32(rb)); }
inline int32x4_t Tokens(int32_t t0, int32_t t1) {
  const int32x2_t v = vset_lane_s32(t1, vdup_n_s32(t0), 1);
  return vcombine_s32(v, v);
}

// ---------------------------------------------------------------- Q8_0

void Q8_0Mmla(const KernelArgs& a, int64_t r0, int64_t r1) {
  if (a.n_tok < 2) return Q8_0Rows<SdotDot>(a, r0, r1);
  PairActs xp;
  Interleave(*a.q, a.n_tok, &xp);
  const int64_t nb = a.w->row_len / 32;
  const int32x4_t zero = vdupq_n_s32(0);
  for (int64_t ra = r0; ra < r1; ra += 2) {
    const int64_t rb = ra + 1 < r1 ? ra + 1 : ra;
    const auto* ba = reinterpret_cast<const quant::block_q8_0*>(a.w->data.data() + ra * a.row_bytes);
    const auto* bb = reinterpret_cast<const quant::block_q8_0*>(a.w->data.data() + rb * a.row_bytes);
    for (int p = 0; p < xp.n_pairs; ++p) {
      const int t0 = 2 * p, t1 = std::min(2 * p + 1, a.n_tok - 1);
      const int8_t* x = xp.pair(p);
      const float* dx0 = a.q->scale(t0);
      const float* dx1 = a.q->scale(t1);
      float32x4_t acc[8];
      for (auto& v : acc) v = vdupq_n_f32(0.0f);
      for (int64_t g = 0; g < nb; g += 8) {
        const int cnt = nb - g < 8 ? static_cast<int>(nb - g) : 8;
#pragma GCC unroll 8
        for (int s = 0; s < 8; ++s) {
          if (s >= cnt) {  // AVX2's empty lanes: acc + 0 * (0 * 0)
            acc[s] = vfmaq_f32(acc[s], vdupq_n_f32(0.0f), vdupq_n_f32(0.0f));
            continue;
          }
          const int64_t blk = g + s;
          const int8x16_t wa0 = vld1q_s8(ba[blk].qs), wa1 = vld1q_s8(ba[blk].qs + 16);
          const int8x16_t wb0 = vld1q_s8(bb[blk].qs), wb1 = vld1q_s8(bb[blk].qs + 16);
          const int8_t* xb = x + blk * 64;
          int32x4_t m = vmmlaq_s32(zero, Zip1(wa0, wb0), vld1q_s8(xb));
          m = vmmlaq_s32(m, Zip2(wa0, wb0), vld1q_s8(xb + 16));
          m = vmmlaq_s32(m, Zip1(wa1, wb1), vld1q_s8(xb + 32));
          m = vmmlaq_s32(m, Zip2(wa1, wb1), vld1q_s8(xb + 48));
          const float wda = F16(ba[blk].d), wdb = F16(bb[blk].d);
          const float sc[4] = {wda * dx0[blk], wda * dx1[blk], wdb * dx0[blk], wdb * dx1[blk]};
          acc[s] = vfmaq_f32(acc[s], vcvtq_f32_s32(m), vld1q_f32(sc));
        }
      }
      // AVX2's HSum on each lane: (s + s+4), then (0 + 2) + (1 + 3).
      float32x4_t h[4];
      for (int k = 0; k < 4; ++k) h[k] = vaddq_f32(acc[k], acc[k + 4]);
      Store4(a, vaddq_f32(vaddq_f32(h[0], h[2]), vaddq_f32(h[1], h[3])), ra, rb, t0, t1);
    }
  }
}

// ---------------------------------------------------------------- k-quants

template <KKind K>
void KMmla(const KernelArgs& a, int64_t r0, int64_t r1) {
  using Tr = KTraits<K>;
  if (a.n_tok < 2) return KRows<SdotDot, K>(a, r0, r1);
  PairActs xp;
  Interleave(*a.q, a.n_tok, &xp);
  const int64_t nb = a.w->row_len / QK_K;
  const int32x4_t zero = vdupq_n_s32(0);
  // 16-value chunks per scale: Q4_K/Q5_K one scale per 32 values.
  constexpr int kPer = Tr::kMins ? 2 : 1;
  std::vector<float32x4_t> acc(static_cast<size_t>(xp.n_pairs));
  for (int64_t ra = r0; ra < r1; ra += 2) {
    const int64_t rb = ra + 1 < r1 ? ra + 1 : ra;
    const auto* ba = reinterpret_cast<const typename Tr::Block*>(a.w->data.data() + ra * a.row_bytes);
    const auto* bb = reinterpret_cast<const typename Tr::Block*>(a.w->data.data() + rb * a.row_bytes);
    std::fill(acc.begin(), acc.end(), vdupq_n_f32(0.0f));
    for (int64_t i = 0; i < nb; ++i) {
      KSb ka, kb;
      Unpack(ba[i], &ka);
      Unpack(bb[i], &kb);
      int8x16_t wz[32];
      for (int h = 0; h < 16; ++h) wz[2 * h] = Zip1(ka.w[h], kb.w[h]), wz[2 * h + 1] = Zip2(ka.w[h], kb.w[h]);
      int32x4_t scv[16], mv[8];
      for (int h = 0; h < 16; ++h) scv[h] = Lanes(ka.sc[h], kb.sc[h]);
      for (int j = 0; j < 8; ++j) mv[j] = Lanes(ka.m[j], kb.m[j]);
      const float32x4_t dv = vcombine_f32(vdup_n_f32(ka.d), vdup_n_f32(kb.d));
      const float32x4_t dminv = vcombine_f32(vdup_n_f32(ka.dmin), vdup_n_f32(kb.dmin));
      for (int p = 0; p < xp.n_pairs; ++p) {
        const int t0 = 2 * p, t1 = std::min(2 * p + 1, a.n_tok - 1);
        const int8_t* x = xp.pair(p) + i * 2 * QK_K;
        const int16_t* mu0 = a.q->muls(t0) + 8 * i;
        const int16_t* mu1 = a.q->muls(t1) + 8 * i;
        int32x4_t isum = zero;
#pragma GCC unroll 16
        for (int h = 0; h < 16; h += kPer) {
          int32x4_t m = zero;
#pragma GCC unroll 4
          for (int c = 2 * h; c < 2 * (h + kPer); ++c) m = vmmlaq_s32(m, wz[c], vld1q_s8(x + 16 * c));
          isum = vmlaq_s32(isum, m, vmulq_s32(scv[h], Tokens(mu0[h / 2], mu1[h / 2])));
        }
        const float b0 = a.q->group_base(t0)[i], b1 = a.q->group_base(t1)[i];
        const float32x2_t bp = vset_lane_f32(b1, vdup_n_f32(b0), 1);
        const float32x4_t basev = vcombine_f32(bp, bp);
        float32x4_t v = vfmaq_f32(acc[p], vcvtq_f32_s32(isum), vmulq_f32(dv, basev));
        if constexpr (Tr::kMins) {
          const int16_t* s0 = a.q->sums16(t0) + 16 * i;
          const int16_t* s1 = a.q->sums16(t1) + 16 * i;
          int32x4_t imin = zero;
          for (int j = 0; j < 8; ++j)
            imin = vmlaq_s32(imin, mv[j], Tokens(s0[2 * j] + s0[2 * j + 1], s1[2 * j] + s1[2 * j + 1]));
          v = vfmsq_f32(v, vcvtq_f32_s32(imin), vmulq_f32(dminv, basev));
        }
        acc[p] = v;
      }
    }
    for (int p = 0; p < xp.n_pairs; ++p) Store4(a, acc[p], ra, rb, 2 * p, std::min(2 * p + 1, a.n_tok - 1));
  }
}

}  // namespace

RowsKernel GetKernel(quant::GgmlType type) {
  switch (type) {
    case GgmlType::Q8_0: return Q8_0Mmla;
    case GgmlType::Q4_K: return KMmla<KKind::kQ4>;
    case GgmlType::Q5_K: return KMmla<KKind::kQ5>;
    case GgmlType::Q6_K: return KMmla<KKind::kQ6>;
    default: return nullptr;
  }
}

}  // namespace tenzro::runtime::i8mm
