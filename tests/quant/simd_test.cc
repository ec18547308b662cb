// The SIMD variants against the scalar reference on inputs the golden set
// does not cover: many seeds and distributions, denormals, ties, signed
// zeros, infinities and NaNs. Every ISA this CPU runs must produce the
// reference's bytes / bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "quant/fp16.h"
#include "quant/quantize_kernels.h"
#include "quant/types.h"

namespace tenzro::quant {
namespace {

constexpr GgmlType kEncodable[] = {GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0,
                                   GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};
constexpr GgmlType kDecodable[] = {GgmlType::F16,  GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::MXFP4,
                                   GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

std::vector<float> MakeRows(int kind, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> gauss(0.f, 1.f);
  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) {
    switch (kind) {
      case 0: v[i] = gauss(rng) * 0.02f; break;
      case 1: v[i] = uni(rng); break;
      case 2: v[i] = std::round(uni(rng) * 8) / 2;  break;  // ties and repeats
      case 3: v[i] = uni(rng) * 1e-39f; break;  // subnormal
      case 4: v[i] = (rng() % 7 == 0) ? gauss(rng) * 100.f : gauss(rng) * 1e-3f; break;
      case 5: v[i] = (i % 32 < 16) ? 0.0f : -0.0f; break;
      case 6: v[i] = std::ldexp(uni(rng), static_cast<int>(rng() % 60) - 30); break;
      case 7: v[i] = uni(rng) > 0 ? 65504.f + uni(rng) * 64.f : -1e6f * uni(rng); break;  // f16 overflow edge
      default: {  // non-finite sprinkled in
        v[i] = gauss(rng);
        const uint32_t r = rng() % 64;
        if (r == 0) v[i] = std::numeric_limits<float>::quiet_NaN();
        if (r == 1) v[i] = std::numeric_limits<float>::infinity();
        if (r == 2) v[i] = -std::numeric_limits<float>::infinity();
        if (r == 3) {
          uint32_t bits = 0xff800001u + (rng() & 0x3fffff);  // negative NaN with payload
          std::memcpy(&v[i], &bits, 4);
        }
      }
    }
  }
  return v;
}

TEST(Simd, QuantizeMatchesScalarOnManyInputs) {
  constexpr int64_t kRows = 3, kN = 768;  // 3 super-blocks: the paired and the single path
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
    if (!IsaSupported(isa)) continue;
    for (int kind = 0; kind <= 8; ++kind) {
      for (uint32_t seed = 1; seed <= 4; ++seed) {
        const std::vector<float> x = MakeRows(kind, kRows * kN, seed * 7919 + kind);
        for (GgmlType type : kEncodable) {
          const uint64_t rb = *RowBytes(type, kN);
          std::vector<uint8_t> want(rb * kRows), got(rb * kRows, 0xCC);
          ASSERT_TRUE(QuantizeRowsIsa(Isa::kScalar, type, x.data(), want.data(), kRows, kN));
          ASSERT_TRUE(QuantizeRowsIsa(isa, type, x.data(), got.data(), kRows, kN));
          EXPECT_EQ(want, got) << TypeName(type) << " " << IsaName(isa) << " kind " << kind << " seed " << seed;
          // And the decoders on what was produced.
          std::vector<float> dw(kRows * kN), dg(kRows * kN);
          ASSERT_TRUE(DequantizeRowsIsa(Isa::kScalar, type, want.data(), dw.data(), kRows, kN));
          ASSERT_TRUE(DequantizeRowsIsa(isa, type, want.data(), dg.data(), kRows, kN));
          EXPECT_EQ(0, std::memcmp(dw.data(), dg.data(), dw.size() * 4)) << TypeName(type) << " kind " << kind;
        }
      }
    }
  }
}

TEST(Simd, DequantizeMatchesScalarOnRandomBytes) {
  constexpr int64_t kRows = 8, kN = 1024;
  std::mt19937 rng(42);
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
    if (!IsaSupported(isa)) continue;
    for (GgmlType type : kDecodable) {
      const uint64_t rb = *RowBytes(type, kN);
      std::vector<uint8_t> bytes(rb * kRows);
      for (auto& b : bytes) b = static_cast<uint8_t>(rng());
      std::vector<float> want(kRows * kN), got(kRows * kN);
      ASSERT_TRUE(DequantizeRowsIsa(Isa::kScalar, type, bytes.data(), want.data(), kRows, kN));
      ASSERT_TRUE(DequantizeRowsIsa(isa, type, bytes.data(), got.data(), kRows, kN));
      EXPECT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * 4)) << TypeName(type) << " " << IsaName(isa);
    }
  }
}

TEST(Simd, EveryHalfDecodesLikeScalar) {
  std::vector<uint16_t> h(65536);
  for (uint32_t i = 0; i < 65536; ++i) h[i] = static_cast<uint16_t>(i);
  std::vector<float> want(65536), got(65536);
  ref::DequantizeRowF16(h.data(), want.data(), 65536);
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
    if (!IsaSupported(isa)) continue;
    GetCodec(GgmlType::F16, isa).to_float(h.data(), got.data(), 65536);
    EXPECT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * 4)) << IsaName(isa);
  }
  // Spot values: ggml's conversion is IEEE binary16.
  EXPECT_EQ(Fp16ToFp32(0x3C00), 1.0f);
  EXPECT_EQ(Fp16ToFp32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(Fp16ToFp32(0xFBFF), -65504.0f);
}

TEST(Simd, FloatToHalfAndBf16MatchScalarOnStridedBitPatterns) {
  // Every 251st bit pattern of the 2^32 floats (about 17M values), plus the
  // neighbourhood of each rounding boundary class through the stride.
  constexpr uint64_t kStride = 251;
  std::vector<float> x;
  x.reserve((1ull << 32) / kStride + 1);
  for (uint64_t b = 0; b < (1ull << 32); b += kStride) {
    const uint32_t u = static_cast<uint32_t>(b);
    float f;
    std::memcpy(&f, &u, 4);
    x.push_back(f);
  }
  const int64_t n = static_cast<int64_t>(x.size()) / 32 * 32;
  std::vector<uint16_t> want(n), got(n);
  for (GgmlType type : {GgmlType::F16, GgmlType::BF16}) {
    GetCodec(type, Isa::kScalar).from_float(x.data(), want.data(), n);
    for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
      if (!IsaSupported(isa)) continue;
      std::fill(got.begin(), got.end(), 0);
      GetCodec(type, isa).from_float(x.data(), got.data(), n);
      EXPECT_EQ(want, got) << TypeName(type) << " " << IsaName(isa);
    }
  }
  // Spot values.
  EXPECT_EQ(Fp32ToFp16(1.0f), 0x3C00);
  EXPECT_EQ(Fp32ToFp16(65520.0f), 0x7C00);  // rounds to infinity
  EXPECT_EQ(Fp32ToFp16(std::numeric_limits<float>::quiet_NaN()), 0x7E00);
  EXPECT_EQ(Fp32ToBf16(1.00390625f), 0x3F80);  // tie to even
  uint32_t snan = 0x7f800001u;
  float fs;
  std::memcpy(&fs, &snan, 4);
  EXPECT_EQ(Fp32ToBf16(fs), 0x7FC0);
}

TEST(Simd, NearestIntRoundsHalfToEven) {
  EXPECT_EQ(NearestInt(0.5f), 0);
  EXPECT_EQ(NearestInt(1.5f), 2);
  EXPECT_EQ(NearestInt(-2.5f), -2);
  EXPECT_EQ(NearestInt(-3.7f), -4);
}

}  // namespace
}  // namespace tenzro::quant
