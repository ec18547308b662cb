// Scalar reference kernels: plain loops over ggml's block layouts, integer
// sums per 32-value block, double accumulation. Slow; used as the reference
// in tests and as the fallback on CPUs without AVX2.
#include <cstring>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "runtime/kernels.h"

namespace tenzro::runtime {
namespace {

using quant::GgmlType;

// ggml's get_scale_min_k4: 6-bit scale and min of sub-block j (0..7).
inline void ScaleMinK4(int j, const uint8_t* q, int* d, int* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

template <typename LoadFn>
void FloatRows(const KernelArgs& a, int64_t r0, int64_t r1, LoadFn load) {
  const int64_t n = a.w->row_len;
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* row = a.w->data.data() + r * a.row_bytes;
    for (int t = 0; t < a.n_tok; ++t) {
      const float* x = a.x + t * n;
      double acc = 0;
      for (int64_t k = 0; k < n; ++k) acc += static_cast<double>(load(row, k)) * x[k];
      a.y[t * a.ldy + r] = static_cast<float>(acc);
    }
  }
}

void F32Rows(const KernelArgs& a, int64_t r0, int64_t r1) {
  FloatRows(a, r0, r1, [](const uint8_t* p, int64_t k) { float v; std::memcpy(&v, p + 4 * k, 4); return v; });
}
void F16Rows(const KernelArgs& a, int64_t r0, int64_t r1) {
  FloatRows(a, r0, r1, [](const uint8_t* p, int64_t k) {
    uint16_t h; std::memcpy(&h, p + 2 * k, 2); return quant::Fp16ToFp32(h); });
}
void Bf16Rows(const KernelArgs& a, int64_t r0, int64_t r1) {
  FloatRows(a, r0, r1, [](const uint8_t* p, int64_t k) {
    uint16_t h; std::memcpy(&h, p + 2 * k, 2); return quant::Bf16ToFp32(h); });
}

// Calls dot(row, qs, scales, s16, dxs) -> double for each (r, t).
template <typename DotFn>
void QuantRows(const KernelArgs& a, int64_t r0, int64_t r1, DotFn dot) {
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* row = a.w->data.data() + r * a.row_bytes;
    for (int t = 0; t < a.n_tok; ++t)
      a.y[t * a.ldy + r] = static_cast<float>(dot(row, a.w->row_len, *a.q, t));
  }
}

double DotQ8_0(const uint8_t* row, int64_t n, const QuantizedActs& q, int t) {
  const auto* b = reinterpret_cast<const quant::block_q8_0*>(row);
  const int8_t* x = q.q(t);
  const float* dx = q.scale(t);
  double acc = 0;
  for (int64_t i = 0; i < n / 32; ++i) {
    int isum = 0;
    for (int l = 0; l < 32; ++l) isum += b[i].qs[l] * x[32 * i + l];
    acc += static_cast<double>(quant::Fp16ToFp32(b[i].d)) * dx[i] * isum;
  }
  return acc;
}

// Activation value of block j (32 values) of token t: q * mul_j * base, with
// mul_j from act_quant.h.
inline double ActMul(const QuantizedActs& q, int t, int64_t j) { return q.muls(t)[j]; }
inline double Sum32(const QuantizedActs& q, int t, int64_t j) {
  return static_cast<double>(q.sums16(t)[2 * j]) + q.sums16(t)[2 * j + 1];
}

double DotQ4_K(const uint8_t* row, int64_t n, const QuantizedActs& q, int t) {
  const auto* b = reinterpret_cast<const quant::block_q4_K*>(row);
  double acc = 0;
  for (int64_t i = 0; i < n / quant::QK_K; ++i) {
    const int8_t* x = q.q(t) + i * quant::QK_K;
    const double base = q.group_base(t)[i];
    const double d = quant::Fp16ToFp32(b[i].d), dmin = quant::Fp16ToFp32(b[i].dmin);
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      ScaleMinK4(j, b[i].scales, &sc, &m);
      const uint8_t* qs = b[i].qs + 32 * (j / 2);
      int isum = 0;
      for (int l = 0; l < 32; ++l) isum += ((j & 1) ? (qs[l] >> 4) : (qs[l] & 0xF)) * x[32 * j + l];
      acc += base * (d * sc * ActMul(q, t, 8 * i + j) * isum - dmin * m * Sum32(q, t, 8 * i + j));
    }
  }
  return acc;
}

double DotQ5_K(const uint8_t* row, int64_t n, const QuantizedActs& q, int t) {
  const auto* b = reinterpret_cast<const quant::block_q5_K*>(row);
  double acc = 0;
  for (int64_t i = 0; i < n / quant::QK_K; ++i) {
    const int8_t* x = q.q(t) + i * quant::QK_K;
    const double base = q.group_base(t)[i];
    const double d = quant::Fp16ToFp32(b[i].d), dmin = quant::Fp16ToFp32(b[i].dmin);
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      ScaleMinK4(j, b[i].scales, &sc, &m);
      const uint8_t* qs = b[i].qs + 32 * (j / 2);
      int isum = 0;
      for (int l = 0; l < 32; ++l) {
        const int lo = (j & 1) ? (qs[l] >> 4) : (qs[l] & 0xF);
        const int hi = (b[i].qh[l] >> j) & 1;
        isum += (lo | (hi << 4)) * x[32 * j + l];
      }
      acc += base * (d * sc * ActMul(q, t, 8 * i + j) * isum - dmin * m * Sum32(q, t, 8 * i + j));
    }
  }
  return acc;
}

double DotQ6_K(const uint8_t* row, int64_t n, const QuantizedActs& q, int t) {
  const auto* b = reinterpret_cast<const quant::block_q6_K*>(row);
  double acc = 0;
  for (int64_t i = 0; i < n / quant::QK_K; ++i) {
    const int8_t* x = q.q(t) + i * quant::QK_K;
    const double base = q.group_base(t)[i];
    const double d = quant::Fp16ToFp32(b[i].d);
    for (int j = 0; j < 8; ++j) {  // 32-value sub-block j = 4*half + k
      const int half = j / 4, k = j % 4;
      const uint8_t* ql = b[i].ql + 64 * half + (k & 1) * 32;
      const uint8_t* qh = b[i].qh + 32 * half;
      int isum = 0;
      for (int l = 0; l < 32; ++l) {
        const int lo = (k < 2) ? (ql[l] & 0xF) : (ql[l] >> 4);
        const int hi = (qh[l] >> (2 * k)) & 3;
        const int sc = b[i].scales[8 * half + 2 * k + l / 16];
        isum += sc * ((lo | (hi << 4)) - 32) * x[32 * j + l];
      }
      acc += base * d * ActMul(q, t, 8 * i + j) * isum;
    }
  }
  return acc;
}

void Q8_0Rows(const KernelArgs& a, int64_t r0, int64_t r1) { QuantRows(a, r0, r1, DotQ8_0); }
void Q4_KRows(const KernelArgs& a, int64_t r0, int64_t r1) { QuantRows(a, r0, r1, DotQ4_K); }
void Q5_KRows(const KernelArgs& a, int64_t r0, int64_t r1) { QuantRows(a, r0, r1, DotQ5_K); }
void Q6_KRows(const KernelArgs& a, int64_t r0, int64_t r1) { QuantRows(a, r0, r1, DotQ6_K); }

}  // namespace

bool UsesQuantizedActs(quant::GgmlType type) {
  return type == GgmlType::Q8_0 || type == GgmlType::Q4_K || type == GgmlType::Q5_K || type == GgmlType::Q6_K;
}

bool UsesTokenTiles(quant::GgmlType type) {
  return type == GgmlType::Q4_K || type == GgmlType::Q5_K || type == GgmlType::Q6_K;
}

namespace scalar {
RowsKernel GetKernel(quant::GgmlType type) {
  switch (type) {
    case GgmlType::F32: return F32Rows;
    case GgmlType::F16: return F16Rows;
    case GgmlType::BF16: return Bf16Rows;
    case GgmlType::Q8_0: return Q8_0Rows;
    case GgmlType::Q4_K: return Q4_KRows;
    case GgmlType::Q5_K: return Q5_KRows;
    case GgmlType::Q6_K: return Q6_KRows;
    default: return nullptr;
  }
}
}  // namespace scalar

}  // namespace tenzro::runtime
