// `tenzro blob ...` through the real binary.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "blob/blake3.h"
#include "testutil/testutil.h"

namespace tenzro::blob {
namespace {

class BlobCli : public ::testing::Test {
 protected:
  testing::RunResult Tz(std::vector<std::string> args) {
    args.insert(args.begin(), {"--data-dir", dir_.Join("data")});
    return testing::RunTenzro(args);
  }
  testing::TempDir dir_;
};

TEST_F(BlobCli, PutLsCatVerifyRm) {
  Bytes data(70000);
  std::mt19937 rng(1);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  std::string in = dir_.Join("in.bin");
  testing::WriteAll(in, data);
  std::string hex = Blake3(data).ToHex();

  auto put = Tz({"blob", "put", in, "--json"});
  ASSERT_EQ(put.exit_code, 0) << put.err;
  auto j = nlohmann::json::parse(put.out);
  EXPECT_EQ(j["uri"], "tenzro://blob/" + hex);
  EXPECT_EQ(j["size"], 70000);
  auto put2 = Tz({"blob", "put", in});
  ASSERT_EQ(put2.exit_code, 0) << put2.err;
  EXPECT_EQ(put2.out, "tenzro://blob/" + hex + " 70000\n");

  auto ls = Tz({"blob", "ls", "--json"});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  auto arr = nlohmann::json::parse(ls.out);
  ASSERT_EQ(arr.size(), 1u);
  EXPECT_EQ(arr[0]["hash"], hex);

  auto cat = Tz({"blob", "cat", "tenzro://blob/" + hex, "-o", dir_.Join("out.bin")});
  ASSERT_EQ(cat.exit_code, 0) << cat.err;
  EXPECT_EQ(testing::ReadAll(dir_.Join("out.bin")), data);
  auto cat_stdout = Tz({"blob", "cat", hex});
  ASSERT_EQ(cat_stdout.exit_code, 0);
  EXPECT_EQ(cat_stdout.out.size(), data.size());

  auto ver = Tz({"blob", "verify"});
  EXPECT_EQ(ver.exit_code, 0) << ver.err;
  EXPECT_NE(ver.out.find("ok tenzro://blob/" + hex), std::string::npos);

  // Corrupt the stored data: verify fails with the corruption exit code (4).
  std::string path = dir_.Join("data") + "/blobs/" + hex + ".data";
  Bytes stored = testing::ReadAll(path);
  stored[12345] ^= 1;
  testing::WriteAll(path, stored);
  auto bad = Tz({"blob", "verify", "tenzro://blob/" + hex});
  EXPECT_EQ(bad.exit_code, 4) << bad.out << bad.err;
  EXPECT_NE(bad.err.find("corruption"), std::string::npos) << bad.err;

  auto rm = Tz({"blob", "rm", hex});
  EXPECT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_EQ(Tz({"blob", "ls"}).out, "");
  EXPECT_EQ(Tz({"blob", "rm", hex}).exit_code, 3);  // not found
  EXPECT_EQ(Tz({"blob", "cat", hex}).exit_code, 3);
  EXPECT_EQ(Tz({"blob", "rm", "tenzro://blob/../../etc/passwd"}).exit_code, 2);  // invalid argument
  EXPECT_EQ(Tz({"blob", "put", dir_.Join("missing")}).exit_code, 3);
}

TEST_F(BlobCli, HelpHasExamples) {
  for (const char* sub : {"put", "ls", "rm", "verify", "cat"}) {
    auto r = Tz({"blob", sub, "--help"});
    EXPECT_EQ(r.exit_code, 0) << sub;
    EXPECT_NE(r.out.find("Example: tenzro blob"), std::string::npos) << sub << r.out;
  }
}

}  // namespace
}  // namespace tenzro::blob
