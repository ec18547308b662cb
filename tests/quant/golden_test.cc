// Golden tests: every quantized byte and every dequantized float equal to
// ggml's (tests/data/quant, produced by ggml's reference quantizers), for the
// scalar reference, every SIMD variant this CPU runs, the dispatched
// QuantizeRows and the multi-threaded variant.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/file.h"
#include "quant/quantize_kernels.h"
#include "quant/types.h"
#include "testutil/testutil.h"

namespace tenzro::quant {
namespace {

struct GoldenType {
  std::string name;
  GgmlType type;
  uint64_t row_bytes;
  Bytes quantized;
  std::vector<float> dequantized;
};

struct Golden {
  int64_t rows = 0, n_per_row = 0;
  std::vector<float> input;
  std::vector<GoldenType> types;
};

const Golden& LoadGolden() {
  static const Golden g = [] {
    Golden g;
    auto text = ReadTextFile(testing::DataPath("quant/manifest.json"));
    EXPECT_TRUE(text);
    auto m = nlohmann::json::parse(*text);
    g.rows = m["rows"];
    g.n_per_row = m["n_per_row"];
    g.input = testing::ReadF32(testing::DataPath("quant/input.f32"));
    for (const auto& t : m["types"]) {
      GoldenType gt;
      gt.name = t["type"];
      gt.type = static_cast<GgmlType>(t["ggml_type"].get<uint32_t>());
      gt.row_bytes = t["row_bytes"];
      gt.quantized = testing::ReadAll(testing::DataPath("quant/" + t["quantized"].get<std::string>()));
      gt.dequantized = testing::ReadF32(testing::DataPath("quant/" + t["dequantized"].get<std::string>()));
      g.types.push_back(std::move(gt));
    }
    return g;
  }();
  return g;
}

std::vector<Isa> SupportedIsas() {
  std::vector<Isa> v;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512})
    if (IsaSupported(isa)) v.push_back(isa);
  return v;
}

// "" when equal, else where the first difference is.
std::string FirstByteDiff(const uint8_t* a, const uint8_t* b, size_t n, uint64_t row_bytes) {
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i])
      return "row " + std::to_string(i / row_bytes) + " byte " + std::to_string(i % row_bytes) + ": got " +
             std::to_string(a[i]) + " want " + std::to_string(b[i]);
  return "";
}

std::string FirstFloatDiff(const float* a, const float* b, size_t n, int64_t n_per_row) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t x, y;
    std::memcpy(&x, &a[i], 4);
    std::memcpy(&y, &b[i], 4);
    if (x != y)
      return "row " + std::to_string(i / n_per_row) + " value " + std::to_string(i % n_per_row) + ": got " +
             std::to_string(a[i]) + " want " + std::to_string(b[i]);
  }
  return "";
}

TEST(Golden, ManifestMatchesTraits) {
  const Golden& g = LoadGolden();
  ASSERT_EQ(g.input.size(), static_cast<size_t>(g.rows * g.n_per_row));
  ASSERT_EQ(g.types.size(), 8u);
  for (const auto& t : g.types) {
    const TypeTraits* tr = FindTraits(t.type);
    ASSERT_NE(tr, nullptr) << t.name;
    EXPECT_EQ(std::string(tr->name), t.name);
    EXPECT_EQ(*RowBytes(t.type, g.n_per_row), t.row_bytes) << t.name;
    EXPECT_EQ(t.quantized.size(), t.row_bytes * g.rows) << t.name;
    EXPECT_EQ(t.dequantized.size(), g.input.size()) << t.name;
    EXPECT_NE(tr->to_float, nullptr) << t.name;
    const bool encodable = t.type != GgmlType::Q4_0 && t.type != GgmlType::MXFP4;
    EXPECT_EQ(tr->from_float != nullptr, encodable) << t.name;
  }
}

TEST(Golden, QuantizeEveryIsaByteExact) {
  const Golden& g = LoadGolden();
  for (const auto& t : g.types) {
    if (t.type == GgmlType::Q4_0 || t.type == GgmlType::MXFP4) continue;
    for (Isa isa : SupportedIsas()) {
      Bytes out(t.quantized.size(), 0xAA);
      ASSERT_TRUE(QuantizeRowsIsa(isa, t.type, g.input.data(), out.data(), g.rows, g.n_per_row));
      EXPECT_EQ(FirstByteDiff(out.data(), t.quantized.data(), out.size(), t.row_bytes), "")
          << t.name << " " << IsaName(isa);
    }
    Bytes out(t.quantized.size(), 0x55);
    ASSERT_TRUE(QuantizeRows(t.type, g.input.data(), out.data(), g.rows, g.n_per_row));
    EXPECT_EQ(FirstByteDiff(out.data(), t.quantized.data(), out.size(), t.row_bytes), "") << t.name << " dispatched";
    std::fill(out.begin(), out.end(), 0x55);
    ASSERT_TRUE(QuantizeRowsParallel(t.type, g.input.data(), out.data(), g.rows, g.n_per_row, 4));
    EXPECT_EQ(FirstByteDiff(out.data(), t.quantized.data(), out.size(), t.row_bytes), "") << t.name << " parallel";
  }
}

TEST(Golden, DequantizeEveryIsaBitExact) {
  const Golden& g = LoadGolden();
  for (const auto& t : g.types) {
    for (Isa isa : SupportedIsas()) {
      std::vector<float> out(g.input.size(), -1.f);
      ASSERT_TRUE(DequantizeRowsIsa(isa, t.type, t.quantized.data(), out.data(), g.rows, g.n_per_row));
      EXPECT_EQ(FirstFloatDiff(out.data(), t.dequantized.data(), out.size(), g.n_per_row), "")
          << t.name << " " << IsaName(isa);
    }
    std::vector<float> out(g.input.size(), -1.f);
    ASSERT_TRUE(DequantizeRows(t.type, t.quantized.data(), out.data(), g.rows, g.n_per_row));
    EXPECT_EQ(FirstFloatDiff(out.data(), t.dequantized.data(), out.size(), g.n_per_row), "") << t.name;
    std::fill(out.begin(), out.end(), -1.f);
    ASSERT_TRUE(DequantizeRowsParallel(t.type, t.quantized.data(), out.data(), g.rows, g.n_per_row, 3));
    EXPECT_EQ(FirstFloatDiff(out.data(), t.dequantized.data(), out.size(), g.n_per_row), "") << t.name << " parallel";
  }
}

TEST(Golden, F32RoundTripsUnchanged) {
  const Golden& g = LoadGolden();
  std::vector<float> q(g.input.size()), back(g.input.size());
  ASSERT_TRUE(QuantizeRows(GgmlType::F32, g.input.data(), q.data(), g.rows, g.n_per_row));
  ASSERT_TRUE(DequantizeRows(GgmlType::F32, q.data(), back.data(), g.rows, g.n_per_row));
  EXPECT_EQ(0, std::memcmp(back.data(), g.input.data(), g.input.size() * 4));
}

TEST(Errors, RowLengthNotMultipleOfBlock) {
  std::vector<float> in(1000);
  std::vector<uint8_t> out(8192);
  struct Case {
    GgmlType type;
    int64_t n;
    const char* name;
  } cases[] = {{GgmlType::Q4_K, 1000, "q4_K"}, {GgmlType::Q8_0, 33, "q8_0"}, {GgmlType::Q6_K, 128, "q6_K"},
               {GgmlType::Q5_K, 300, "q5_K"}, {GgmlType::Q4_0, 31, "q4_0"}, {GgmlType::MXFP4, 17, "mxfp4"}};
  for (const auto& c : cases) {
    auto q = QuantizeRows(c.type, in.data(), out.data(), 1, c.n);
    ASSERT_FALSE(q) << c.name;
    EXPECT_EQ(q.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(q.error().message().find(c.name), std::string::npos) << q.error().message();
    EXPECT_NE(q.error().message().find(std::to_string(c.n)), std::string::npos) << q.error().message();
    auto d = DequantizeRowsParallel(c.type, out.data(), reinterpret_cast<float*>(in.data()), 1, c.n, 2);
    ASSERT_FALSE(d) << c.name;
    EXPECT_EQ(d.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(d.error().message().find(c.name), std::string::npos) << d.error().message();
  }
}

TEST(Errors, MissingKernelsAndBadCounts) {
  std::vector<float> in(256);
  std::vector<uint8_t> out(1024);
  auto q = QuantizeRows(GgmlType::Q4_0, in.data(), out.data(), 1, 256);
  ASSERT_FALSE(q);
  EXPECT_EQ(q.error().code(), ErrorCode::kUnsupported);
  auto iq = DequantizeRows(GgmlType::IQ2_XXS, out.data(), in.data(), 1, 256);
  ASSERT_FALSE(iq);
  EXPECT_EQ(iq.error().code(), ErrorCode::kUnsupported);
  EXPECT_FALSE(QuantizeRows(GgmlType::Q8_0, in.data(), out.data(), -1, 32));
  EXPECT_FALSE(QuantizeRows(static_cast<GgmlType>(99), in.data(), out.data(), 1, 32));
  EXPECT_TRUE(QuantizeRows(GgmlType::Q8_0, in.data(), out.data(), 0, 32));
}

TEST(Traits, NamesAreCaseInsensitive) {
  ASSERT_NE(FindTraitsByName("Q4_K"), nullptr);
  EXPECT_EQ(FindTraitsByName("q4_k")->type, GgmlType::Q4_K);
  EXPECT_EQ(FindTraitsByName("MXFP4")->type, GgmlType::MXFP4);
  EXPECT_EQ(FindTraitsByName("q7_K"), nullptr);
}

}  // namespace
}  // namespace tenzro::quant
