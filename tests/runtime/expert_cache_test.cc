// ExpertCache: LRU order, pinning, budget under concurrency, prefetch,
// counters, restart re-registration, replace semantics.
#include "runtime/expert_cache.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <atomic>
#include <random>
#include <thread>

#include "cache_fixture.h"
#include "core/file.h"
#include "testutil/testutil.h"

namespace tenzro::runtime {
namespace {

using testing::FirstGate;
using testing::SyntheticExpert;
using tenzro::testing::TempDir;

constexpr const char* kModel = "synthetic";

ExpertKey Key(int e, int layer = 0) { return {kModel, layer, e}; }

ExpertCacheOptions Opts(const std::string& dir, uint64_t budget = 0) {
  ExpertCacheOptions o;
  o.dir = dir;
  o.budget_bytes = budget;
  return o;
}

struct Fixture {
  TempDir tmp;
  std::unique_ptr<ExpertCache> cache;
  uint64_t expert_bytes = 0;

  // Registers n experts; budget = `fit` experts' bytes (0 = unlimited).
  Fixture(int n, int fit, std::chrono::milliseconds pin_wait = std::chrono::milliseconds(200), int layers = 1) {
    expert_bytes = SyntheticExpert(kModel, 0, 0, 0.0f).size();
    ExpertCacheOptions o;
    o.dir = tmp.Join("experts");
    o.budget_bytes = static_cast<uint64_t>(fit) * expert_bytes;
    o.pin_wait = pin_wait;
    auto c = ExpertCache::Open(o);
    EXPECT_TRUE(c) << c.error().ToString();
    cache = std::move(*c);
    for (int l = 0; l < layers; ++l)
      for (int e = 0; e < n; ++e) {
        Bytes img = SyntheticExpert(kModel, l, e, Marker(l, e));
        EXPECT_EQ(img.size(), expert_bytes);
        auto r = cache->Put(Key(e, l), ByteSpan(img));
        EXPECT_TRUE(r) << r.error().ToString();
      }
    cache->DemoteAll();
  }
  static float Marker(int l, int e) { return 1000.0f * l + e + 0.5f; }
  Tier TierOf(int e) { return cache->Info(Key(e))->tier; }
};

TEST(ExpertCacheTest, LruOrderAndCounters) {
  Fixture f(4, 2);
  const ExpertCacheStats s0 = f.cache->stats();
  EXPECT_EQ(s0.n_experts, 4u);
  EXPECT_EQ(s0.n_warm, 0u);
  EXPECT_EQ(s0.warm_bytes, 0u);
  for (int e : {0, 1}) {
    auto p = f.cache->Pin(Key(e));
    ASSERT_TRUE(p) << p.error().ToString();
    EXPECT_EQ(FirstGate(p->weights()), Fixture::Marker(0, e));
  }
  EXPECT_EQ(f.TierOf(0), Tier::kWarm);
  EXPECT_EQ(f.TierOf(1), Tier::kWarm);
  // e2 evicts the least recently used, e0.
  ASSERT_TRUE(f.cache->Pin(Key(2)));
  EXPECT_EQ(f.TierOf(0), Tier::kCold);
  EXPECT_EQ(f.TierOf(1), Tier::kWarm);
  // Touch e1, then e3 evicts e2 (now the LRU), not e1.
  ASSERT_TRUE(f.cache->Pin(Key(1)));
  ASSERT_TRUE(f.cache->Pin(Key(3)));
  EXPECT_EQ(f.TierOf(1), Tier::kWarm);
  EXPECT_EQ(f.TierOf(2), Tier::kCold);
  EXPECT_EQ(f.TierOf(3), Tier::kWarm);
  const ExpertCacheStats s = f.cache->stats();
  EXPECT_EQ(s.hits - s0.hits, 1u);
  EXPECT_EQ(s.misses - s0.misses, 4u);
  EXPECT_EQ(s.promotions - s0.promotions, 4u);
  EXPECT_EQ(s.demotions - s0.demotions, 2u);
  EXPECT_EQ(s.warm_bytes, 2 * f.expert_bytes);
  EXPECT_LE(s.max_warm_bytes, 2 * f.expert_bytes);
  EXPECT_EQ(f.cache->Info(Key(1))->hits, 1u);
  // Demotion never deletes the cold file.
  for (int e = 0; e < 4; ++e) EXPECT_TRUE(PathExists(f.cache->Info(Key(e))->path));
}

TEST(ExpertCacheTest, PinnedExpertsAreNeverDemoted) {
  Fixture f(3, 2, std::chrono::milliseconds(100));
  auto p0 = f.cache->Pin(Key(0));
  auto p1 = f.cache->Pin(Key(1));
  ASSERT_TRUE(p0 && p1);
  auto p2 = f.cache->Pin(Key(2));
  ASSERT_FALSE(p2);
  EXPECT_EQ(p2.error().code(), ErrorCode::kResourceExhausted) << p2.error().ToString();
  EXPECT_EQ(f.TierOf(0), Tier::kWarm);
  EXPECT_EQ(f.TierOf(1), Tier::kWarm);
  EXPECT_EQ(f.TierOf(2), Tier::kCold);
  EXPECT_EQ(f.cache->stats().pinned_bytes, 2 * f.expert_bytes);
  p0->Release();
  auto again = f.cache->Pin(Key(2));
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_EQ(f.TierOf(0), Tier::kCold);
  EXPECT_EQ(f.TierOf(1), Tier::kWarm);
  EXPECT_EQ(FirstGate(again->weights()), Fixture::Marker(0, 2));
  EXPECT_EQ(FirstGate(p1->weights()), Fixture::Marker(0, 1));
}

TEST(ExpertCacheTest, PinWaitsForAnUnpin) {
  Fixture f(3, 2, std::chrono::seconds(20));
  auto p0 = f.cache->Pin(Key(0));
  auto p1 = f.cache->Pin(Key(1));
  ASSERT_TRUE(p0 && p1);
  std::atomic<bool> done{false};
  Result<PinnedExpert> p2 = Error::Internal("not run");
  std::thread t([&] {
    p2 = f.cache->Pin(Key(2));
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(done.load());
  p1->Release();
  t.join();
  ASSERT_TRUE(p2) << p2.error().ToString();
  EXPECT_EQ(f.TierOf(1), Tier::kCold);
  EXPECT_EQ(f.TierOf(0), Tier::kWarm);
}

TEST(ExpertCacheTest, ExpertLargerThanBudgetFailsAtOnce) {
  TempDir tmp;
  Bytes img = SyntheticExpert(kModel, 0, 0, 1.0f);
  auto c = ExpertCache::Open(Opts(tmp.Join("x"), img.size() - 1));
  ASSERT_TRUE(c);
  auto put = (*c)->Put(Key(0), ByteSpan(img));
  ASSERT_TRUE(put) << put.error().ToString();
  EXPECT_EQ(put->tier, Tier::kCold);  // registered, but cannot be warm
  auto p = (*c)->Pin(Key(0));
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ((*c)->Pin(Key(9)).error().code(), ErrorCode::kNotFound);
}

TEST(ExpertCacheTest, PrefetchPromotesAsynchronously) {
  Fixture f(6, 3);
  EXPECT_EQ(f.cache->Prefetch({Key(0), Key(1)}), 2);
  f.cache->WaitPrefetchIdle();
  EXPECT_EQ(f.TierOf(0), Tier::kWarm);
  EXPECT_EQ(f.TierOf(1), Tier::kWarm);
  const auto before = f.cache->stats();
  ASSERT_TRUE(f.cache->Pin(Key(0)));
  EXPECT_EQ(f.cache->stats().hits, before.hits + 1);
  EXPECT_EQ(f.cache->stats().misses, before.misses);
  // A batch larger than the budget: only the prefix that fits (3 experts).
  f.cache->DemoteAll();
  EXPECT_EQ(f.cache->Prefetch({Key(2), Key(3), Key(4), Key(5), Key(0)}), 3);
  f.cache->WaitPrefetchIdle();
  EXPECT_EQ(f.TierOf(2), Tier::kWarm);
  EXPECT_EQ(f.TierOf(3), Tier::kWarm);
  EXPECT_EQ(f.TierOf(4), Tier::kWarm);
  EXPECT_EQ(f.TierOf(5), Tier::kCold);
  // Already warm, unknown and duplicate keys start nothing.
  EXPECT_EQ(f.cache->Prefetch({Key(2), Key(2), Key(77)}), 0);
  EXPECT_LE(f.cache->stats().max_warm_bytes, 3 * f.expert_bytes);
}

TEST(ExpertCacheTest, PinWaitsForAPrefetchInFlight) {
  TempDir tmp;
  std::atomic<int> loads{0};
  ExpertCacheOptions o;
  o.dir = tmp.Join("experts");
  o.loader = [&](const std::string& path) {
    ++loads;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return LoadWarmExpert(path);
  };
  auto c = ExpertCache::Open(o);
  ASSERT_TRUE(c);
  Bytes img = SyntheticExpert(kModel, 0, 0, 7.5f);
  ASSERT_TRUE((*c)->Put(Key(0), ByteSpan(img)));
  (*c)->DemoteAll();
  loads = 0;
  EXPECT_EQ((*c)->Prefetch({Key(0)}), 1);
  auto p = (*c)->Pin(Key(0));
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_EQ(FirstGate(p->weights()), 7.5f);
  EXPECT_EQ(loads.load(), 1);  // one read, shared
  EXPECT_EQ((*c)->stats().prefetch_waits, 1u);
  EXPECT_EQ((*c)->stats().misses, 0u);
}

TEST(ExpertCacheTest, ConcurrentRandomAccessNeverExceedsBudget) {
  constexpr int kExperts = 12, kFit = 3, kThreads = 4, kIters = 250;
  Fixture f(kExperts, kFit, std::chrono::seconds(30));
  const uint64_t budget = kFit * f.expert_bytes;
  std::atomic<int> wrong{0}, failures{0};
  std::atomic<bool> over{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int i = 0; i < kIters; ++i) {
        const int e = static_cast<int>(rng() % kExperts);
        if (rng() % 5 == 0) f.cache->Prefetch({Key(static_cast<int>(rng() % kExperts)), Key(e)});
        auto p = f.cache->Pin(Key(e));
        if (!p) {
          ++failures;
          continue;
        }
        if (FirstGate(p->weights()) != Fixture::Marker(0, e)) ++wrong;
        if (f.cache->stats().warm_bytes > budget) over = true;
      }
    });
  for (auto& th : threads) th.join();
  f.cache->WaitPrefetchIdle();
  const ExpertCacheStats s = f.cache->stats();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(failures.load(), 0);
  EXPECT_FALSE(over.load());
  EXPECT_LE(s.max_warm_bytes, budget);
  EXPECT_LE(s.warm_bytes, budget);
  EXPECT_EQ(s.pinned_bytes, 0u);
  EXPECT_EQ(s.hits + s.prefetch_waits + s.misses, static_cast<uint64_t>(kThreads * kIters));
  EXPECT_GT(s.demotions, 0u);
  // Every warm expert got there by a promotion; every promotion but those
  // still warm ended in a demotion (Put's own promotions were demoted by
  // DemoteAll, so they cancel out).
  EXPECT_EQ(s.promotions - s.demotions, s.n_warm);
  EXPECT_EQ(s.warm_bytes, s.n_warm * f.expert_bytes);
}

TEST(ExpertCacheTest, RestartReRegistersTheColdTier) {
  TempDir tmp;
  const std::string dir = tmp.Join("experts");
  {
    auto c = ExpertCache::Open(Opts(dir));
    ASSERT_TRUE(c);
    for (int e = 0; e < 3; ++e) {
      Bytes img = SyntheticExpert(kModel, 2, e, e + 0.25f);
      ASSERT_TRUE((*c)->Put(Key(e, 2), ByteSpan(img)));
    }
  }
  // Litter that must be ignored or reported, not registered.
  ASSERT_TRUE(WriteFileAtomic(dir + "/synthetic/2/gate.gguf", std::string_view("not an expert")));
  ASSERT_TRUE(WriteFileAtomic(dir + "/synthetic/2/9.gguf", std::string_view("GGUF garbage")));
  ASSERT_TRUE(MakeDirs(dir + "/../escape"));
  auto c = ExpertCache::Open(Opts(dir));
  ASSERT_TRUE(c);
  std::vector<std::string> skipped;
  auto n = (*c)->ScanColdTier(&skipped);
  ASSERT_TRUE(n) << n.error().ToString();
  EXPECT_EQ(*n, 3);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("9.gguf"), std::string::npos) << skipped[0];
  for (int e = 0; e < 3; ++e) {
    EXPECT_EQ((*c)->Info(Key(e, 2))->tier, Tier::kCold);
    auto p = (*c)->Pin(Key(e, 2));
    ASSERT_TRUE(p) << p.error().ToString();
    EXPECT_EQ(FirstGate(p->weights()), e + 0.25f);
  }
}

TEST(ExpertCacheTest, ReplaceIsRefusedWhilePinnedAndBadImagesChangeNothing) {
  Fixture f(2, 0);
  auto p = f.cache->Pin(Key(0));
  ASSERT_TRUE(p);
  Bytes other = SyntheticExpert(kModel, 0, 0, 99.0f);
  auto r = f.cache->Put(Key(0), ByteSpan(other));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(FirstGate(p->weights()), Fixture::Marker(0, 0));
  p->Release();
  // Not an expert image: refused, old registration untouched.
  Bytes junk{'G', 'G', 'U', 'F', 3, 0, 0, 0};
  EXPECT_FALSE(f.cache->Put(Key(0), ByteSpan(junk)));
  auto q = f.cache->Pin(Key(0));
  ASSERT_TRUE(q);
  EXPECT_EQ(FirstGate(q->weights()), Fixture::Marker(0, 0));
  q->Release();
  // Replacing works once unpinned.
  ASSERT_TRUE(f.cache->Put(Key(0), ByteSpan(other)));
  auto q2 = f.cache->Pin(Key(0));
  ASSERT_TRUE(q2);
  EXPECT_EQ(FirstGate(q2->weights()), 99.0f);
  // Unsafe model ids never become paths.
  EXPECT_EQ(f.cache->Put({"..", 0, 0}, ByteSpan(other)).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(f.cache->Put({"a/b", 0, 0}, ByteSpan(other)).error().code(), ErrorCode::kInvalidArgument);
}

TEST(ExpertCacheTest, PutFileLinksWithoutCopying) {
  TempDir tmp;
  auto c = ExpertCache::Open(Opts(tmp.Join("experts")));
  ASSERT_TRUE(c);
  Bytes img = SyntheticExpert(kModel, 0, 4, 4.5f);
  const std::string src = tmp.Join("blob.data");
  ASSERT_TRUE(WriteFileAtomic(src, ByteSpan(img)));
  auto info = (*c)->PutFile(Key(4), src);
  ASSERT_TRUE(info) << info.error().ToString();
  EXPECT_EQ(info->tier, Tier::kWarm);
  struct stat a, b;
  ASSERT_EQ(::stat(src.c_str(), &a), 0);
  ASSERT_EQ(::stat(info->path.c_str(), &b), 0);
  EXPECT_EQ(a.st_ino, b.st_ino);
  // An expert image filed under another expert index is refused.
  EXPECT_EQ((*c)->PutFile(Key(5), src).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE((*c)->Contains(Key(5)));
}

}  // namespace
}  // namespace tenzro::runtime
