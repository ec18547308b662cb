// GGUF writer/reader round trips, split files, and hostile inputs.
#include <gtest/gtest.h>

#include <random>

#include "core/file.h"
#include "format/checkpoint.h"
#include "format/gguf_reader.h"
#include "format/gguf_writer.h"
#include "testutil/testutil.h"

namespace tenzro::format {
namespace {

using quant::GgmlType;

Bytes Fill(size_t n, uint8_t seed) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(seed + i * 7);
  return b;
}

GgufValue AllTypesArray() {
  return GgufValue::NestedArray({GgufValue::IntArray(GgufType::kInt16, {-1, 2}), GgufValue::StringArray({"x"})});
}

// A small model with metadata of every type and tensors of several types.
struct SmallModel {
  Bytes f32 = Fill(4 * 8 * 3, 1), q4k = Fill(144 * 2, 2), bf16 = Fill(2 * 32, 3), q80 = Fill(34 * 4, 4);
  GgufWriter w{64};
  SmallModel() {
    w.Set("general.architecture", GgufValue::Str("tiny"));
    w.Set("u8", GgufValue::U8(200));
    w.Set("i8", GgufValue::I8(-5));
    w.Set("u16", GgufValue::U16(60000));
    w.Set("i16", GgufValue::I16(-30000));
    w.Set("u32", GgufValue::U32(4000000000u));
    w.Set("i32", GgufValue::I32(-7));
    w.Set("f32", GgufValue::F32(1.5f));
    w.Set("bool", GgufValue::Bool(true));
    w.Set("u64", GgufValue::U64(1ull << 40));
    w.Set("i64", GgufValue::I64(-(1ll << 40)));
    w.Set("f64", GgufValue::F64(2.25));
    w.Set("ints", GgufValue::IntArray(GgufType::kInt32, {1, -2, 3}));
    w.Set("floats", GgufValue::FloatArray({0.5f, 1.5f}));
    w.Set("strings", GgufValue::StringArray({"a", "", "ccc"}));
    w.Set("nested", AllTypesArray());
    w.Set("empty", GgufValue::StringArray({}));
    EXPECT_TRUE(w.AddTensor("blk.0.f32", GgmlType::F32, {8, 3}, f32));
    EXPECT_TRUE(w.AddTensor("blk.0.q4k", GgmlType::Q4_K, {256, 2}, q4k));
    EXPECT_TRUE(w.AddTensor("bf16", GgmlType::BF16, {32}, bf16));
    EXPECT_TRUE(w.AddTensor("q80", GgmlType::Q8_0, {64, 1, 2}, q80));
    EXPECT_TRUE(w.AddTensor("empty", GgmlType::F32, {0, 4}, {}));
  }
};

TEST(GgufWriter, RoundTripEveryValueType) {
  SmallModel m;
  testing::TempDir dir;
  std::string path = dir.Join("m.gguf");
  ASSERT_TRUE(m.w.Write(path));
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f) << f.error().ToString();
  EXPECT_EQ((*f)->version(), 3u);
  EXPECT_EQ((*f)->alignment(), 64u);
  EXPECT_EQ((*f)->data_offset() % 64, 0u);
  // Key/values come back in order, equal, with their exact types.
  ASSERT_EQ((*f)->kv().size(), m.w.kv().size());
  for (size_t i = 0; i < m.w.kv().size(); ++i) {
    EXPECT_EQ((*f)->kv()[i].first, m.w.kv()[i].first);
    EXPECT_TRUE((*f)->kv()[i].second == m.w.kv()[i].second) << m.w.kv()[i].first;
  }
  EXPECT_EQ((*f)->Find("general.alignment")->type(), GgufType::kUint32);
  EXPECT_EQ((*f)->Find("u8")->AsInt(), 200);
  EXPECT_EQ((*f)->Find("i8")->AsInt(), -5);
  EXPECT_EQ((*f)->Find("i16")->AsInt(), -30000);
  EXPECT_EQ((*f)->Find("u32")->AsInt(), 4000000000ll);
  EXPECT_EQ((*f)->Find("i64")->AsInt(), -(1ll << 40));
  EXPECT_EQ((*f)->Find("f32")->AsFloat(), 1.5);
  EXPECT_EQ((*f)->Find("bool")->AsInt(), 1);
  EXPECT_EQ((*f)->Find("f64")->AsFloat(), 2.25);
  EXPECT_EQ((*f)->Find("ints")->AsIntArray(), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ((*f)->Find("strings")->AsStringArray(), (std::vector<std::string>{"a", "", "ccc"}));
  EXPECT_EQ((*f)->Find("nested")->items().size(), 2u);
  EXPECT_EQ((*f)->Find("nested")->items()[0].AsIntArray(), (std::vector<int64_t>{-1, 2}));
  // Tensors: same bytes, offsets laid out back to back as gguf.cpp demands.
  uint64_t expect_offset = 0;
  const auto& want = m.w.tensor_list();
  ASSERT_EQ((*f)->tensors().size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const auto& t = (*f)->tensors()[i];
    EXPECT_EQ(t.name, want[i].name);
    EXPECT_EQ(t.type, want[i].type);
    EXPECT_EQ(t.ne, want[i].ne);
    EXPECT_EQ(t.offset, expect_offset);
    ByteSpan b = (*f)->TensorBytes(t);
    EXPECT_TRUE(std::equal(b.begin(), b.end(), want[i].data.begin(), want[i].data.end())) << t.name;
    expect_offset += (t.nbytes + 63) / 64 * 64;
  }
  EXPECT_EQ((*f)->file_size(), (*f)->data_offset() + expect_offset);
  // Serialize() and Write() agree.
  auto image = m.w.Serialize();
  ASSERT_TRUE(image);
  EXPECT_EQ(*image, testing::ReadAll(path));
}

TEST(GgufWriter, RefusesWhatLlamaCppRefuses) {
  GgufWriter w;
  Bytes b(64);
  EXPECT_EQ(w.AddTensor(std::string(64, 'n'), GgmlType::F32, {16}, b).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(w.AddTensor("x", GgmlType::F32, {1, 1, 1, 1, 16}, b));
  EXPECT_FALSE(w.AddTensor("x", GgmlType::Q4_K, {128}, b));  // not a multiple of 256
  EXPECT_FALSE(w.AddTensor("x", GgmlType::F32, {15}, b));    // wrong size
  EXPECT_FALSE(w.AddTensor("x", GgmlType::F32, {-16}, b));
  EXPECT_TRUE(w.AddTensor("x", GgmlType::F32, {16}, b));
  EXPECT_FALSE(w.AddTensor("x", GgmlType::F32, {16}, b));    // duplicate
}

TEST(GgufSplit, WrittenSplitReadsBackAsOneModel) {
  SmallModel m;
  testing::TempDir dir;
  auto paths = WriteGgufSplit(m.w, dir.Join("model"), 3);
  ASSERT_TRUE(paths) << paths.error().ToString();
  ASSERT_EQ(paths->size(), 3u);
  EXPECT_EQ((*paths)[1], dir.Join("model-00002-of-00003.gguf"));
  for (const auto& open_path : *paths) {
    auto ck = Checkpoint::Open(open_path);
    ASSERT_TRUE(ck) << ck.error().ToString();
    const Checkpoint& c = **ck;
    EXPECT_EQ(c.files(), *paths);
    ASSERT_EQ(c.tensors().size(), 5u);
    EXPECT_EQ(c.architecture(), "tiny");
    EXPECT_EQ(c.GetInt("split.count"), 3);
    EXPECT_EQ(c.GetInt("u16"), 60000);
    for (const auto& t : m.w.tensor_list()) {
      const TensorRef* r = c.FindTensor(t.name);
      ASSERT_NE(r, nullptr) << t.name;
      EXPECT_TRUE(std::equal(r->bytes.begin(), r->bytes.end(), t.data.begin(), t.data.end()));
    }
    // Tensors know their file.
    EXPECT_EQ(c.FindTensor("blk.0.f32")->file, (*paths)[0]);
    EXPECT_EQ(c.FindTensor("empty")->file, (*paths)[2]);
  }
  // Opening the directory finds the set too.
  auto ck = Checkpoint::Open(dir.path());
  ASSERT_TRUE(ck) << ck.error().ToString();
  EXPECT_EQ((*ck)->tensors().size(), 5u);
  // A missing part is reported by name.
  std::remove((*paths)[1].c_str());
  auto missing = Checkpoint::Open((*paths)[0]);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message().find("00002-of-00003"), std::string::npos);
}

TEST(GgufSplit, PartCountMismatchIsCorruption) {
  SmallModel m;
  testing::TempDir dir;
  auto paths = WriteGgufSplit(m.w, dir.Join("model"), 2);
  ASSERT_TRUE(paths);
  // Rename a 2-way set as if it were 3-way: split.count disagrees.
  std::rename((*paths)[0].c_str(), dir.Join("model-00001-of-00001.gguf").c_str());
  auto ck = Checkpoint::Open(dir.Join("model-00001-of-00001.gguf"));
  ASSERT_FALSE(ck);
  EXPECT_EQ(ck.error().code(), ErrorCode::kCorruption);
  EXPECT_NE(ck.error().message().find("split.count"), std::string::npos) << ck.error().message();
}

// --- hostile files ---

struct RawTensor {
  std::string name = "t";
  uint32_t n_dims = 1;
  std::vector<int64_t> ne = {8};
  uint32_t type = 0;
  uint64_t offset = 0;
};

// Builds a GGUF image field by field, so that any field can lie.
Bytes RawGguf(const std::vector<RawTensor>& ts, size_t data_bytes, int64_t n_kv = 0, const Bytes& kv = {},
              uint32_t version = 3, uint32_t alignment = 32) {
  Bytes out;
  ByteWriter w(&out);
  w.Raw("GGUF", 4);
  w.U32(version);
  w.I64(static_cast<int64_t>(ts.size()));
  w.I64(n_kv);
  w.Raw(kv.data(), kv.size());
  for (const auto& t : ts) {
    w.U64(t.name.size());
    w.Raw(t.name.data(), t.name.size());
    w.U32(t.n_dims);
    for (int64_t n : t.ne) w.I64(n);
    w.U32(t.type);
    w.U64(t.offset);
  }
  w.Zeros((alignment - out.size() % alignment) % alignment);
  w.Zeros(data_bytes);
  return out;
}

Bytes Kv(const std::string& key, GgufType type, const Bytes& body) {
  Bytes out;
  ByteWriter w(&out);
  w.U64(key.size());
  w.Raw(key.data(), key.size());
  w.U32(static_cast<uint32_t>(type));
  w.Raw(body.data(), body.size());
  return out;
}

Bytes U64Le(uint64_t v) {
  Bytes b(8);
  StoreU64LE(b.data(), v);
  return b;
}

void ExpectCorrupt(const Bytes& image, std::string_view needle, ErrorCode code = ErrorCode::kCorruption) {
  auto f = GgufFile::Parse(image, "evil.gguf");
  ASSERT_FALSE(f) << "parsed but expected: " << needle;
  EXPECT_EQ(f.error().code(), code) << f.error().ToString();
  EXPECT_NE(f.error().message().find(needle), std::string::npos) << f.error().message();
  EXPECT_NE(f.error().message().find("evil.gguf"), std::string::npos) << f.error().message();
}

TEST(GgufHostile, BaselineIsValid) {
  ASSERT_TRUE(GgufFile::Parse(RawGguf({RawTensor{}}, 32), "ok.gguf"));
}

TEST(GgufHostile, HeaderFields) {
  Bytes b = RawGguf({}, 0);
  b[0] = 'X';
  ExpectCorrupt(b, "magic");
  ExpectCorrupt(RawGguf({}, 0, 0, {}, 1), "version");
  ExpectCorrupt(RawGguf({}, 0, 0, {}, 0x03000000), "version");
  ExpectCorrupt(RawGguf({}, 0, 0, {}, 4), "version 4", ErrorCode::kUnsupported);
  EXPECT_TRUE(GgufFile::Parse(RawGguf({}, 0, 0, {}, 2), "v2.gguf"));
  ExpectCorrupt(RawGguf({}, 0, int64_t{1} << 62), "kv count");
  ExpectCorrupt(RawGguf({}, 0, -1), "kv count");
  Bytes many = RawGguf({}, 0);
  StoreU64LE(many.data() + 8, uint64_t{1} << 62);
  ExpectCorrupt(many, "tensor count");
}

TEST(GgufHostile, KeyValues) {
  // String length 2^63.
  Bytes huge_key = U64Le(uint64_t{1} << 63);
  ExpectCorrupt(RawGguf({}, 32, 1, huge_key), "key length");
  ExpectCorrupt(RawGguf({}, 0, 1, Kv("s", GgufType::kString, U64Le(uint64_t{1} << 63))), "string length");
  ExpectCorrupt(RawGguf({}, 0, 1, Kv("s", GgufType::kString, U64Le(1000))), "kv 's'");
  ExpectCorrupt(RawGguf({}, 32, 1, Kv("t", static_cast<GgufType>(13), U64Le(0))), "invalid value type 13");
  Bytes arr;
  ByteWriter aw(&arr);
  aw.U32(static_cast<uint32_t>(GgufType::kUint64));
  aw.U64(uint64_t{1} << 40);
  ExpectCorrupt(RawGguf({}, 0, 1, Kv("a", GgufType::kArray, arr)), "array of");
  Bytes arr2;
  ByteWriter aw2(&arr2);
  aw2.U32(static_cast<uint32_t>(GgufType::kString));
  aw2.U64(1000);
  ExpectCorrupt(RawGguf({}, 0, 1, Kv("a", GgufType::kArray, arr2)), "cannot fit");
  // Arrays nested past the depth limit.
  Bytes deep;
  ByteWriter dw(&deep);
  for (int i = 0; i < 20; ++i) {
    dw.U32(static_cast<uint32_t>(GgufType::kArray));
    dw.U64(1);
  }
  ExpectCorrupt(RawGguf({}, 0, 1, Kv("d", GgufType::kArray, deep)), "nested");
  Bytes two = Kv("k", GgufType::kUint8, {1});
  Bytes dup = two;
  dup.insert(dup.end(), two.begin(), two.end());
  ExpectCorrupt(RawGguf({}, 0, 2, dup), "duplicate key 'k'");
  ExpectCorrupt(RawGguf({}, 0, 1, Kv("general.alignment", GgufType::kUint32, {48, 0, 0, 0})), "power of two");
  ExpectCorrupt(RawGguf({}, 0, 1, Kv("general.alignment", GgufType::kUint8, {32})), "expected u32");
}

TEST(GgufHostile, TensorInfos) {
  RawTensor t;
  t.n_dims = 100;
  t.ne.clear();
  ExpectCorrupt(RawGguf({t}, 0), "n_dims");
  t = RawTensor{};
  t.n_dims = 3;
  t.ne = {int64_t{1} << 40, int64_t{1} << 40, 1 << 20};
  ExpectCorrupt(RawGguf({t}, 0), "overflows");
  t.n_dims = 2;
  t.ne = {8, -1};
  ExpectCorrupt(RawGguf({t}, 0), "negative dimension");
  t = RawTensor{};
  t.type = 99;
  ExpectCorrupt(RawGguf({t}, 32), "unknown ggml type id 99");
  t.type = static_cast<uint32_t>(GgmlType::Q4_K);
  ExpectCorrupt(RawGguf({t}, 32), "block size");
  t = RawTensor{};
  t.offset = 1 << 20;
  ExpectCorrupt(RawGguf({t}, 32), "past the end");
  t.offset = UINT64_MAX - 7;
  ExpectCorrupt(RawGguf({t}, 32), "tensor 't'");
  t.offset = 8;
  ExpectCorrupt(RawGguf({t}, 64), "alignment");
  RawTensor a, b;
  b.name = "u";
  b.ne = {16};
  a.ne = {16};
  ExpectCorrupt(RawGguf({a, b}, 64), "overlaps");
  b.name = "t";
  b.offset = 64;
  ExpectCorrupt(RawGguf({a, b}, 128), "duplicate tensor name");
  RawTensor empty_name;
  empty_name.name = "";
  ExpectCorrupt(RawGguf({empty_name}, 32), "name length");
  // Data section start beyond the file.
  Bytes img = RawGguf({RawTensor{}}, 0);
  img.resize(img.size() - 10);
  ExpectCorrupt(img, "tensor");
}

// Every prefix of a valid file and many random bit flips: an error or a
// valid parse, never a crash or an out-of-bounds read (run under ASan in the
// fuzz build).
TEST(GgufHostile, TruncationsAndBitFlips) {
  SmallModel m;
  auto image = m.w.Serialize();
  ASSERT_TRUE(image);
  ByteSpan all(*image);
  for (size_t n = 0; n < all.size(); ++n) {
    auto f = GgufFile::Parse(all.subspan(0, n), "cut.gguf");
    if (n < all.size() - 64) {  // only trailing padding may go unnoticed
      ASSERT_FALSE(f) << "prefix " << n;
      EXPECT_EQ(f.error().code(), ErrorCode::kCorruption);
    }
  }
  std::mt19937 rng(42);
  for (int i = 0; i < 3000; ++i) {
    Bytes copy = *image;
    for (int k = 0; k < 1 + i % 4; ++k) {
      size_t pos = rng() % std::min<size_t>(copy.size(), 700);  // header region
      copy[pos] ^= static_cast<uint8_t>(1u << (rng() % 8));
    }
    auto f = GgufFile::Parse(copy, "flip.gguf");
    if (f) {
      for (const auto& t : (*f)->tensors()) {
        ByteSpan b = (*f)->TensorBytes(t);
        ASSERT_LE(b.data() + b.size(), copy.data() + copy.size());
      }
    }
  }
}

}  // namespace
}  // namespace tenzro::format
