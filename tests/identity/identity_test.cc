#include "identity/identity.h"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "core/file.h"
#include "testutil/testutil.h"

namespace tenzro::identity {
namespace {

ByteSpan Span(std::string_view s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

TEST(IdentityTest, CreateReloadSameIdAndMode0600) {
  tenzro::testing::TempDir dir;
  const std::string data_dir = dir.Join("data");
  auto a = LoadOrCreateIdentity(data_dir);
  ASSERT_TRUE(a) << a.error().ToString();
  EXPECT_TRUE(IsValidNodeId(a->node_id()));
  auto b = LoadOrCreateIdentity(data_dir);
  ASSERT_TRUE(b) << b.error().ToString();
  EXPECT_EQ(a->node_id(), b->node_id());

  struct stat st;
  ASSERT_EQ(stat((data_dir + "/node.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_size, 32);
}

TEST(IdentityTest, CorruptKeyFileIsCorruption) {
  tenzro::testing::TempDir dir;
  ASSERT_TRUE(WriteFileAtomic(dir.Join("node.key"), std::string_view("short"), 0600));
  auto id = LoadOrCreateIdentity(dir.path());
  ASSERT_FALSE(id);
  EXPECT_EQ(id.error().code(), ErrorCode::kCorruption);
  EXPECT_NE(id.error().message().find("node.key"), std::string::npos);
}

TEST(IdentityTest, SeedIsDeterministicRfc8032Vector) {
  // RFC 8032 section 7.1, TEST 1.
  std::array<uint8_t, 32> seed;
  ASSERT_TRUE(FromHex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60", seed));
  Identity id = Identity::FromSeed(seed);
  EXPECT_EQ(id.node_id(), "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
  Signature sig = id.Sign({});
  EXPECT_EQ(ToHex(sig),
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46b"
            "d25bf5f0595bbe24655141438e7a100b");
}

TEST(IdentityTest, SignVerify) {
  Identity id = Identity::Generate();
  Signature sig = id.Sign(Span("hello"));
  EXPECT_TRUE(Verify(id.node_id(), Span("hello"), sig));
  EXPECT_FALSE(Verify(id.node_id(), Span("hellp"), sig));
  Identity other = Identity::Generate();
  EXPECT_FALSE(Verify(other.node_id(), Span("hello"), sig));
  sig[0] ^= 1;
  EXPECT_FALSE(Verify(id.node_id(), Span("hello"), sig));
  EXPECT_FALSE(Verify("zz", Span("hello"), sig));
  EXPECT_FALSE(Verify(id.node_id(), Span("hello"), ByteSpan(sig.data(), 10)));
  EXPECT_FALSE(IsValidNodeId("D75A980182B10AB7D54BFED3C964073A0EE172F3DAA62325AF021A68F707511A"));
}

}  // namespace
}  // namespace tenzro::identity
