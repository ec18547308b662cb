#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "blob/bao_tree.h"
#include "blob/blake3.h"
#include "core/file.h"
#include "testutil/testutil.h"

namespace tenzro::blob {
namespace {

Bytes Pattern(size_t n) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(i % 251);
  return b;
}

TEST(Blake3, OfficialVectorsWithExtendedOutput) {
  auto text = ReadTextFile(testing::DataPath("blake3/vectors.json"));
  ASSERT_TRUE(text) << text.error().ToString();
  auto j = nlohmann::json::parse(*text);
  int n = 0;
  for (const auto& c : j["cases"]) {
    size_t len = c["input_len"].get<size_t>();
    std::string want = c["hash"].get<std::string>();
    Bytes in = Pattern(len);
    EXPECT_EQ(Blake3(in).ToHex(), want.substr(0, 64)) << len;
    Blake3Hasher h;
    // Feed in uneven pieces to exercise the incremental path.
    for (size_t off = 0; off < len;) {
      size_t k = std::min<size_t>(len - off, 1 + (off * 7) % 3001);
      h.Update(ByteSpan(in).subspan(off, k));
      off += k;
    }
    Bytes xof(want.size() / 2);
    h.FinalizeXof(xof);
    EXPECT_EQ(ToHex(xof), want) << len;
    // Seeking into the extended output.
    Bytes tail(xof.size() - 33);
    h.FinalizeXof(tail, 33);
    EXPECT_EQ(ToHex(tail), want.substr(66)) << len;
    // The tree primitives agree with the plain hash.
    EXPECT_EQ(SubtreeCv(in, 0, true).ToHex(), want.substr(0, 64)) << len;
    EXPECT_EQ(ComputeOutboard(in, nullptr).ToHex(), want.substr(0, 64)) << len;
    ++n;
  }
  EXPECT_GT(n, 20);
}

TEST(Blake3, MatchesB3sumOnManySizes) {
  testing::TempDir dir;
  std::mt19937_64 rng(7);
  std::vector<size_t> sizes = {0,     1,     63,    64,     65,      1023,    1024,         1025,
                               2048,  3072,  16383, 16384,  16385,   32768,   32769,        100000,
                               65536 * 3 + 5,  (1 << 20) + 1, 4 * 16384 + 1024};
  for (int i = 0; i < 6; ++i) sizes.push_back(rng() % 3000000);
  for (size_t size : sizes) {
    Bytes data(size);
    for (auto& b : data) b = static_cast<uint8_t>(rng());
    std::string path = dir.Join("f" + std::to_string(size));
    testing::WriteAll(path, data);
    auto r = testing::Run({"/usr/bin/b3sum", "--no-names", path});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::string want = r.out.substr(0, 64);
    EXPECT_EQ(Blake3(data).ToHex(), want) << size;
    EXPECT_EQ(SubtreeCv(data, 0, true).ToHex(), want) << size;
    Bytes ob;
    Blake3Hash root = ComputeOutboard(data, &ob);
    EXPECT_EQ(root.ToHex(), want) << size;
    EXPECT_EQ(ob.size(), OutboardSize(size));
    if (!ob.empty()) EXPECT_EQ(OutboardRoot(ob).ToHex(), want) << size;
  }
}

TEST(Blake3, ChunkAndParentCvsComposeToTheHash) {
  Bytes data = Pattern(5000);  // 5 chunks: ((c0 c1)(c2 c3)) c4
  auto c = [&](int i) {
    return ChunkCv(ByteSpan(data).subspan(i * 1024, std::min<size_t>(1024, data.size() - i * 1024)), i, false);
  };
  Blake3Hash l = ParentCv(ParentCv(c(0), c(1), false), ParentCv(c(2), c(3), false), false);
  EXPECT_EQ(ParentCv(l, c(4), true), Blake3(data));
  EXPECT_EQ(SubtreeCv(ByteSpan(data).first(4096), 0, false), l);
  EXPECT_EQ(ChunkCv(ByteSpan(), 0, true), Blake3(ByteSpan()));
}

TEST(Blake3, HexRoundTrip) {
  Blake3Hash h = Blake3(Pattern(10));
  auto back = Blake3Hash::FromHex(h.ToHex());
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, h);
  EXPECT_FALSE(Blake3Hash::FromHex("abc"));
  EXPECT_FALSE(Blake3Hash::FromHex(std::string(64, 'g')));
}

}  // namespace
}  // namespace tenzro::blob
