// `tenzro tensor quantize|dequantize` as a real process against ggml's
// golden files.
#include <gtest/gtest.h>

#include "core/file.h"
#include "testutil/testutil.h"

namespace tenzro {
namespace {

TEST(TensorCli, QuantizeQ4KMatchesGgml) {
  testing::TempDir dir;
  const std::string out = dir.Join("out.q4_K");
  auto r = testing::RunTenzro({"tensor", "quantize", "--type", "Q4_K", "--row-len", "1024",
                               testing::DataPath("quant/input.f32"), out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(testing::ReadAll(out), testing::ReadAll(testing::DataPath("quant/q4_K.bin")));
}

TEST(TensorCli, DequantizeQ6KMatchesGgml) {
  testing::TempDir dir;
  const std::string out = dir.Join("out.f32");
  auto r = testing::RunTenzro({"tensor", "dequantize", "--type", "q6_k", "--row-len", "1024", "--threads", "2",
                               testing::DataPath("quant/q6_K.bin"), out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(testing::ReadAll(out), testing::ReadAll(testing::DataPath("quant/q6_K.dequant.f32")));
}

TEST(TensorCli, BadRowLengthIsInvalidArgument) {
  testing::TempDir dir;
  const std::string out = dir.Join("out.bin");
  auto r = testing::RunTenzro({"tensor", "quantize", "--type", "q4_K", "--row-len", "1000",
                               testing::DataPath("quant/input.f32"), out});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("q4_K"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("1000"), std::string::npos) << r.err;
  EXPECT_FALSE(PathExists(out));
}

TEST(TensorCli, PartialRowIsInvalidArgument) {
  testing::TempDir dir;
  const std::string in = dir.Join("in.f32");
  Bytes partial(1024 * 4 + 8, 0);
  testing::WriteAll(in, partial);
  auto r = testing::RunTenzro({"tensor", "quantize", "--type", "q8_0", "--row-len", "1024", in, dir.Join("o")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("whole number of rows"), std::string::npos) << r.err;
  auto d = testing::RunTenzro({"tensor", "dequantize", "--type", "q8_0", "--row-len", "1024", in, dir.Join("o")});
  EXPECT_EQ(d.exit_code, 2) << d.err;
  EXPECT_FALSE(PathExists(dir.Join("o")));
}

TEST(TensorCli, UnknownTypeAndDecodeOnlyType) {
  testing::TempDir dir;
  auto r = testing::RunTenzro({"tensor", "quantize", "--type", "q9_K", "--row-len", "256",
                               testing::DataPath("quant/input.f32"), dir.Join("o")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  auto m = testing::RunTenzro({"tensor", "quantize", "--type", "mxfp4", "--row-len", "1024",
                               testing::DataPath("quant/input.f32"), dir.Join("o")});
  EXPECT_EQ(m.exit_code, 10) << m.err;  // kUnsupported
}

}  // namespace
}  // namespace tenzro
