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

// Per token pair p and 32-value block b (8 per super-block): the token
// factors as SMMLA lanes, [t0, t1, t0, t1]: the block multipliers (mul) and,
// for the mins, the block activation sums (b16[2b] + b16[2b+1]). Built once
// per call, shared by every row.
struct PairFactors {
  int64_t blocks = 0;  // per token
  std::vector<int32x4_t> mul, sum;
  const int32x4_t* muls(int p) const { return mul.data() + p * blocks; }
  const int32x4_t* sums(int p) const { return sum.data() + p * blocks; }
};

void BuildFactors(const QuantizedActs& q, int n_tok, int n_pairs, PairFactors* f) {
  f->blocks = q.n / 32;
  f->mul.resize(static_cast<size_t>(n_pairs) * f->blocks);
  f->sum.resize(f->mul.size());
  for (int p = 0; p < n_pairs; ++p) {
    const int t0 = 2 * p, t1 = std::min(2 * p + 1, n_tok - 1);
    for (int64_t b = 0; b < f->blocks; ++b) {
      const int32_t m0 = q.muls(t0)[b], m1 = q.muls(t1)[b];
      const int32_t s0 = q.sums16(t0)[2 * b] + q.sums16(t0)[2 * b + 1];
      const int32_t s1 = q.sums16(t1)[2 * b] + q.sums16(t1)[2 * b + 1];
      const int32_t mv[4] = {m0, m1, m0, m1}, sv[4] = {s0, s1, s0, s1};
      f->mul[p * f->blocks + b] = vld1q_s32(mv);
      f->sum[p * f->blocks + b] = vld1q_s32(sv);
    }
  }
}

// One unpacked super-block of a row pair: weights interleaved for SMMLA
// (wz[c]: values 8c..8c+7 of row a, then of row b), per-16 scales and
// per-32 mins as lanes [a, a, b, b], d and dmin likewise.
struct PairSb {
  int8x16_t wz[32];
  int32x4_t sc[16], m[8];
  float32x4_t d, dmin;
};

template <typename Block>
inline void UnpackPair(const Block& ba, const Block& bb, PairSb* ps) {
  KSb ka, kb;
  Unpack(ba, &ka);
  Unpack(bb, &kb);
  for (int h = 0; h < 16; ++h) ps->wz[2 * h] = Zip1(ka.w[h], kb.w[h]), ps->wz[2 * h + 1] = Zip2(ka.w[h], kb.w[h]);
  for (int h = 0; h < 16; ++h) ps->sc[h] = Lanes(ka.sc[h], kb.sc[h]);
  for (int j = 0; j < 8; ++j) ps->m[j] = Lanes(ka.m[j], kb.m[j]);
  ps->d = vcombine_f32(vdup_n_f32(ka.d), vdup_n_f32(kb.d));
  ps->dmin = vcombine_f32(vdup_n_f32(ka.dmin), vdup_n_f32(kb.dmin));
}

// Super-block i of a row pair x NP token pairs p0..p0+NP-1: each run of
// values sharing a scale (Q4_K/Q5_K 32, Q6_K 16) loads its weights once for
// the NP pairs; then per pair the f32 steps on acc[p].
template <KKind K, int NP>
inline void KPairSb(const KernelArgs& a, const PairSb& ps, const PairActs& xp, const PairFactors& pf, int64_t i,
                    int p0, float32x4_t* acc) {
  using Tr = KTraits<K>;
  constexpr int kPer = Tr::kMins ? 2 : 1;  // 16-value chunks per scale
  const int32x4_t zero = vdupq_n_s32(0);
  const int8_t* x[NP];
  const int32x4_t* mul[NP];
  int32x4_t isum[NP];
  for (int q = 0; q < NP; ++q) {
    x[q] = xp.pair(p0 + q) + i * 2 * QK_K;
    mul[q] = pf.muls(p0 + q) + 8 * i;
    isum[q] = zero;
  }
#pragma GCC unroll 16
  for (int h = 0; h < 16; h += kPer) {
    int8x16_t w[2 * kPer];
    for (int c = 0; c < 2 * kPer; ++c) w[c] = ps.wz[2 * h + c];
#pragma GCC unroll 4
    for (int q = 0; q < NP; ++q) {
      int32x4_t m = zero;
#pragma GCC unroll 4
      for (int c = 0; c < 2 * kPer; ++c) m = vmmlaq_s32(m, w[c], vld1q_s8(x[q] + 16 * (2 * h + c)));
      isum[q] = vmlaq_s32(isum[q], m, vmulq_s32(ps.sc[h], mul[q][h / 2]));
    }
  }
  for (int q = 0; q < NP; ++q) {
    const int p = p0 + q;
    const int t0 = 2 * p, t1 = std::min(2 * p + 1, a.n_tok - 1);
    const float b0 = a.q->group_base(t0)[i], b1 = a.q->group_base(t1)[i];
    const float32x2_t bp = vset_lane_f32(b1, vdup_n_f32(b0), 1);
    const float32x4_t basev = vcombine_f32(bp, bp);
    float32x4_t v = vfmaq_f32(acc[p], vcvtq_f32_s32(isum[q]), vmulq_f32(ps.d, basev));
    if constexpr (Tr::kMins) {
      const int32x4_t* sum = pf.sums(p) + 8 * i;
      int32x4_t imin = zero;
      for (int j = 0; j < 8; ++j) imin = vmlaq_s32(imin, ps.m[j], sum[j]);
      v = vfmsq_f32(v, vcvtq_f32_s32(imin), vmulq_f32(ps.dmin, basev));
    }
    acc[p] = v;
  }
}

template <KKind K>
void KMmla(const KernelArgs& a, int64_t r0, int64_t r1) {
  using Tr = KTraits<K>;
  if (a.n_tok < 2) return KRows<SdotDot, K>(a, r0, r1);
  PairActs xp;
  Interleave(*a.q, a.n_tok, &xp);
  PairFactors pf;
  BuildFactors(*a.q, a.n_tok, xp.n_pairs, &pf);
  const int64_t nb = a.w->row_len / QK_K;
  std::vector<float32x4_t> acc(static_cast<size_t>(xp.n_pairs));
  PairSb ps;
  for (int64_t ra = r0; ra < r1; ra += 2) {
    const int64_t rb = ra + 1 < r1 ? ra + 1 : ra;
    const auto* ba = reinterpret_cast<const typename Tr::Block*>(a.w->data.data() + ra * a.row_bytes);
    const auto* bb = reinterpret_cast<const typename Tr::Block*>(a.w->data.data() + rb * a.row_bytes);
    std::fill(acc.begin(), acc.end(), vdupq_n_f32(0.0f));
    for (int64_t i = 0; i < nb; ++i) {
      UnpackPair(ba[i], bb[i], &ps);
      int p = 0;
      for (; p + 4 <= xp.n_pairs; p += 4) KPairSb<K, 4>(a, ps, xp, pf, i, p, acc.data());
      switch (xp.n_pairs - p) {
        case 3: KPairSb<K, 3>(a, ps, xp, pf, i, p, acc.data()); break;
        case 2: KPairSb<K, 2>(a, ps, xp, pf, i, p, acc.data()); break;
        case 1: KPairSb<K, 1>(a, ps, xp, pf, i, p, acc.data()); break;
        default: break;
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
