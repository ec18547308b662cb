// The expert cache's cold tier on a file system that fills up
// (testutil/fault_env.h): a Put, and a PutFile that cannot hard-link and so
// copies, fail with "disk full" when the image does not fit, register
// nothing and leave no cold file; with space the same calls succeed and the
// expert pins with its own weights.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/file.h"
#include "runtime/cache_fixture.h"
#include "runtime/expert_cache.h"
#include "testutil/fault_env.h"

namespace tenzro::runtime {
namespace {

using tenzro::testing::DiskFullEnv;
using tenzro::testing::TempDir;
using testing::FirstGate;
using testing::SyntheticExpert;

TEST(ExpertCacheEnvTest, ColdWritesOnAFullDiskRegisterNothing) {
  TempDir tmp;
  DiskFullEnv env(/*free_bytes=*/4096);
  env.set_refuse_links(true);
  ExpertCacheOptions o;
  o.dir = tmp.Join("experts");
  o.env = &env;
  auto cache = ExpertCache::Open(o);
  ASSERT_TRUE(cache) << cache.error().ToString();
  const ExpertKey a{"m", 0, 1}, b{"m", 0, 2};
  const Bytes img_a = SyntheticExpert("m", 0, 1, 0.5f), img_b = SyntheticExpert("m", 0, 2, 0.25f);
  ASSERT_GT(img_a.size(), 4096u);

  auto put = (*cache)->Put(a, ByteSpan(img_a));
  ASSERT_FALSE(put);
  EXPECT_EQ(put.error().code(), ErrorCode::kResourceExhausted) << put.error().ToString();
  EXPECT_NE(put.error().message().find("disk full"), std::string::npos);
  const std::string src = tmp.Join("b.gguf");
  ASSERT_TRUE(WriteFileAtomic(src, ByteSpan(img_b)));
  auto copied = (*cache)->PutFile(b, src);  // no hard link: the copy hits the full disk
  ASSERT_FALSE(copied);
  EXPECT_EQ(copied.error().code(), ErrorCode::kResourceExhausted) << copied.error().ToString();
  EXPECT_EQ((*cache)->stats().n_experts, 0u);
  for (const ExpertKey& k : {a, b}) EXPECT_FALSE(std::filesystem::exists(*(*cache)->ColdPath(k)));
  EXPECT_GE(env.full_errors(), 2u);

  env.set_free_bytes(UINT64_MAX);
  ASSERT_TRUE((*cache)->Put(a, ByteSpan(img_a)));
  ASSERT_TRUE((*cache)->PutFile(b, src));
  EXPECT_EQ((*cache)->stats().n_experts, 2u);
  auto pa = (*cache)->Pin(a);
  ASSERT_TRUE(pa) << pa.error().ToString();
  EXPECT_EQ(FirstGate(pa->weights()), 0.5f);
  auto pb = (*cache)->Pin(b);
  ASSERT_TRUE(pb) << pb.error().ToString();
  EXPECT_EQ(FirstGate(pb->weights()), 0.25f);
}

}  // namespace
}  // namespace tenzro::runtime
