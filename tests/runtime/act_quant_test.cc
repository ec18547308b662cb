// Activation quantization (act_quant.h): the format's invariants, the token
// tile layout, and bit-identity of the scalar and AVX2 block steps.
#include "runtime/act_quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/cpu.h"
#include "runtime/act_quant_internal.h"

namespace tenzro::runtime {
namespace {

// Heavy-tailed values with whole blocks 1x..1000x smaller than the group's
// largest, so every multiplier 1..16 shows up.
std::vector<float> Acts(int n_tok, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> pick(0, 5);
  std::vector<float> x(static_cast<size_t>(n_tok) * n);
  for (size_t b = 0; b < x.size() / 32; ++b) {
    const float s = std::pow(10.0f, -0.5f * pick(rng));
    for (int i = 0; i < 32; ++i) x[32 * b + i] = s * normal(rng);
  }
  return x;
}

TEST(ActQuantTest, ValuesAreWithinHalfAStepAndSideTablesMatch) {
  const int n_tok = 3;
  const int64_t n = 768 + 96;  // a partial last group
  const auto x = Acts(n_tok, n, 1);
  QuantizedActs q;
  QuantizeActs(x.data(), n_tok, n, &q);
  ASSERT_EQ(q.groups(), 4);
  bool saw_mul[17] = {};
  for (int t = 0; t < n_tok; ++t) {
    for (int64_t b = 0; b < n / 32; ++b) {
      const int mul = q.muls(t)[b];
      ASSERT_GE(mul, 1);
      ASSERT_LE(mul, 16);
      saw_mul[mul] = true;
      const float base = q.group_base(t)[b / 8];
      EXPECT_EQ(q.scale(t)[b], base * static_cast<float>(mul));
      int sum[2] = {0, 0};
      for (int i = 0; i < 32; ++i) {
        const int v = q.q(t)[32 * b + i];
        ASSERT_LE(std::abs(v), 127);
        sum[i / 16] += v;
        const double step = static_cast<double>(base) * mul;
        EXPECT_LE(std::fabs(x[t * n + 32 * b + i] - v * step), 0.5 * step * (1 + 1e-5)) << t << " " << b << " " << i;
      }
      EXPECT_EQ(q.sums16(t)[2 * b], sum[0] * mul);
      EXPECT_EQ(q.sums16(t)[2 * b + 1], sum[1] * mul);
    }
  }
  EXPECT_TRUE(saw_mul[1] && saw_mul[16]);
  EXPECT_FALSE(q.has_tiles());  // 3 tokens: below kTileMin
}

TEST(ActQuantTest, TilesInterleaveEightTokensAndZeroPad) {
  const int n_tok = 11;
  const int64_t n = 512;
  const auto x = Acts(n_tok, n, 2);
  QuantizedActs q;
  QuantizeActs(x.data(), n_tok, n, &q);
  ASSERT_TRUE(q.has_tiles());
  ASSERT_EQ(q.n_tiles, 2);
  // Without tiles (what Q8_0 gets): the same token-major bytes, no tiles.
  QuantizedActs flat;
  QuantizeActs(x.data(), n_tok, n, &flat, /*tiles=*/false);
  EXPECT_FALSE(flat.has_tiles());
  EXPECT_TRUE(flat.tq.empty() && flat.tmul.empty() && flat.tb16.empty() && flat.tbase.empty());
  EXPECT_EQ(flat.qs, q.qs);
  EXPECT_EQ(flat.mul, q.mul);
  EXPECT_EQ(flat.b16, q.b16);
  EXPECT_EQ(flat.base, q.base);
  for (int tile = 0; tile < 2; ++tile)
    for (int lane = 0; lane < 8; ++lane) {
      const int t = tile * 8 + lane;
      for (int64_t k = 0; k < n; ++k)
        ASSERT_EQ(q.tile_q(tile)[(k / 4) * 32 + lane * 4 + k % 4], t < n_tok ? q.q(t)[k] : 0) << t << " " << k;
      for (int64_t b = 0; b < n / 32; ++b) {
        const int16_t mul = t < n_tok ? q.muls(t)[b] : 0;
        EXPECT_EQ(q.tile_mul(tile)[b * 16 + 2 * lane], mul);
        EXPECT_EQ(q.tile_mul(tile)[b * 16 + 2 * lane + 1], mul);
        EXPECT_EQ(q.tile_sums16(tile)[b * 16 + 2 * lane], t < n_tok ? q.sums16(t)[2 * b] : 0);
        EXPECT_EQ(q.tile_sums16(tile)[b * 16 + 2 * lane + 1], t < n_tok ? q.sums16(t)[2 * b + 1] : 0);
      }
      for (int64_t g = 0; g < 2; ++g)
        EXPECT_EQ(q.tile_base(tile)[g * 8 + lane], t < n_tok ? q.group_base(t)[g] : 0.0f);
    }
}

TEST(ActQuantTest, NonFiniteAndZeroGroupsQuantizeToZero) {
  std::vector<float> x(3 * 256, 0.0f);
  x[256 + 5] = std::numeric_limits<float>::infinity();
  x[512 + 7] = std::numeric_limits<float>::quiet_NaN();
  x[512 + 8] = 2.0f;
  QuantizedActs q;
  QuantizeActs(x.data(), 1, 768, &q);
  for (int64_t k = 0; k < 512; ++k) EXPECT_EQ(q.q(0)[k], 0) << k;  // zero group, inf group
  EXPECT_EQ(q.q(0)[512 + 7], 0);                                   // NaN value
  EXPECT_EQ(q.q(0)[512 + 8], 127);                                 // the group's max
  EXPECT_FLOAT_EQ(q.group_base(0)[2], 2.0f / 2032.0f);
}

// The SIMD steps of this build's family (act_quant_internal.h).
struct SimdSteps {
  const char* name;
  bool supported;
  float (*amax)(const float*);
  void (*quantize)(const float*, float, int8_t*, int[2]);
};

SimdSteps GetSimdSteps() {
#if defined(__x86_64__)
  return {"avx2", GetCpuFeatures().HasAvx2Set(), avx2::BlockAmax, avx2::QuantizeBlock};
#elif defined(__aarch64__)
  return {"neon", GetCpuFeatures().HasNeonSet(), neon::BlockAmax, neon::QuantizeBlock};
#else
  return {"none", false, nullptr, nullptr};
#endif
}

TEST(ActQuantTest, ScalarAndSimdStepsAreBitIdentical) {
  const SimdSteps simd = GetSimdSteps();
  if (!simd.supported) GTEST_SKIP() << "this CPU cannot run the " << simd.name << " steps";
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> special(0, 40);
  const float specials[] = {0.0f, -0.0f, std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::denorm_min(), 1e30f, -1e-30f, 0.5f, -2.5f};
  for (int trial = 0; trial < 2000; ++trial) {
    float x[32];
    for (float& v : x) {
      const int s = special(rng);
      v = s < 10 ? specials[s] : normal(rng) * std::pow(10.0f, static_cast<float>(trial % 7 - 3));
    }
    const float ids[] = {0.0f, 1.0f, 127.0f / 3.0f, 1e-3f, 1e20f, std::ldexp(1.0f, trial % 40 - 20)};
    const float a0 = scalar::BlockAmax(x), a1 = simd.amax(x);
    ASSERT_EQ(0, std::memcmp(&a0, &a1, 4)) << trial;
    for (float id : ids) {
      int8_t q0[32], q1[32];
      int s0[2], s1[2];
      scalar::QuantizeBlock(x, id, q0, s0);
      simd.quantize(x, id, q1, s1);
      ASSERT_EQ(0, std::memcmp(q0, q1, 32)) << trial << " id " << id;
      ASSERT_EQ(s0[0], s1[0]);
      ASSERT_EQ(s0[1], s1[1]);
    }
  }
}

}  // namespace
}  // namespace tenzro::runtime
