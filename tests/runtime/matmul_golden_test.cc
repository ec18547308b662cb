// Cross-ISA golden test: MatMul's output bits for fixed inputs, one 64-bit
// FNV-1a hash per (type, row length, batch), recorded from the x86-64 AVX2
// kernels and checked on every SIMD ISA this CPU runs (x86: AVX2, AVX-512;
// aarch64: NEON, dotprod, i8mm), so ARM holders give bit-identical answers
// (kernels.h cross-ISA contract).
//
// The inputs come from splitmix64 and exact integer-to-float steps only (no
// libm, no float expression a compiler may contract into an FMA), so they are
// the same bits on every architecture. To re-record after a deliberate change
// of the arithmetic: TENZRO_GOLDEN_PRINT=1 on an AVX2 machine prints the table.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "quant/blocks.h"
#include "quant/types.h"
#include "runtime/matmul.h"
#include "test_weights.h"

namespace tenzro::runtime {
namespace {

using quant::GgmlType;

struct SplitMix {
  uint64_t s;
  uint64_t Next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // A float in [-1, 1): a 24-bit integer times 2^-23 (exact).
  float Unit() { return static_cast<float>(static_cast<int32_t>(Next() >> 40) - (1 << 23)) * 0x1p-23f; }
  // An f16 bit pattern: random sign and mantissa, exponent field lo..hi.
  uint16_t Half(int lo, int hi, bool sign = true) {
    const uint64_t r = Next();
    const uint16_t e = static_cast<uint16_t>(lo + static_cast<int>(r % (hi - lo + 1)));
    return static_cast<uint16_t>(((sign && (r >> 20) & 1) ? 0x8000 : 0) | (e << 10) | ((r >> 32) & 0x3FF));
  }
};

uint64_t Fnv1a(const void* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const uint8_t*>(p)[i]) * 0x100000001b3ull;
  return h;
}

WeightMatrix GoldenMatrix(GgmlType type, int64_t rows, int64_t row_len, uint64_t seed) {
  SplitMix g{seed};
  const uint64_t rb = *quant::RowBytes(type, row_len);
  Bytes data(rb * rows);
  for (auto& b : data) b = static_cast<uint8_t>(g.Next() >> 56);
  const int64_t n = rows * row_len;
  auto put16 = [](uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); };
  switch (type) {
    case GgmlType::F32:
      for (int64_t i = 0; i < n; ++i) {
        const float v = g.Unit() * 0x1p-4f;
        std::memcpy(&data[4 * i], &v, 4);
      }
      break;
    case GgmlType::F16:  // |w| in [2^-9, 2^-3)
      for (int64_t i = 0; i < n; ++i) put16(&data[2 * i], g.Half(6, 11));
      break;
    case GgmlType::BF16:  // exponents 2^-9 .. 2^-4
      for (int64_t i = 0; i < n; ++i) {
        const uint64_t r = g.Next();
        put16(&data[2 * i], static_cast<uint16_t>(((r & 1) << 15) | ((118 + (r >> 8) % 6) << 7) | ((r >> 16) & 0x7F)));
      }
      break;
    case GgmlType::Q8_0: {  // any qs byte (-128 included); d in [2^-11, 2^-7)
      auto* b = reinterpret_cast<quant::block_q8_0*>(data.data());
      for (int64_t i = 0; i < n / 32; ++i) b[i].d = g.Half(4, 7);
      break;
    }
    case GgmlType::Q4_K: {  // any quants and scales; d, dmin positive
      auto* b = reinterpret_cast<quant::block_q4_K*>(data.data());
      for (int64_t i = 0; i < n / 256; ++i) b[i].d = g.Half(3, 6, false), b[i].dmin = g.Half(3, 6, false);
      break;
    }
    case GgmlType::Q5_K: {
      auto* b = reinterpret_cast<quant::block_q5_K*>(data.data());
      for (int64_t i = 0; i < n / 256; ++i) b[i].d = g.Half(3, 6, false), b[i].dmin = g.Half(3, 6, false);
      break;
    }
    case GgmlType::Q6_K: {
      auto* b = reinterpret_cast<quant::block_q6_K*>(data.data());
      for (int64_t i = 0; i < n / 256; ++i) b[i].d = g.Half(1, 4);
      break;
    }
    default:
      break;
  }
  return *WeightMatrix::Own(type, row_len, rows, std::move(data));
}

// Activations whose 32-value blocks differ in size by up to 2^4, so the
// quantizer's block multipliers take many values; a few exact zeros.
std::vector<float> GoldenActs(int64_t n, uint64_t seed) {
  SplitMix g{seed};
  std::vector<float> x(n);
  float scale = 1.0f;
  for (int64_t k = 0; k < n; ++k) {
    if (k % 32 == 0) scale = 1.0f / static_cast<float>(1 << (g.Next() % 5));
    const uint64_t r = g.Next();
    x[k] = r % 61 == 0 ? 0.0f : g.Unit() * scale;
  }
  return x;
}

struct GoldenCase {
  GgmlType type;
  int64_t row_len;
  int n_tok;
  uint64_t hash;  // FNV-1a of the n_tok x kGoldenRows f32 outputs, from the AVX2 kernels
};

constexpr int64_t kGoldenRows = 37;  // odd: the kernels' row remainders run too

// Recorded with TENZRO_GOLDEN_PRINT=1 from the AVX2 build (x86-64).
const GoldenCase kGolden[] = {
    {GgmlType::F32, 512, 1, 0x26282a842e622a63ull},
    {GgmlType::F32, 512, 2, 0xfeba211d9f70c2e0ull},
    {GgmlType::F32, 512, 3, 0xf3aae1c3717e3d43ull},
    {GgmlType::F32, 512, 4, 0x3eeb93676ac9393eull},
    {GgmlType::F32, 512, 7, 0x4f04f437d9848482ull},
    {GgmlType::F32, 512, 8, 0xbebf5ed85f176030ull},
    {GgmlType::F32, 512, 17, 0xb15a43e0ef886d8dull},
    {GgmlType::F32, 512, 64, 0x5cb1f91cab9f8003ull},
    {GgmlType::F32, 515, 1, 0x3cf6d9cf7907a149ull},
    {GgmlType::F32, 515, 2, 0xe3ae187ec32fcf30ull},
    {GgmlType::F32, 515, 3, 0xc9a407c2523c6183ull},
    {GgmlType::F32, 515, 4, 0x827158b6db77092full},
    {GgmlType::F32, 515, 7, 0xaf3dc545c9a4e1faull},
    {GgmlType::F32, 515, 8, 0xf5e782bb34b2c538ull},
    {GgmlType::F32, 515, 17, 0x1ab12a191c902c5eull},
    {GgmlType::F32, 515, 64, 0xa3cdb25b21757224ull},
    {GgmlType::F16, 512, 1, 0x89315779fe137e06ull},
    {GgmlType::F16, 512, 2, 0x7137ea8db7206e71ull},
    {GgmlType::F16, 512, 3, 0x29e6b045e9a8d172ull},
    {GgmlType::F16, 512, 4, 0xf27cc64919c40639ull},
    {GgmlType::F16, 512, 7, 0xaee9473e27363b33ull},
    {GgmlType::F16, 512, 8, 0x407d2950b50c60a9ull},
    {GgmlType::F16, 512, 17, 0x92bf72fc14033463ull},
    {GgmlType::F16, 512, 64, 0x70a5693c50d46308ull},
    {GgmlType::F16, 517, 1, 0x8e854f25bc11b748ull},
    {GgmlType::F16, 517, 2, 0x2ee90ba259619e27ull},
    {GgmlType::F16, 517, 3, 0x26bb36f16a92745bull},
    {GgmlType::F16, 517, 4, 0x176aafa7bd5b056cull},
    {GgmlType::F16, 517, 7, 0xb1f6838248e01035ull},
    {GgmlType::F16, 517, 8, 0xd102e9a083899269ull},
    {GgmlType::F16, 517, 17, 0x71cd697ba0c2d54cull},
    {GgmlType::F16, 517, 64, 0x77125540e1db173cull},
    {GgmlType::BF16, 512, 1, 0x22289674b1863041ull},
    {GgmlType::BF16, 512, 2, 0x1699f4c7528e7a50ull},
    {GgmlType::BF16, 512, 3, 0x399e0958ccb0b348ull},
    {GgmlType::BF16, 512, 4, 0x8ecae97043b946edull},
    {GgmlType::BF16, 512, 7, 0x4c37f0dffbb1c617ull},
    {GgmlType::BF16, 512, 8, 0xcb85c072f8b73628ull},
    {GgmlType::BF16, 512, 17, 0x58f3b5f59ae39707ull},
    {GgmlType::BF16, 512, 64, 0xb7033bae3e4ecd60ull},
    {GgmlType::Q8_0, 352, 1, 0xfd8989d157fbc5a0ull},
    {GgmlType::Q8_0, 352, 2, 0x9c372c66a17a6260ull},
    {GgmlType::Q8_0, 352, 3, 0x936bcb709bd84673ull},
    {GgmlType::Q8_0, 352, 4, 0x98423397d633ce95ull},
    {GgmlType::Q8_0, 352, 7, 0x2dd5c52102307cd5ull},
    {GgmlType::Q8_0, 352, 8, 0x1d4471f7b1250300ull},
    {GgmlType::Q8_0, 352, 17, 0x9d4f744703349a09ull},
    {GgmlType::Q8_0, 352, 64, 0xf8b2d67e8dc1c4b4ull},
    {GgmlType::Q8_0, 512, 1, 0x3ca56e80b36db95eull},
    {GgmlType::Q8_0, 512, 2, 0xe09e18412b7ef520ull},
    {GgmlType::Q8_0, 512, 3, 0x91222474ef59f326ull},
    {GgmlType::Q8_0, 512, 4, 0x7fa0505b625f6eb0ull},
    {GgmlType::Q8_0, 512, 7, 0x1af99f4a1c69d49dull},
    {GgmlType::Q8_0, 512, 8, 0xfb576c91d08baf2dull},
    {GgmlType::Q8_0, 512, 17, 0x3de8969947a8e33cull},
    {GgmlType::Q8_0, 512, 64, 0xf150239be214120aull},
    {GgmlType::Q4_K, 512, 1, 0x29eddeefeda8000dull},
    {GgmlType::Q4_K, 512, 2, 0x9088e0ea164cacbaull},
    {GgmlType::Q4_K, 512, 3, 0xe98477cd76b24e67ull},
    {GgmlType::Q4_K, 512, 4, 0x9b34f21f8a2baaecull},
    {GgmlType::Q4_K, 512, 7, 0x24d9ac5c90ae964aull},
    {GgmlType::Q4_K, 512, 8, 0x40d6a89769535887ull},
    {GgmlType::Q4_K, 512, 17, 0x5bf5fdc2c4c00b12ull},
    {GgmlType::Q4_K, 512, 64, 0x744cea941b680aa5ull},
    {GgmlType::Q5_K, 768, 1, 0x233ae51215cb3816ull},
    {GgmlType::Q5_K, 768, 2, 0x37adbf5d57c8bf30ull},
    {GgmlType::Q5_K, 768, 3, 0xd094a5be19dd9dbdull},
    {GgmlType::Q5_K, 768, 4, 0x28f0a5bf0d1d927eull},
    {GgmlType::Q5_K, 768, 7, 0xe89ec9a370161e95ull},
    {GgmlType::Q5_K, 768, 8, 0x30860daa53fbaac5ull},
    {GgmlType::Q5_K, 768, 17, 0x9e04f697f991956dull},
    {GgmlType::Q5_K, 768, 64, 0xcb7d6d47c228ac68ull},
    {GgmlType::Q6_K, 512, 1, 0x776d70a4a76fe3f8ull},
    {GgmlType::Q6_K, 512, 2, 0x6f9a32a64eb04f04ull},
    {GgmlType::Q6_K, 512, 3, 0x2c08c4ae52f9e029ull},
    {GgmlType::Q6_K, 512, 4, 0x280588703b361be8ull},
    {GgmlType::Q6_K, 512, 7, 0xd995d3445400e303ull},
    {GgmlType::Q6_K, 512, 8, 0x1d7109a9a2bf33e4ull},
    {GgmlType::Q6_K, 512, 17, 0x84cc856c4505fdb7ull},
    {GgmlType::Q6_K, 512, 64, 0x55b18f1a48f122b2ull},
};

// test_weights.h's RandomMatrix(Q4_K, 8, 512, 1234) bytes and RandomActs(4096, 99), on x86-64.
constexpr uint64_t kRandomMatrixHash = 0x3e4b57dc5dcfb3dfull;
constexpr uint64_t kRandomActsHash = 0xc630dd4a544804c2ull;

const std::span<const KernelIsa> kSimdIsas = KernelIsaFamily();

const char* EnumName(GgmlType t) {
  switch (t) {
    case GgmlType::F32: return "F32";
    case GgmlType::F16: return "F16";
    case GgmlType::BF16: return "BF16";
    case GgmlType::Q8_0: return "Q8_0";
    case GgmlType::Q4_K: return "Q4_K";
    case GgmlType::Q5_K: return "Q5_K";
    case GgmlType::Q6_K: return "Q6_K";
    default: return "?";
  }
}

class MatMulGoldenTest : public ::testing::TestWithParam<KernelIsa> {};

TEST_P(MatMulGoldenTest, OutputBitsMatchAvx2) {
  const KernelIsa isa = GetParam();
  if (!KernelIsaSupported(isa)) GTEST_SKIP() << "this CPU cannot run " << KernelIsaName(isa) << " kernels";
  const bool print = std::getenv("TENZRO_GOLDEN_PRINT") != nullptr;
  for (const GoldenCase& c : kGolden) {
    const WeightMatrix w = GoldenMatrix(c.type, kGoldenRows, c.row_len, 1000 + static_cast<uint64_t>(c.type));
    const std::vector<float> x = GoldenActs(c.n_tok * c.row_len, 7 + c.n_tok);
    std::vector<float> y(static_cast<size_t>(c.n_tok) * kGoldenRows);
    ASSERT_TRUE(MatMulIsa(isa, w, x.data(), c.n_tok, y.data()));
    const uint64_t h = Fnv1a(y.data(), y.size() * sizeof(float));
    if (print)
      std::printf("    {GgmlType::%s, %lld, %d, 0x%016llxull},\n", EnumName(c.type),
                  static_cast<long long>(c.row_len), c.n_tok, static_cast<unsigned long long>(h));
    EXPECT_EQ(h, c.hash) << KernelIsaName(isa) << " " << quant::TypeName(c.type) << " row_len " << c.row_len
                         << " n_tok " << c.n_tok << ": output bits differ from the AVX2 kernels'";
  }
}

INSTANTIATE_TEST_SUITE_P(Isas, MatMulGoldenTest, ::testing::ValuesIn(kSimdIsas),
                         [](const auto& info) { return std::string(KernelIsaName(info.param)); });

// The seeded helpers of test_weights.h, which the other kernel tests use, go
// through std::normal_distribution (libm, and float expressions the compiler
// may fuse differently per target): this records whether they give the same
// bits here as on x86-64. Informational for the cross-ISA claim (the golden
// inputs above do not use them); a difference means only that those tests
// see other inputs on this architecture.
TEST(TestWeightsTest, SeededHelpersMatchX86) {
  const WeightMatrix w = testing::RandomMatrix(GgmlType::Q4_K, 8, 512, 1234);
  const std::vector<float> x = testing::RandomActs(4096, 99);
  const uint64_t hw = Fnv1a(w.data.data(), w.data.size());
  const uint64_t hx = Fnv1a(x.data(), x.size() * sizeof(float));
  if (std::getenv("TENZRO_GOLDEN_PRINT")) std::printf("RandomMatrix 0x%016llx RandomActs 0x%016llx\n",
                                                      static_cast<unsigned long long>(hw), static_cast<unsigned long long>(hx));
  EXPECT_EQ(hw, kRandomMatrixHash);
  EXPECT_EQ(hx, kRandomActsHash);
}

}  // namespace
}  // namespace tenzro::runtime
