// PeerRateLimiter: burst then refill at the rate, peers independent, idle
// peers forgotten, the table capped (least recently seen dropped), unlimited
// when the rate is 0; RemoteHost.
#include <gtest/gtest.h>

#include "net/rate_limit.h"

namespace tenzro::net {
namespace {

using std::chrono::milliseconds;
using TP = PeerRateLimiter::TimePoint;

TEST(RateLimitTest, BurstThenRefillPerPeer) {
  PeerRateLimiter l({.rate = 10, .burst = 5, .max_peers = 16, .idle_evict = milliseconds(60000)});
  const TP t0{};
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(l.Allow("127.0.0.1", t0)) << i;
  EXPECT_FALSE(l.Allow("127.0.0.1", t0));
  EXPECT_TRUE(l.Allow("127.0.0.2", t0));  // another peer has its own bucket
  EXPECT_FALSE(l.Allow("127.0.0.1", t0 + milliseconds(50)));  // half a token
  EXPECT_TRUE(l.Allow("127.0.0.1", t0 + milliseconds(100)));  // one token back
  EXPECT_FALSE(l.Allow("127.0.0.1", t0 + milliseconds(100)));
  // Refill stops at the burst.
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(l.Allow("127.0.0.1", t0 + milliseconds(10000))) << i;
  EXPECT_FALSE(l.Allow("127.0.0.1", t0 + milliseconds(10000)));
  EXPECT_EQ(l.allowed(), 12u);
  EXPECT_EQ(l.rejected(), 4u);
  EXPECT_EQ(l.peers(), 2u);
}

TEST(RateLimitTest, TableIsBounded) {
  PeerRateLimiter l({.rate = 1, .burst = 1, .max_peers = 3, .idle_evict = milliseconds(1000)});
  const TP t0{};
  for (int i = 0; i < 100; ++i) l.Allow("p" + std::to_string(i), t0);
  EXPECT_EQ(l.peers(), 3u);
  // p99 is known (empty bucket); p0 was dropped long ago (fresh bucket).
  EXPECT_FALSE(l.Allow("p99", t0));
  EXPECT_TRUE(l.Allow("p0", t0));
  // Seen again, p99 moves to the front: three newcomers push out the others.
  l.Allow("p99", t0);
  l.Allow("x", t0);
  EXPECT_FALSE(l.Allow("p99", t0));
  // Idle peers are forgotten after idle_evict.
  EXPECT_TRUE(l.Allow("late", t0 + milliseconds(5000)));
  EXPECT_EQ(l.peers(), 1u);
}

TEST(RateLimitTest, ZeroRateIsUnlimited) {
  PeerRateLimiter l({});
  EXPECT_FALSE(l.enabled());
  for (int i = 0; i < 10000; ++i) ASSERT_TRUE(l.Allow("a"));
  EXPECT_EQ(l.peers(), 0u);
  EXPECT_EQ(l.rejected(), 0u);
}

TEST(RateLimitTest, RemoteHost) {
  EXPECT_EQ(RemoteHost("127.0.0.2:5555"), "127.0.0.2");
  EXPECT_EQ(RemoteHost("::1:443"), "::1");
  EXPECT_EQ(RemoteHost("[::1]:443"), "::1");
  EXPECT_EQ(RemoteHost("quic:abcd"), "quic");
  EXPECT_EQ(RemoteHost("noport"), "noport");
}

// New keys from one network: each key has its own bucket, but all of them
// together get prefix_multiple peers' worth; another network is untouched;
// a refusal by the prefix takes no token from the peer.
TEST(RateLimitTest, PrefixBucketBoundsManyKeysFromOneNetwork) {
  PeerRateLimiter l({.rate = 10, .burst = 5, .max_peers = 64, .idle_evict = milliseconds(60000), .prefix_multiple = 3});
  const TP t0{};
  int allowed = 0;
  for (int key = 0; key < 10; ++key)
    for (int i = 0; i < 5; ++i) allowed += l.AllowWithPrefix("node:k" + std::to_string(key), "net:198.51.100.0/24", t0);
  EXPECT_EQ(allowed, 15);  // 3 x burst, not 10 x burst
  EXPECT_EQ(l.rejected_by_prefix(), 35u);
  EXPECT_TRUE(l.AllowWithPrefix("node:other", "net:203.0.113.0/24", t0));
  // k9 never got a token: its own bucket is still full once the prefix refills.
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(l.AllowWithPrefix("node:k9", "net:198.51.100.0/24", t0 + milliseconds(10000))) << i;
  EXPECT_FALSE(l.AllowWithPrefix("node:k9", "net:198.51.100.0/24", t0 + milliseconds(10000)));
  // Without a multiple the prefix is ignored.
  PeerRateLimiter plain({.rate = 10, .burst = 1});
  EXPECT_TRUE(plain.AllowWithPrefix("a", "net:x", t0));
  EXPECT_TRUE(plain.AllowWithPrefix("b", "net:x", t0));
}

TEST(RateLimitTest, IpPrefix) {
  EXPECT_EQ(IpPrefix("198.51.100.200"), "198.51.100.0/24");
  EXPECT_EQ(IpPrefix("127.0.0.2", 32), "127.0.0.2/32");
  EXPECT_EQ(IpPrefix("203.0.113.77", 20), "203.0.112.0/20");
  EXPECT_EQ(IpPrefix("2001:db8:1:abcd::1"), "2001:db8:1:ab00::/56");
  EXPECT_EQ(IpPrefix("2001:db8:1:abcd::1", 32, 64), "2001:db8:1:abcd::/64");
  EXPECT_EQ(IpPrefix("::1", 24, 128), "::1/128");
  EXPECT_EQ(IpPrefix("not-an-ip"), "not-an-ip");
}

}  // namespace
}  // namespace tenzro::net
