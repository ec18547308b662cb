// Kernel tests: every compute type's mat-vec and batched mat-mat against a
// double-precision reference on the dequantized weights (quant codecs), SIMD
// against scalar, odd batch sizes, thread-count independence.
#include "runtime/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "core/cpu.h"
#include "core/thread_pool.h"
#include "quant/types.h"
#include "runtime/act_quant.h"
#include "test_weights.h"

namespace tenzro::runtime {
namespace {

using quant::GgmlType;

struct Case {
  GgmlType type;
  int64_t row_len;
};

const Case kCases[] = {
    {GgmlType::F32, 515}, {GgmlType::F16, 517}, {GgmlType::BF16, 512}, {GgmlType::Q8_0, 352},
    {GgmlType::Q8_0, 512}, {GgmlType::Q4_K, 512}, {GgmlType::Q5_K, 768}, {GgmlType::Q6_K, 512},
};
const int kBatches[] = {1, 3, 7, 64, 65};
constexpr int64_t kRows = 37;

// The SIMD ISAs of this build's family (matmul.h); the tests below run each
// one the CPU supports and skip, by name, those it lacks (under qemu,
// scripts/test-arm64 picks CPU models so that each aarch64 ISA runs once).
const std::span<const KernelIsa> kSimdIsas = KernelIsaFamily();

std::vector<float> Dequantize(const WeightMatrix& w) {
  std::vector<float> out(w.rows * w.row_len);
  auto st = quant::DequantizeRows(w.type, w.data.data(), out.data(), w.rows, w.row_len);
  EXPECT_TRUE(st) << st.error().ToString();
  return out;
}

// What the integer kernels multiply: x rounded to the 8-bit activation grid.
std::vector<float> ActsSeenByKernel(GgmlType type, const std::vector<float>& x, int n_tok, int64_t n) {
  if (!UsesQuantizedActs(type)) return x;
  QuantizedActs q;
  QuantizeActs(x.data(), n_tok, n, &q);
  std::vector<float> out(x.size());
  for (int t = 0; t < n_tok; ++t)
    for (int64_t k = 0; k < n; ++k) out[t * n + k] = q.scale(t)[k / 32] * q.q(t)[k];
  return out;
}

std::vector<double> Reference(const std::vector<float>& w, const std::vector<float>& x, int64_t rows, int64_t n,
                              int n_tok) {
  std::vector<double> y(static_cast<size_t>(n_tok) * rows);
  for (int t = 0; t < n_tok; ++t)
    for (int64_t r = 0; r < rows; ++r) {
      double acc = 0;
      for (int64_t k = 0; k < n; ++k) acc += static_cast<double>(w[r * n + k]) * x[t * n + k];
      y[t * rows + r] = acc;
    }
  return y;
}

// max |a - ref| / (rms(ref) + tiny)
double MaxRelErr(const std::vector<float>& a, const std::vector<double>& ref) {
  double rms = 0, mx = 0;
  for (double v : ref) rms += v * v;
  rms = std::sqrt(rms / ref.size());
  for (size_t i = 0; i < a.size(); ++i) mx = std::max(mx, std::fabs(a[i] - ref[i]));
  return mx / (rms + 1e-30);
}

double RelL2(const std::vector<float>& a, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) { num += (a[i] - ref[i]) * (a[i] - ref[i]); den += ref[i] * ref[i]; }
  return std::sqrt(num / den);
}

class MatMulTest : public ::testing::TestWithParam<Case> {};

TEST_P(MatMulTest, MatchesDequantizedReference) {
  const Case c = GetParam();
  const WeightMatrix w = testing::RandomMatrix(c.type, kRows, c.row_len, 1234 + static_cast<uint32_t>(c.type));
  const std::vector<float> wf = Dequantize(w);
  for (int n_tok : kBatches) {
    SCOPED_TRACE(fmt::format("{} row_len {} n_tok {}", quant::TypeName(c.type), c.row_len, n_tok));
    const std::vector<float> x = testing::RandomActs(n_tok * c.row_len, 99 + n_tok);
    const std::vector<float> xk = ActsSeenByKernel(c.type, x, n_tok, c.row_len);
    const std::vector<double> ref = Reference(wf, xk, kRows, c.row_len, n_tok);
    const std::vector<double> ref_exact = Reference(wf, x, kRows, c.row_len, n_tok);
    for (KernelIsa isa : {KernelIsa::kScalar, KernelIsa::kAvx2, KernelIsa::kAvx512, KernelIsa::kNeon,
                          KernelIsa::kDotprod, KernelIsa::kI8mm}) {
      if (!KernelIsaSupported(isa)) continue;
      SCOPED_TRACE(KernelIsaName(isa));
      std::vector<float> y(n_tok * kRows, NAN);
      ASSERT_TRUE(MatMulIsa(isa, w, x.data(), n_tok, y.data()));
      EXPECT_LT(MaxRelErr(y, ref), 2e-5);
      // 8-bit activations in blocks of 32: about 0.5% of the exact result.
      EXPECT_LT(RelL2(y, ref_exact), UsesQuantizedActs(c.type) ? 1.5e-2 : 1e-5);
    }
  }
}

class MatMulSimdTest : public ::testing::TestWithParam<std::tuple<Case, KernelIsa>> {};

TEST_P(MatMulSimdTest, SimdMatchesScalar) {
  const auto [c, isa] = GetParam();
  if (!KernelIsaSupported(isa)) GTEST_SKIP() << "this CPU cannot run " << KernelIsaName(isa) << " kernels";
  const WeightMatrix w = testing::RandomMatrix(c.type, kRows, c.row_len, 77);
  for (int n_tok : kBatches) {
    const std::vector<float> x = testing::RandomActs(n_tok * c.row_len, 5 + n_tok);
    std::vector<float> ys(n_tok * kRows), yv(n_tok * kRows);
    ASSERT_TRUE(MatMulIsa(KernelIsa::kScalar, w, x.data(), n_tok, ys.data()));
    ASSERT_TRUE(MatMulIsa(isa, w, x.data(), n_tok, yv.data()));
    std::vector<double> ref(ys.begin(), ys.end());
    EXPECT_LT(MaxRelErr(yv, ref), 2e-5) << quant::TypeName(c.type) << " n_tok " << n_tok;
  }
}

TEST_P(MatMulTest, ThreadCountDoesNotChangeBits) {
  const Case c = GetParam();
  const int64_t rows = 301;
  const WeightMatrix w = testing::RandomMatrix(c.type, rows, c.row_len, 4242);
  ThreadPool pool2(1), pool4(3);
  for (int n_tok : {1, 7, 65}) {
    const std::vector<float> x = testing::RandomActs(n_tok * c.row_len, 11 + n_tok);
    std::vector<float> y1(n_tok * rows), y2(y1.size()), y4(y1.size());
    ASSERT_TRUE(MatMul(w, x.data(), n_tok, y1.data(), nullptr));
    ASSERT_TRUE(MatMul(w, x.data(), n_tok, y2.data(), &pool2));
    ASSERT_TRUE(MatMul(w, x.data(), n_tok, y4.data(), &pool4));
    EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), y1.size() * 4)) << quant::TypeName(c.type) << " " << n_tok;
    EXPECT_EQ(0, std::memcmp(y1.data(), y4.data(), y1.size() * 4)) << quant::TypeName(c.type) << " " << n_tok;
  }
}

TEST_P(MatMulTest, BatchEqualsSingleTokens) {
  // Tiling must not change any output bit: token t of a batch == token t alone.
  const Case c = GetParam();
  // 2: the row kernel; 7 and 17: token tiles (one padded; two plus a padded one).
  const WeightMatrix w = testing::RandomMatrix(c.type, kRows, c.row_len, 31);
  for (int n_tok : {2, 7, 17}) {
    const std::vector<float> x = testing::RandomActs(n_tok * c.row_len, 8 + n_tok);
    std::vector<float> yb(n_tok * kRows), y1(kRows);
    ASSERT_TRUE(MatMul(w, x.data(), n_tok, yb.data()));
    for (int t = 0; t < n_tok; ++t) {
      ASSERT_TRUE(MatMul(w, x.data() + t * c.row_len, 1, y1.data()));
      EXPECT_EQ(0, std::memcmp(y1.data(), yb.data() + t * kRows, kRows * 4)) << "n_tok " << n_tok << " token " << t;
    }
  }
}

// Blocks at the extremes of every k-quant type (largest weights, scales and
// mins, Q6_K's -32 x -128 corner) against activations that all quantize to
// +-127 with the largest multiplier: the integer sums reach ~2^31 and must
// still come out exact, in the row kernel and the tile kernel alike
// (AVX-512 against AVX2 bit for bit: matmul_isa_test.cc).
class MatMulExtremesTest : public ::testing::TestWithParam<KernelIsa> {};

TEST_P(MatMulExtremesTest, SaturatedKQuantBlocksStayExact) {
  const KernelIsa isa = GetParam();
  if (!KernelIsaSupported(isa)) GTEST_SKIP() << "this CPU cannot run " << KernelIsaName(isa) << " kernels";
  for (GgmlType type : {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    const int64_t n = 512, rows = 5;
    const WeightMatrix w = testing::SaturatedKQuantMatrix(type, rows, n);
    for (float sign : {1.0f, -1.0f}) {
      const int n_tok = 9;
      std::vector<float> x(n_tok * n, sign);
      std::vector<float> ys(n_tok * rows), yv(n_tok * rows), y1(rows);
      ASSERT_TRUE(MatMulIsa(KernelIsa::kScalar, w, x.data(), n_tok, ys.data()));
      ASSERT_TRUE(MatMulIsa(isa, w, x.data(), n_tok, yv.data()));
      for (size_t i = 0; i < ys.size(); ++i)
        ASSERT_NEAR(yv[i], ys[i], 1e-6 * std::fabs(ys[i])) << quant::TypeName(type) << " " << i;
      ASSERT_TRUE(MatMulIsa(isa, w, x.data(), 1, y1.data()));
      EXPECT_EQ(0, std::memcmp(y1.data(), yv.data(), rows * 4)) << quant::TypeName(type);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, MatMulTest, ::testing::ValuesIn(kCases), [](const auto& info) {
  return fmt::format("{}_{}", quant::TypeName(info.param.type), info.param.row_len);
});
INSTANTIATE_TEST_SUITE_P(TypesIsas, MatMulSimdTest, ::testing::Combine(::testing::ValuesIn(kCases), ::testing::ValuesIn(kSimdIsas)),
                         [](const auto& info) {
                           const Case c = std::get<0>(info.param);
                           return fmt::format("{}_{}_{}", quant::TypeName(c.type), c.row_len,
                                              KernelIsaName(std::get<1>(info.param)));
                         });
INSTANTIATE_TEST_SUITE_P(Isas, MatMulExtremesTest, ::testing::ValuesIn(kSimdIsas),
                         [](const auto& info) { return std::string(KernelIsaName(info.param)); });

// Prints what this CPU reports and the ISA MatMul uses (scripts/test-arm64
// shows it for each emulated CPU model).
TEST(KernelIsaTest, ReportsTheIsaInUse) {
  const KernelIsa best = BestKernelIsa();
  std::printf("runtime ISA: %s (cpu: %s)\n", KernelIsaName(best), GetCpuFeatures().ToString().c_str());
  EXPECT_TRUE(KernelIsaSupported(best));
  if (std::getenv("TENZRO_RUNTIME_ISA") != nullptr) return;  // lowered on purpose
  for (KernelIsa isa : kSimdIsas) {
    if (KernelIsaSupported(isa)) {
      EXPECT_GE(static_cast<int>(best), static_cast<int>(isa)) << KernelIsaName(isa);
    }
  }
}

TEST(WeightMatrixTest, ValidatesShapeAndSize) {
  Bytes b(144 * 2);
  EXPECT_TRUE(WeightMatrix::Borrow(GgmlType::Q4_K, 256, 2, b).has_value());
  auto wrong_size = WeightMatrix::Borrow(GgmlType::Q4_K, 256, 3, b);
  ASSERT_FALSE(wrong_size);
  EXPECT_EQ(wrong_size.error().code(), ErrorCode::kInvalidArgument);
  auto bad_len = WeightMatrix::Borrow(GgmlType::Q4_K, 100, 2, b);
  ASSERT_FALSE(bad_len);
  EXPECT_EQ(bad_len.error().code(), ErrorCode::kInvalidArgument);
  auto unsupported = WeightMatrix::Borrow(GgmlType::IQ2_XXS, 256, 1, ByteSpan(b.data(), 66));
  ASSERT_FALSE(unsupported);
  EXPECT_EQ(unsupported.error().code(), ErrorCode::kUnsupported);
  auto zero = WeightMatrix::Borrow(GgmlType::F32, 0, 0, {});
  EXPECT_FALSE(zero);
}

TEST(WeightMatrixTest, ExpertShapesMustAgree) {
  ExpertWeights e;
  e.gate = testing::RandomMatrix(GgmlType::Q4_K, 32, 256, 1);
  e.up = testing::RandomMatrix(GgmlType::Q4_K, 32, 256, 2);
  e.down = testing::RandomMatrix(GgmlType::Q8_0, 256, 32, 3);
  EXPECT_TRUE(e.Validate());
  e.down = testing::RandomMatrix(GgmlType::Q8_0, 255, 32, 3);
  EXPECT_FALSE(e.Validate());
  e.down = testing::RandomMatrix(GgmlType::Q8_0, 256, 64, 3);
  EXPECT_FALSE(e.Validate());
}

}  // namespace
}  // namespace tenzro::runtime
