// tenzro quant: scalar number conversions, bit-exact with ggml.
//
// Fp32ToFp16 / Fp16ToFp32 are ggml's ggml_compute_fp32_to_fp16 /
// ggml_compute_fp16_to_fp32 (ggml-impl.h): IEEE binary16 with
// round-to-nearest-even, overflow to infinity, subnormals kept; every NaN
// becomes sign|0x7E00. Fp32ToBf16 is ggml_compute_fp32_to_bf16: round to
// nearest even, NaN forced quiet by OR-ing 0x40 into the truncated bits.
// NearestInt is ggml's nearest_int (round half to even via the 1.5*2^23
// trick; valid for |x| <= 4194303, garbage but deterministic beyond).
// Depends on the FPU being in its default round-to-nearest mode.
//
// `static` on purpose: this header is included by files compiled for
// different ISAs (*_avx2.cc); internal linkage keeps the linker from picking
// an AVX2-compiled copy for the scalar code.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace tenzro::quant {

static inline float Fp16ToFp32(uint16_t h) {
  const uint32_t w = static_cast<uint32_t>(h) << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w;
  const uint32_t exp_offset = 0xE0u << 23;
  const float exp_scale = 0x1.0p-112f;
  const float normalized_value = std::bit_cast<float>((two_w >> 4) + exp_offset) * exp_scale;
  const uint32_t magic_mask = 126u << 23;
  const float magic_bias = 0.5f;
  const float denormalized_value = std::bit_cast<float>((two_w >> 17) | magic_mask) - magic_bias;
  const uint32_t denormalized_cutoff = 1u << 27;
  const uint32_t result = sign | (two_w < denormalized_cutoff ? std::bit_cast<uint32_t>(denormalized_value)
                                                              : std::bit_cast<uint32_t>(normalized_value));
  return std::bit_cast<float>(result);
}

static inline uint16_t Fp32ToFp16(float f) {
  const float scale_to_inf = 0x1.0p+112f;
  const float scale_to_zero = 0x1.0p-110f;
  float base = (std::fabs(f) * scale_to_inf) * scale_to_zero;
  const uint32_t w = std::bit_cast<uint32_t>(f);
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  base = std::bit_cast<float>((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = std::bit_cast<uint32_t>(base);
  const uint32_t exp_bits = (bits >> 13) & 0x00007C00u;
  const uint32_t mantissa_bits = bits & 0x00000FFFu;
  const uint32_t nonsign = exp_bits + mantissa_bits;
  return static_cast<uint16_t>((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}

static inline float Bf16ToFp32(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

static inline uint16_t Fp32ToBf16(float s) {
  const uint32_t u = std::bit_cast<uint32_t>(s);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 64);  // NaN: force quiet
  return static_cast<uint16_t>((u + (0x7fffu + ((u >> 16) & 1))) >> 16);
}

// ggml_e8m0_to_fp32_half: 2^(e-128), the MXFP4 block scale (halved because
// the E2M1 table below is stored doubled).
static inline float E8M0ToFp32Half(uint8_t e) {
  const uint32_t bits = e < 2 ? (0x00200000u << e) : (static_cast<uint32_t>(e - 1) << 23);
  return std::bit_cast<float>(bits);
}

// E2M1 values times two (ggml's kvalues_mxfp4).
static constexpr int8_t kValuesMxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

static inline int NearestInt(float fval) {
  const float val = fval + 12582912.f;
  const int i = std::bit_cast<int>(val);
  return (i & 0x007fffff) - 0x00400000;
}

}  // namespace tenzro::quant
