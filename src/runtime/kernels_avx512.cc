// AVX-512 VNNI kernels (compiled with -mavx512f/bw/vl/dq/vnni; called only
// when core/cpu.h reports that set): Q8_0 here, the k-quants in
// kquant_avx512.cc, and the ISA's GetKernel. Float weights have no AVX-512
// kernel: GetKernel returns nullptr and MatMul runs the AVX2 one.
//
// Contract: bit for bit the output of the AVX2 kernels (kernels_avx2.cc).
// Q8_0: per row, token and group of 8 blocks, the 8 exact int32 block dot
// products go into lanes (Reduce8), then the AVX2 kernel's f32 steps:
// acc = fma(float(sums), wd * dx, acc) per group, HSum(acc) at the end. Only
// the integer dot product differs: vpdpbusd (|w| unsigned x sign(x, w), 4
// products into each int32 lane) in one instruction where AVX2 needs
// vpmaddubsw + vpmaddwd; |w| <= 128 and |x| <= 127 keep it exact.
// GCC 12 flags its own _mm512_inserti64x4 / broadcast / extract intrinsics
// (their undefined-register idiom) as -Wuninitialized; not our variables.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "quant/blocks.h"
#include "runtime/kernels.h"
#include "runtime/simd_avx512.h"

namespace tenzro::runtime::avx512 {
namespace {

using quant::GgmlType;

// Loops over rows and tiles of up to 4 tokens, calling Tile<T>::Run(a, r, t0).
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

// One weight row x T tokens, groups of 8 blocks (a row's last group may be
// partial: missing blocks contribute a zero lane with a zero scale, as in
// the AVX2 kernel).
template <int T>
struct Q8_0Tile {
  static void Run(const KernelArgs& a, int64_t r, int t0) {
    const auto* b = reinterpret_cast<const quant::block_q8_0*>(a.w->data.data() + r * a.row_bytes);
    const int64_t nb = a.w->row_len / 32;
    const TokenPtrs<T> tp(*a.q, t0);
    __m256 acc[T];
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) acc[j] = _mm256_setzero_ps();
    for (int64_t g = 0; g < nb; g += 8) {
      const int cnt = nb - g < 8 ? static_cast<int>(nb - g) : 8;
      alignas(32) float wd[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      __m256i wabs[8], wq[8];
#pragma GCC unroll 8
      for (int s = 0; s < 8; ++s) {
        wq[s] = wabs[s] = _mm256_setzero_si256();
        if (s >= cnt) continue;
        wd[s] = F16(b[g + s].d);
        wq[s] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[g + s].qs));
        wabs[s] = _mm256_abs_epi8(wq[s]);  // -128 -> 0x80, i.e. 128 read unsigned
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
            p[s] = _mm256_dpbusd_epi32(_mm256_setzero_si256(), wabs[s], _mm256_sign_epi8(xv, wq[s]));
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
    case GgmlType::Q8_0: return QuantRows<Q8_0Tile>;
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K: return GetKQuantKernel(type);
    default: return nullptr;
  }
}

}  // namespace tenzro::runtime::avx512
