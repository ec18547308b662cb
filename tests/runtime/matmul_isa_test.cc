// AVX-512 VNNI kernels against the AVX2 kernels: kernels.h promises the same
// bits, so every output is compared with memcmp, for every quantized type
// avx512::GetKernel covers, many batch sizes (row kernels, full and padded
// token tiles, odd tile counts) and several row ranges per call. Skipped,
// naming the missing flags, on CPUs without the AVX-512 set. x86-64 only
// (the aarch64 kernels' bits are checked by matmul_golden_test.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/cpu.h"
#include "core/thread_pool.h"
#include "quant/types.h"
#include "runtime/act_quant.h"
#include "runtime/kernels.h"
#include "runtime/matmul.h"
#include "test_weights.h"

#if defined(__x86_64__)
namespace tenzro::runtime {
namespace {

using quant::GgmlType;

// "" when this CPU runs both kernel sets, else what it lacks.
std::string MissingIsas() {
  const CpuFeatures& f = GetCpuFeatures();
  std::string m;
  auto need = [&](bool have, const char* name) {
    if (!have) m += std::string(m.empty() ? "" : " ") + name;
  };
  need(f.avx2, "avx2");
  need(f.fma, "fma");
  need(f.f16c, "f16c");
  need(f.avx512f, "avx512f");
  need(f.avx512bw, "avx512bw");
  need(f.avx512vl, "avx512vl");
  need(f.avx512dq, "avx512dq");
  need(f.avx512vnni, "avx512vnni");
  return m;
}

#define TENZRO_REQUIRE_AVX512()                                                              \
  do {                                                                                      \
    const std::string missing = MissingIsas();                                              \
    if (!missing.empty()) GTEST_SKIP() << "AVX-512 kernels not tested: CPU lacks " << missing; \
  } while (0)

struct Case {
  GgmlType type;
  int64_t row_len;
  int64_t rows;
};

// 37 rows: 8-row blocks plus a tail of 5 (4 + 1 in the tile kernel). 8448 =
// 33 super-blocks: past the decode kernel's 8-row limit (kMaxSb), so rows go
// one at a time there.
const Case kCases[] = {
    {GgmlType::Q8_0, 352, 37}, {GgmlType::Q8_0, 512, 37}, {GgmlType::Q4_K, 512, 37},
    {GgmlType::Q5_K, 768, 37}, {GgmlType::Q6_K, 512, 37}, {GgmlType::Q4_K, 3072, 19},
    {GgmlType::Q5_K, 1024, 21}, {GgmlType::Q6_K, 1024, 23}, {GgmlType::Q4_K, 8448, 11},
    {GgmlType::Q6_K, 8448, 9},
};
const int kBatches[] = {1, 2, 3, 4, 7, 8, 15, 16, 17, 33, 64, 65};

// Runs `isa`'s kernel for `type` directly over the row ranges [cuts[k], cuts[k+1]).
void RunRanges(KernelIsa isa, const WeightMatrix& w, const QuantizedActs& q, int n_tok,
               const std::vector<int64_t>& cuts, float* y) {
  RowsKernel k = isa == KernelIsa::kAvx512 ? avx512::GetKernel(w.type) : avx2::GetKernel(w.type);
  ASSERT_NE(k, nullptr) << KernelIsaName(isa) << " " << quant::TypeName(w.type);
  KernelArgs a;
  a.w = &w;
  a.q = &q;
  a.n_tok = n_tok;
  a.row_bytes = w.row_bytes();
  a.y = y;
  a.ldy = w.rows;
  for (size_t c = 0; c + 1 < cuts.size(); ++c) k(a, cuts[c], cuts[c + 1]);
}

class MatMulIsaTest : public ::testing::TestWithParam<Case> {};

TEST_P(MatMulIsaTest, Avx512BitsEqualAvx2) {
  TENZRO_REQUIRE_AVX512();
  const Case c = GetParam();
  const WeightMatrix w = testing::RandomMatrix(c.type, c.rows, c.row_len, 555 + static_cast<uint32_t>(c.row_len));
  for (int n_tok : kBatches) {
    SCOPED_TRACE(fmt::format("{} row_len {} n_tok {}", quant::TypeName(c.type), c.row_len, n_tok));
    const std::vector<float> x = testing::RandomActs(n_tok * c.row_len, 17 + n_tok);
    std::vector<float> y2(n_tok * c.rows, NAN), y5(y2.size(), NAN);
    ASSERT_TRUE(MatMulIsa(KernelIsa::kAvx2, w, x.data(), n_tok, y2.data()));
    ASSERT_TRUE(MatMulIsa(KernelIsa::kAvx512, w, x.data(), n_tok, y5.data()));
    EXPECT_EQ(0, std::memcmp(y2.data(), y5.data(), y2.size() * 4));
    // The same through uneven row ranges (what threads' chunks look like).
    QuantizedActs q;
    QuantizeActs(x.data(), n_tok, c.row_len, &q, UsesTokenTiles(c.type));
    std::vector<float> yr(y2.size(), NAN);
    RunRanges(KernelIsa::kAvx512, w, q, n_tok, {0, 1, 4, c.rows / 2 + 1, c.rows - 1, c.rows}, yr.data());
    EXPECT_EQ(0, std::memcmp(y2.data(), yr.data(), y2.size() * 4)) << "row ranges";
  }
}

TEST_P(MatMulIsaTest, Avx512ThreadsAndBatchesKeepBits) {
  TENZRO_REQUIRE_AVX512();
  const Case c = GetParam();
  const WeightMatrix w = testing::RandomMatrix(c.type, c.rows, c.row_len, 91);
  ThreadPool pool(2);
  const int n_tok = 17;
  const std::vector<float> x = testing::RandomActs(n_tok * c.row_len, 3);
  std::vector<float> yb(n_tok * c.rows), yp(yb.size()), y1(c.rows);
  ASSERT_TRUE(MatMulIsa(KernelIsa::kAvx512, w, x.data(), n_tok, yb.data()));
  ASSERT_TRUE(MatMulIsa(KernelIsa::kAvx512, w, x.data(), n_tok, yp.data(), &pool));
  EXPECT_EQ(0, std::memcmp(yb.data(), yp.data(), yb.size() * 4));
  for (int t = 0; t < n_tok; ++t) {
    ASSERT_TRUE(MatMulIsa(KernelIsa::kAvx512, w, x.data() + t * c.row_len, 1, y1.data()));
    EXPECT_EQ(0, std::memcmp(y1.data(), yb.data() + t * c.rows, c.rows * 4)) << "token " << t;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, MatMulIsaTest, ::testing::ValuesIn(kCases), [](const auto& info) {
  return fmt::format("{}_{}", quant::TypeName(info.param.type), info.param.row_len);
});

// matmul_test.cc's saturated blocks (integer sums near 2^31) through the
// AVX-512 kernels: exact against scalar, the AVX2 bits, batch == one token.
TEST(MatMulExtremesTest, SaturatedKQuantBlocksStayExactAvx512) {
  TENZRO_REQUIRE_AVX512();
  for (GgmlType type : {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    const int64_t n = 512, rows = 5;
    const WeightMatrix w = testing::SaturatedKQuantMatrix(type, rows, n);
    for (float sign : {1.0f, -1.0f}) {
      for (int n_tok : {1, 2, 9, 17}) {
        SCOPED_TRACE(fmt::format("{} sign {} n_tok {}", quant::TypeName(type), sign, n_tok));
        std::vector<float> x(n_tok * n, sign);
        std::vector<float> ys(n_tok * rows), y2(ys.size()), y5(ys.size()), y1(rows);
        ASSERT_TRUE(MatMulIsa(KernelIsa::kScalar, w, x.data(), n_tok, ys.data()));
        ASSERT_TRUE(MatMulIsa(KernelIsa::kAvx2, w, x.data(), n_tok, y2.data()));
        ASSERT_TRUE(MatMulIsa(KernelIsa::kAvx512, w, x.data(), n_tok, y5.data()));
        for (size_t i = 0; i < ys.size(); ++i) ASSERT_NEAR(y5[i], ys[i], 1e-6 * std::fabs(ys[i])) << i;
        EXPECT_EQ(0, std::memcmp(y2.data(), y5.data(), ys.size() * 4));
        ASSERT_TRUE(MatMulIsa(KernelIsa::kAvx512, w, x.data(), 1, y1.data()));
        EXPECT_EQ(0, std::memcmp(y1.data(), y5.data(), rows * 4));
      }
    }
  }
}

// Float weights have no AVX-512 kernel: GetKernel says so, MatMul uses AVX2.
TEST(MatMulIsaCoverage, FloatTypesFallBackToAvx2) {
  TENZRO_REQUIRE_AVX512();  // the function is compiled for AVX-512
  for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16}) EXPECT_EQ(avx512::GetKernel(t), nullptr);
  for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K})
    EXPECT_NE(avx512::GetKernel(t), nullptr) << quant::TypeName(t);
}

}  // namespace
}  // namespace tenzro::runtime
#endif  // defined(__x86_64__)
