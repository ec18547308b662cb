// safetensors reader/writer round trips and hostile headers.
#include <gtest/gtest.h>

#include <random>

#include "format/safetensors_reader.h"
#include "testutil/testutil.h"

namespace tenzro::format {
namespace {

Bytes Fill(size_t n, uint8_t seed) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(seed * 31 + i);
  return b;
}

TEST(Safetensors, RoundTrip) {
  Bytes a = Fill(2 * 3 * 4, 1), b = Fill(5 * 2, 2), c = Fill(7, 3), d = Fill(4 * 8, 4);
  SafetensorsWriter w;
  w.SetMetadata("format", "pt");
  ASSERT_TRUE(w.AddTensor("a", StDtype::kF32, {2, 3}, a));
  ASSERT_TRUE(w.AddTensor("b", StDtype::kBF16, {5}, b));
  ASSERT_TRUE(w.AddTensor("c", StDtype::kF8E4M3, {7}, c));
  ASSERT_TRUE(w.AddTensor("d", StDtype::kI64, {2, 2}, d));
  ASSERT_TRUE(w.AddTensor("scalar_empty", StDtype::kF16, {0}, {}));
  EXPECT_FALSE(w.AddTensor("bad", StDtype::kF32, {2}, a));
  testing::TempDir dir;
  std::string path = dir.Join("m.safetensors");
  ASSERT_TRUE(w.Write(path));
  auto f = SafetensorsFile::Open(path);
  ASSERT_TRUE(f) << f.error().ToString();
  EXPECT_EQ((*f)->data_offset() % 8, 0u);
  EXPECT_EQ((*f)->metadata().at("format"), "pt");
  EXPECT_EQ((*f)->tensors().size(), 5u);
  const auto* t = (*f)->FindTensor("a");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->dtype, StDtype::kF32);
  EXPECT_EQ(t->shape, (std::vector<int64_t>{2, 3}));
  ByteSpan got = (*f)->TensorBytes(*t);
  EXPECT_TRUE(std::equal(got.begin(), got.end(), a.begin(), a.end()));
  got = (*f)->TensorBytes(*(*f)->FindTensor("c"));
  EXPECT_TRUE(std::equal(got.begin(), got.end(), c.begin(), c.end()));
  EXPECT_EQ((*f)->FindTensor("d")->dtype, StDtype::kI64);
  auto image = w.Serialize();
  ASSERT_TRUE(image);
  EXPECT_EQ(*image, testing::ReadAll(path));
}

TEST(Safetensors, DtypeTable) {
  for (auto [name, size] : std::vector<std::pair<std::string, uint32_t>>{
           {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"F64", 8}, {"I8", 1}, {"I16", 2}, {"I32", 4}, {"I64", 8},
           {"U8", 1}, {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}}) {
    auto d = ParseStDtype(name);
    ASSERT_TRUE(d) << name;
    EXPECT_EQ(StDtypeSize(*d), size);
    EXPECT_EQ(StDtypeName(*d), name);
  }
  EXPECT_EQ(StDtypeToGgml(StDtype::kBF16), quant::GgmlType::BF16);
  EXPECT_EQ(StDtypeToGgml(StDtype::kF16), quant::GgmlType::F16);
  EXPECT_EQ(StDtypeToGgml(StDtype::kF32), quant::GgmlType::F32);
  EXPECT_FALSE(StDtypeToGgml(StDtype::kF8E4M3));
  EXPECT_FALSE(ParseStDtype("F4"));
}

Bytes Image(const std::string& header, size_t data_bytes, std::optional<uint64_t> size_field = {}) {
  Bytes out;
  ByteWriter w(&out);
  w.U64(size_field.value_or(header.size()));
  w.Raw(header.data(), header.size());
  w.Zeros(data_bytes);
  return out;
}

void ExpectBad(const Bytes& image, std::string_view needle, ErrorCode code = ErrorCode::kCorruption) {
  auto f = SafetensorsFile::Parse(image, "evil.safetensors");
  ASSERT_FALSE(f) << "parsed but expected: " << needle;
  EXPECT_EQ(f.error().code(), code) << f.error().ToString();
  EXPECT_NE(f.error().message().find(needle), std::string::npos) << f.error().message();
  EXPECT_NE(f.error().message().find("evil.safetensors"), std::string::npos) << f.error().message();
}

TEST(SafetensorsHostile, Headers) {
  const std::string ok = R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";
  ASSERT_TRUE(SafetensorsFile::Parse(Image(ok, 16), "ok"));
  ExpectBad(Image(ok, 16, 1ull << 40), "exceeds the limit");
  ExpectBad(Image(ok, 16, 10000), "past the end");
  ExpectBad(Image(ok, 0, UINT64_MAX), "header size");
  ExpectBad(Bytes{1, 2, 3}, "header size");
  ExpectBad(Image("not json at all", 0), "not a JSON object");
  ExpectBad(Image("{\"w\": [1, 2", 0), "not valid JSON");
  ExpectBad(Image("[]", 0), "not a JSON object");
  ExpectBad(Image(std::string(1, '{') + std::string(5000, '[') , 0), "nested");
  ExpectBad(Image(R"({"w":5})", 0), "not an object");
  ExpectBad(Image(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", 4), "missing dtype");
  ExpectBad(Image(R"({"w":{"dtype":"Q9","shape":[1],"data_offsets":[0,4]}})", 4), "unknown dtype 'Q9'",
            ErrorCode::kUnsupported);
  ExpectBad(Image(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", 4), "missing shape");
  ExpectBad(Image(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4), "non-negative");
  ExpectBad(Image(R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4), "non-negative");
  ExpectBad(Image(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,4]}})", 4),
            "overflows");
  ExpectBad(Image(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,4]}})", 4), "needs 12");
  ExpectBad(Image(R"({"w":{"dtype":"F16","shape":[2],"data_offsets":[0,8]}})", 8), "needs 4");
  ExpectBad(Image(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4), "data_offsets");
  ExpectBad(Image(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", 8), "outside");
  ExpectBad(Image(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[100,104]}})", 8), "outside");
  ExpectBad(Image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},
                      "b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12), "overlap");
  ExpectBad(Image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8), "hole");
  ExpectBad(Image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 8), "cover 4");
  ExpectBad(Image(R"({"__metadata__":{"k":1}})", 0), "__metadata__");
  ExpectBad(Image(R"({"__metadata__":[]})", 0), "__metadata__");
}

TEST(SafetensorsHostile, TruncationsAndBitFlips) {
  Bytes a = Fill(64, 1);
  SafetensorsWriter w;
  w.SetMetadata("k", "v");
  ASSERT_TRUE(w.AddTensor("x", StDtype::kBF16, {4, 8}, a));
  ASSERT_TRUE(w.AddTensor("y", StDtype::kF32, {16}, a));
  auto image = w.Serialize();
  ASSERT_TRUE(image);
  for (size_t n = 0; n < image->size(); ++n) {
    auto f = SafetensorsFile::Parse(ByteSpan(*image).subspan(0, n), "cut");
    ASSERT_FALSE(f) << n;
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 3000; ++i) {
    Bytes copy = *image;
    size_t pos = rng() % copy.size();
    copy[pos] ^= static_cast<uint8_t>(1u << (rng() % 8));
    auto f = SafetensorsFile::Parse(copy, "flip");
    if (f)
      for (const auto& t : (*f)->tensors()) {
        ByteSpan b = (*f)->TensorBytes(t);
        ASSERT_LE(b.data() + b.size(), copy.data() + copy.size());
      }
  }
}

}  // namespace
}  // namespace tenzro::format
