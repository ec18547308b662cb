// Scalar reference codecs for the plain float types and the 32-element block
// types: transcriptions of ggml.c ggml_fp32_to_fp16_row & co and
// ggml-quants.c quantize_row_q8_0_ref / dequantize_row_{q8_0,q4_0,mxfp4}.
// Keep the expression order: the SIMD variants are checked against this file.
#include <cmath>
#include <cstring>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/quantize_kernels.h"

namespace tenzro::quant::ref {
namespace {

// x86's cvttss2si: truncation, 0x80000000 for NaN and out-of-range values.
int32_t TruncToInt32(float v) {
  if (!(v > -2147483904.0f && v < 2147483648.0f)) return INT32_MIN;
  return static_cast<int32_t>(v);
}

}  // namespace

void QuantizeRowF32(const float* x, void* y, int64_t n) { std::memcpy(y, x, n * sizeof(float)); }
void DequantizeRowF32(const void* x, float* y, int64_t n) { std::memcpy(y, x, n * sizeof(float)); }

void QuantizeRowF16(const float* x, void* y, int64_t n) {
  auto* out = static_cast<uint16_t*>(y);
  for (int64_t i = 0; i < n; ++i) out[i] = Fp32ToFp16(x[i]);
}

void DequantizeRowF16(const void* x, float* y, int64_t n) {
  const auto* in = static_cast<const uint16_t*>(x);
  for (int64_t i = 0; i < n; ++i) y[i] = Fp16ToFp32(in[i]);
}

void QuantizeRowBf16(const float* x, void* y, int64_t n) {
  auto* out = static_cast<uint16_t*>(y);
  for (int64_t i = 0; i < n; ++i) out[i] = Fp32ToBf16(x[i]);
}

void DequantizeRowBf16(const void* x, float* y, int64_t n) {
  const auto* in = static_cast<const uint16_t*>(x);
  for (int64_t i = 0; i < n; ++i) y[i] = Bf16ToFp32(in[i]);
}

void QuantizeRowQ8_0(const float* x, void* vy, int64_t k) {
  auto* y = static_cast<block_q8_0*>(vy);
  const int64_t nb = k / QK8_0;
  for (int64_t i = 0; i < nb; i++) {
    float amax = 0.0f;
    for (int j = 0; j < QK8_0; j++) {
      const float v = x[i * QK8_0 + j];
      const float av = std::fabs(v);
      amax = amax > av ? amax : av;  // ggml's MAX(amax, fabsf(v))
    }
    const float d = amax / ((1 << 7) - 1);
    const float id = d ? 1.0f / d : 0.0f;
    y[i].d = Fp32ToFp16(d);
    for (int j = 0; j < QK8_0; ++j) {
      const float x0 = x[i * QK8_0 + j] * id;
      // Same conversion as C's float -> int8_t (via int32, as x86 does; only
      // NaN/inf blocks leave the int8 range).
      y[i].qs[j] = static_cast<int8_t>(TruncToInt32(std::round(x0)));
    }
  }
}

void DequantizeRowQ8_0(const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const block_q8_0*>(vx);
  const int64_t nb = k / QK8_0;
  for (int64_t i = 0; i < nb; i++) {
    const float d = Fp16ToFp32(x[i].d);
    for (int j = 0; j < QK8_0; ++j) y[i * QK8_0 + j] = x[i].qs[j] * d;
  }
}

void DequantizeRowQ4_0(const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const block_q4_0*>(vx);
  constexpr int qk = QK4_0;
  const int64_t nb = k / qk;
  for (int64_t i = 0; i < nb; i++) {
    const float d = Fp16ToFp32(x[i].d);
    for (int j = 0; j < qk / 2; ++j) {
      const int x0 = (x[i].qs[j] & 0x0F) - 8;
      const int x1 = (x[i].qs[j] >> 4) - 8;
      y[i * qk + j + 0] = x0 * d;
      y[i * qk + j + qk / 2] = x1 * d;
    }
  }
}

void DequantizeRowMxfp4(const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const block_mxfp4*>(vx);
  constexpr int qk = QK_MXFP4;
  const int64_t nb = k / qk;
  for (int64_t i = 0; i < nb; i++) {
    const float d = E8M0ToFp32Half(x[i].e);
    for (int j = 0; j < qk / 2; ++j) {
      const int8_t x0 = kValuesMxfp4[x[i].qs[j] & 0x0F];
      const int8_t x1 = kValuesMxfp4[x[i].qs[j] >> 4];
      y[i * qk + j + 0] = x0 * d;
      y[i * qk + j + qk / 2] = x1 * d;
    }
  }
}

}  // namespace tenzro::quant::ref
