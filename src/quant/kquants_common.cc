#include "quant/kquants_common.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/fp16.h"

namespace tenzro::quant {
namespace {

constexpr float kGroupMaxEps = 1e-15f;

// Packs the 8 sub-block scales/mins of q4_K/q5_K into 6 bits each and sets
// d/dmin; returns nothing, fields written into `scales_out`, `d`, `dmin`.
void PackScalesMins(const float* scales, const float* mins, uint8_t* scales_out, uint16_t* d, uint16_t* dmin) {
  float max_scale = 0;  // as we are deducting the min, scales are always positive
  float max_min = 0;
  for (int j = 0; j < QK_K / 32; ++j) {
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  for (int j = 0; j < QK_K / 32; ++j) {
    uint8_t ls = static_cast<uint8_t>(NearestInt(inv_scale * scales[j]));
    uint8_t lm = static_cast<uint8_t>(NearestInt(inv_min * mins[j]));
    ls = std::min<uint8_t>(63, ls);
    lm = std::min<uint8_t>(63, lm);
    if (j < 4) {
      scales_out[j] = ls;
      scales_out[j + 4] = lm;
    } else {
      scales_out[j + 4] = (ls & 0xF) | ((lm & 0xF) << 4);
      scales_out[j - 4] |= ((ls >> 4) << 6);
      scales_out[j - 0] |= ((lm >> 4) << 6);
    }
  }
  *d = Fp32ToFp16(max_scale / 63.f);
  *dmin = Fp32ToFp16(max_min / 63.f);
}

// Requantizes each 32-value sub-block against its rounded scale and min.
void Requantize(const float* x, const uint8_t* packed, uint16_t d16, uint16_t dmin16, int nmax, uint8_t* L) {
  uint8_t sc, m;
  for (int j = 0; j < QK_K / 32; ++j) {
    GetScaleMinK4(j, packed, &sc, &m);
    const float d = Fp16ToFp32(d16) * sc;
    if (!d) continue;
    const float dm = Fp16ToFp32(dmin16) * m;
    for (int ii = 0; ii < 32; ++ii) {
      int l = NearestInt((x[32 * j + ii] + dm) / d);
      l = std::max(0, std::min(nmax, l));
      L[32 * j + ii] = l;
    }
  }
}

}  // namespace

void GetScaleMinK4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4);
  }
}

void FinishQ4_K(const float* x, const float* scales, const float* mins, uint8_t* L, block_q4_K* y) {
  PackScalesMins(scales, mins, y->scales, &y->d, &y->dmin);
  Requantize(x, y->scales, y->d, y->dmin, 15, L);
  uint8_t* q = y->qs;
  for (int j = 0; j < QK_K; j += 64) {
    for (int l = 0; l < 32; ++l) q[l] = L[j + l] | (L[j + l + 32] << 4);
    q += 32;
  }
}

void FinishQ5_K(const float* x, const float* scales, const float* mins, uint8_t* L, block_q5_K* y) {
  PackScalesMins(scales, mins, y->scales, &y->d, &y->dmin);
  Requantize(x, y->scales, y->d, y->dmin, 31, L);
  uint8_t* qh = y->qh;
  uint8_t* ql = y->qs;
  std::memset(qh, 0, QK_K / 8);
  uint8_t m1 = 1, m2 = 2;
  for (int n = 0; n < QK_K; n += 64) {
    for (int j = 0; j < 32; ++j) {
      int l1 = L[n + j];
      if (l1 > 15) {
        l1 -= 16;
        qh[j] |= m1;
      }
      int l2 = L[n + j + 32];
      if (l2 > 15) {
        l2 -= 16;
        qh[j] |= m2;
      }
      ql[j] = l1 | (l2 << 4);
    }
    m1 <<= 2;
    m2 <<= 2;
    ql += 32;
  }
}

void FinishQ6_K(const float* x, const float* scales, int8_t* L, block_q6_K* y) {
  float max_scale = 0;
  float max_abs_scale = 0;
  for (int ib = 0; ib < QK_K / 16; ++ib) {
    const float abs_scale = std::fabs(scales[ib]);
    if (abs_scale > max_abs_scale) {
      max_abs_scale = abs_scale;
      max_scale = scales[ib];
    }
  }
  if (max_abs_scale < kGroupMaxEps) {
    std::memset(y, 0, sizeof(block_q6_K));
    y->d = Fp32ToFp16(0.f);
    return;
  }
  float iscale = -128.f / max_scale;
  y->d = Fp32ToFp16(1 / iscale);
  for (int ib = 0; ib < QK_K / 16; ++ib) y->scales[ib] = static_cast<int8_t>(std::min(127, NearestInt(iscale * scales[ib])));
  for (int j = 0; j < QK_K / 16; ++j) {
    float d = Fp16ToFp32(y->d) * y->scales[j];
    if (!d) continue;
    for (int ii = 0; ii < 16; ++ii) {
      int l = NearestInt(x[16 * j + ii] / d);
      l = std::max(-32, std::min(31, l));
      L[16 * j + ii] = static_cast<int8_t>(l + 32);
    }
  }
  uint8_t* ql = y->ql;
  uint8_t* qh = y->qh;
  for (int j = 0; j < QK_K; j += 128) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t q1 = L[j + l + 0] & 0xF;
      const uint8_t q2 = L[j + l + 32] & 0xF;
      const uint8_t q3 = L[j + l + 64] & 0xF;
      const uint8_t q4 = L[j + l + 96] & 0xF;
      ql[l + 0] = q1 | (q3 << 4);
      ql[l + 32] = q2 | (q4 << 4);
      qh[l] = (L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6);
    }
    ql += 64;
    qh += 32;
  }
}

}  // namespace tenzro::quant
