// Scalar reference codecs for the k-quants (QK_K = 256 super-blocks):
// transcriptions of ggml-quants.c quantize_row_q{4,5,6}_K_ref (with
// make_qkx2_quants / make_qx_quants) and dequantize_row_q{4,5,6}_K.
// Every float operation is in ggml's order; compiled without FMA contraction
// (src/quant/CMakeLists.txt), as ggml-base is.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/kquants_common.h"
#include "quant/quantize_kernels.h"

namespace tenzro::quant::ref {
namespace {

constexpr float kGroupMaxEps = 1e-15f;

float MakeQkx2Quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min,
                     uint8_t* Laux, float rmin, float rdelta, int nstep) {
  float min = x[0];
  float max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *the_min = -min;
    return 0.f;
  }
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    int l = NearestInt(iscale * (x[i] - min));
    L[i] = std::max(0, std::min(nmax, l));
    float diff = scale * L[i] + min - x[i];
    diff = diff * diff;  // use_mad is false for q4_K / q5_K
    float w = weights[i];
    best_error += w * diff;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * is + nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      int l = NearestInt(iscale * (x[i] - min));
      l = std::max(0, std::min(nmax, l));
      Laux[i] = l;
      float w = weights[i];
      sum_l += w * l;
      sum_l2 += w * l * l;
      sum_xl += w * l * x[i];
    }
    float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * Laux[i] + this_min - x[i];
        diff = diff * diff;
        float w = weights[i];
        cur_error += w * diff;
      }
      if (cur_error < best_error) {
        for (int i = 0; i < n; ++i) L[i] = Laux[i];
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

// make_qx_quants with rmse_type 1 and no importance weights (q6_K's call).
float MakeQxQuants(int n, int nmax, const float* x, int8_t* L) {
  float max = 0;
  float amax = 0;
  for (int i = 0; i < n; ++i) {
    float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  float iscale = -nmax / max;
  float sumlx = 0;
  float suml2 = 0;
  for (int i = 0; i < n; ++i) {
    int l = NearestInt(iscale * x[i]);
    l = std::max(-nmax, std::min(nmax - 1, l));
    L[i] = l + nmax;
    float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  float scale = suml2 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(nmax + 0.1f * is) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      int l = NearestInt(iscale * x[i]);
      l = std::max(-nmax, std::min(nmax - 1, l));
      float w = x[i] * x[i];
      sumlx += w * x[i] * l;
      suml2 += w * l * l;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        int l = NearestInt(iscale * x[i]);
        L[i] = nmax + std::max(-nmax, std::min(nmax - 1, l));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// The sub-block scale search of q4_K (nmax 15) / q5_K (nmax 31) for one
// super-block: fills scales, mins and L.
void SearchSubBlocks(const float* x, int nmax, float rmin, float rdelta, int nstep, uint8_t* L, float* scales,
                     float* mins) {
  uint8_t Laux[32];
  float weights[32];
  for (int j = 0; j < QK_K / 32; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = MakeQkx2Quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin, rdelta, nstep);
  }
}

}  // namespace

void QuantizeRowQ4_K(const float* x, void* vy, int64_t k) {
  auto* y = static_cast<block_q4_K*>(vy);
  const int64_t nb = k / QK_K;
  uint8_t L[QK_K];
  float mins[QK_K / 32];
  float scales[QK_K / 32];
  for (int64_t i = 0; i < nb; i++) {
    SearchSubBlocks(x, 15, -1.f, 0.1f, 20, L, scales, mins);
    FinishQ4_K(x, scales, mins, L, &y[i]);
    x += QK_K;
  }
}

void QuantizeRowQ5_K(const float* x, void* vy, int64_t k) {
  auto* y = static_cast<block_q5_K*>(vy);
  const int64_t nb = k / QK_K;
  uint8_t L[QK_K];
  float mins[QK_K / 32];
  float scales[QK_K / 32];
  for (int64_t i = 0; i < nb; i++) {
    SearchSubBlocks(x, 31, -0.5f, 0.1f, 15, L, scales, mins);
    FinishQ5_K(x, scales, mins, L, &y[i]);
    x += QK_K;
  }
}

void QuantizeRowQ6_K(const float* x, void* vy, int64_t k) {
  auto* y = static_cast<block_q6_K*>(vy);
  const int64_t nb = k / QK_K;
  int8_t L[QK_K];
  float scales[QK_K / 16];
  for (int64_t i = 0; i < nb; i++) {
    for (int ib = 0; ib < QK_K / 16; ++ib) scales[ib] = MakeQxQuants(16, 32, x + 16 * ib, L + 16 * ib);
    FinishQ6_K(x, scales, L, &y[i]);
    x += QK_K;
  }
}

void DequantizeRowQ4_K(const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const block_q4_K*>(vx);
  const int64_t nb = k / QK_K;
  for (int64_t i = 0; i < nb; i++) {
    const uint8_t* q = x[i].qs;
    const float d = Fp16ToFp32(x[i].d);
    const float min = Fp16ToFp32(x[i].dmin);
    int is = 0;
    uint8_t sc, m;
    for (int j = 0; j < QK_K; j += 64) {
      GetScaleMinK4(is + 0, x[i].scales, &sc, &m);
      const float d1 = d * sc;
      const float m1 = min * m;
      GetScaleMinK4(is + 1, x[i].scales, &sc, &m);
      const float d2 = d * sc;
      const float m2 = min * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
      q += 32;
      is += 2;
    }
  }
}

void DequantizeRowQ5_K(const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const block_q5_K*>(vx);
  const int64_t nb = k / QK_K;
  for (int64_t i = 0; i < nb; i++) {
    const uint8_t* ql = x[i].qs;
    const uint8_t* qh = x[i].qh;
    const float d = Fp16ToFp32(x[i].d);
    const float min = Fp16ToFp32(x[i].dmin);
    int is = 0;
    uint8_t sc, m;
    uint8_t u1 = 1, u2 = 2;
    for (int j = 0; j < QK_K; j += 64) {
      GetScaleMinK4(is + 0, x[i].scales, &sc, &m);
      const float d1 = d * sc;
      const float m1 = min * m;
      GetScaleMinK4(is + 1, x[i].scales, &sc, &m);
      const float d2 = d * sc;
      const float m2 = min * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
      ql += 32;
      is += 2;
      u1 <<= 2;
      u2 <<= 2;
    }
  }
}

void DequantizeRowQ6_K(const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const block_q6_K*>(vx);
  const int64_t nb = k / QK_K;
  for (int64_t i = 0; i < nb; i++) {
    const float d = Fp16ToFp32(x[i].d);
    const uint8_t* ql = x[i].ql;
    const uint8_t* qh = x[i].qh;
    const int8_t* sc = x[i].scales;
    for (int n = 0; n < QK_K; n += 128) {
      for (int l = 0; l < 32; ++l) {
        int is = l / 16;
        const int8_t q1 = static_cast<int8_t>((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int8_t q2 = static_cast<int8_t>((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int8_t q3 = static_cast<int8_t>((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int8_t q4 = static_cast<int8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l + 0] = d * sc[is + 0] * q1;
        y[l + 32] = d * sc[is + 2] * q2;
        y[l + 64] = d * sc[is + 4] * q3;
        y[l + 96] = d * sc[is + 6] * q4;
      }
      y += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
}

}  // namespace tenzro::quant::ref
