#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "core/bytes.h"
#include "core/file.h"
#include "core/result.h"
#include "testutil/testutil.h"

namespace tenzro {
namespace {

Result<int> Half(int x) {
  if (x % 2) return Error::InvalidArgument("{} is odd", x);
  return x / 2;
}

Result<int> Quarter(int x) {
  TENZRO_TRY(int h, Half(x));
  return Half(h);
}

TEST(Result, ValueAndErrorPropagate) {
  EXPECT_EQ(*Quarter(8), 2);
  auto r = Quarter(6);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.error().message(), "3 is odd");
  EXPECT_EQ(Quarter(5).value_or(-1), -1);
}

TEST(ByteReader, BoundsAreChecked) {
  uint8_t buf[6] = {1, 0, 0, 0, 2, 0};
  ByteReader r(ByteSpan(buf, 6), "x.bin");
  EXPECT_EQ(*r.U32("a"), 1u);
  EXPECT_EQ(*r.U16("b"), 2u);
  auto e = r.U8("c");
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code(), ErrorCode::kCorruption);
  EXPECT_NE(e.error().message().find("x.bin: c at offset 6"), std::string::npos) << e.error().message();
  EXPECT_FALSE(r.CheckCount(1ull << 62, 8, "n"));
}

TEST(Hex, RoundTrip) {
  uint8_t in[3] = {0x00, 0xab, 0xff};
  EXPECT_EQ(ToHex(ByteSpan(in, 3)), "00abff");
  uint8_t out[3];
  ASSERT_TRUE(FromHex("00ABff", out));
  EXPECT_EQ(0, std::memcmp(in, out, 3));
  EXPECT_FALSE(FromHex("0g0000", out));
  EXPECT_FALSE(FromHex("00", out));
}

TEST(ByteSize, Parses) {
  EXPECT_EQ(*ParseByteSize("2GiB"), 2ull << 30);
  EXPECT_EQ(*ParseByteSize("512 mib"), 512ull << 20);
  EXPECT_EQ(*ParseByteSize("1.5GB"), 1500000000ull);
  EXPECT_EQ(*ParseByteSize("4096"), 4096ull);
  EXPECT_FALSE(ParseByteSize("lots"));
  EXPECT_FALSE(ParseByteSize("12 parsecs"));
}

TEST(AtomicFileWriter, AbortLeavesNothingCommitPublishes) {
  testing::TempDir dir;
  std::string target = dir.Join("f.bin");
  {
    auto w = AtomicFileWriter::Create(target);
    ASSERT_TRUE(w);
    ASSERT_TRUE((*w)->Append("abc", 3));
    EXPECT_FALSE(PathExists(target));
  }  // destroyed uncommitted
  EXPECT_FALSE(PathExists(target));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 0);
  ASSERT_TRUE(WriteFileAtomic(target, std::string_view("hello")));
  auto back = ReadTextFile(target);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, "hello");
  auto m = MappedFile::Open(target);
  ASSERT_TRUE(m);
  EXPECT_EQ((*m)->size(), 5u);
  EXPECT_EQ(MappedFile::Open(dir.Join("missing")).error().code(), ErrorCode::kNotFound);
}

TEST(MakeDirs, CreatesMissingComponentsWithTheMode) {
  testing::TempDir dir;
  const mode_t old = ::umask(022);
  const std::string deep = dir.Join("a/b/c");
  ASSERT_TRUE(MakeDirs(deep, 0700));
  ::umask(old);
  for (const std::string p : {dir.Join("a"), dir.Join("a/b"), deep}) {
    struct stat st;
    ASSERT_EQ(::stat(p.c_str(), &st), 0) << p;
    EXPECT_TRUE(S_ISDIR(st.st_mode)) << p;
    EXPECT_EQ(st.st_mode & 0777, 0700u) << p;
  }
  EXPECT_TRUE(MakeDirs(deep + "/", 0700));  // existing, trailing slash: fine
  ASSERT_TRUE(WriteFileAtomic(dir.Join("file"), std::string_view("x")));
  auto r = MakeDirs(dir.Join("file/sub"));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("file"), std::string::npos) << r.error().message();
  EXPECT_FALSE(MakeDirs(""));
}

}  // namespace
}  // namespace tenzro
