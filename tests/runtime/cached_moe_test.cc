// The MoE forward over the expert cache: same bits as ComputeMoeBlock, as
// accurate as ggml against the f64 oracle, and unchanged (bit for bit) when
// the experts do not fit in the memory budget.
#include "runtime/cached_moe.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "cache_fixture.h"
#include "core/file.h"
#include "runtime/moe_block.h"
#include "testutil/testutil.h"

namespace tenzro::runtime {
namespace {

using testing::TinyModel;
using tenzro::testing::DataPath;
using tenzro::testing::ReadF32;
using tenzro::testing::RelL2;
using tenzro::testing::TempDir;

constexpr int kLayers = 2, kExperts = 8, kEmbd = 256;

RoutingConfig TinyRouting() {
  RoutingConfig rc;
  rc.kind = RoutingKind::kSoftmaxTopK;
  rc.top_k = 2;
  rc.norm_topk_prob = true;
  return rc;
}

// The tiny model's 16 experts in a cache with the given budget (in experts
// of the larger layer-1 size; 0 = unlimited), plus both gates.
struct TinyCache {
  TempDir tmp;
  std::unique_ptr<ExpertCache> cache;
  std::shared_ptr<const GateWeights> gates[kLayers];
  uint64_t total_bytes = 0;

  explicit TinyCache(double budget_fraction) {
    TinyModel m;
    std::vector<Bytes> imgs;
    for (int l = 0; l < kLayers; ++l)
      for (int e = 0; e < kExperts; ++e) {
        imgs.push_back(m.Expert(l, e));
        total_bytes += imgs.back().size();
      }
    ExpertCacheOptions o;
    o.dir = tmp.Join("experts");
    o.budget_bytes = static_cast<uint64_t>(budget_fraction * total_bytes);
    auto c = ExpertCache::Open(o);
    EXPECT_TRUE(c);
    cache = std::move(*c);
    for (int l = 0; l < kLayers; ++l) {
      for (int e = 0; e < kExperts; ++e) {
        auto r = cache->Put({TinyModel::kModel, l, e}, ByteSpan(imgs[l * kExperts + e]));
        EXPECT_TRUE(r) << r.error().ToString();
      }
      auto g = DecodeGate(testing::Shared(m.Gate(l)), "gate");
      EXPECT_TRUE(g) << g.error().ToString();
      gates[l] = *g;
    }
    cache->DemoteAll();
  }

  std::vector<float> Forward(int layer, const std::vector<float>& x, int n_tok, ThreadPool* pool,
                             bool include_shared = true) {
    std::vector<float> out(static_cast<size_t>(n_tok) * kEmbd);
    auto r = ForwardMoeLayer(*cache, TinyModel::kModel, layer, *gates[layer], TinyRouting(), x.data(), n_tok,
                             out.data(), pool, {.include_shared = include_shared});
    EXPECT_TRUE(r) << r.error().ToString();
    return out;
  }
};

TEST(CachedMoeTest, SameBitsAsComputeMoeBlockAndAsAccurateAsGgml) {
  auto text = ReadTextFile(DataPath("moe/tiny-qwen35moe.moe-oracle.json"));
  ASSERT_TRUE(text);
  const nlohmann::json oracle = nlohmann::json::parse(*text);
  const std::vector<float> hidden = ReadF32(DataPath("moe/tiny-qwen35moe.hidden.f32"));
  const int n_tok = oracle["n_tokens"];
  ThreadPool pool(2);
  TinyCache tc(0.0);
  TinyModel m;
  for (const auto& c : oracle["cases"]) {
    if (c["weights"] != "Q4_K_M") continue;
    const int layer = c["layer"];
    SCOPED_TRACE(layer);
    // Reference: ComputeMoeBlock on the checkpoint's own slabs.
    MoeBlockWeights block;
    block.router = tc.gates[layer]->router;
    block.routing = TinyRouting();
    block.shared = tc.gates[layer]->shared;
    std::vector<ExpertWeights> ws;
    for (int e = 0; e < kExperts; ++e) {
      ExpertWeights w;
      for (int p = 0; p < 3; ++p) {
        auto s = m.ck->Expert(layer, e, static_cast<format::Projection>(p));
        WeightMatrix wm = *WeightMatrix::Borrow(s->type, s->row_len, s->rows, s->bytes);
        (p == 0 ? w.gate : p == 1 ? w.up : w.down) = wm;
      }
      ws.push_back(w);
    }
    for (const auto& w : ws) block.experts.push_back(&w);
    std::vector<float> ref_out(hidden.size());
    ASSERT_TRUE(ComputeMoeBlock(block, hidden.data(), n_tok, ref_out.data(), &pool));

    const std::vector<float> out = tc.Forward(layer, hidden, n_tok, &pool);
    EXPECT_EQ(0, std::memcmp(out.data(), ref_out.data(), out.size() * 4));
    const std::vector<float> full_ref = ReadF32(DataPath("moe/" + c["full_ref"].get<std::string>()));
    EXPECT_LE(RelL2(out, full_ref), c["ggml_vs_ref_rel_l2"].get<double>());
    const std::vector<float> routed_ref = ReadF32(DataPath("moe/" + c["routed_ref"].get<std::string>()));
    EXPECT_LE(RelL2(tc.Forward(layer, hidden, n_tok, &pool, false), routed_ref),
              c["ggml_vs_ref_rel_l2"].get<double>());
  }
}

// Three times more experts than the budget holds; random forwards from
// several threads; warm bytes never exceed the budget; results are the
// all-warm results bit for bit; promotions and demotions are counted.
TEST(CachedMoeTest, BudgetOfAThirdChangesNoBits) {
  const std::vector<float> hidden = ReadF32(DataPath("moe/tiny-qwen35moe.hidden.f32"));
  const int n_all = static_cast<int>(hidden.size() / kEmbd);
  TinyCache warm(0.0);
  TinyCache third(1.0 / 3.0);
  const uint64_t budget = third.cache->stats().budget_bytes;
  ASSERT_GT(budget, 0u);

  // Work items: (layer, token subset) with their all-warm answers.
  struct Item {
    int layer;
    std::vector<float> x;
    int n_tok;
    std::vector<float> want;
  };
  std::mt19937 rng(42);
  std::vector<Item> items;
  for (int i = 0; i < 24; ++i) {
    Item it;
    it.layer = static_cast<int>(rng() % kLayers);
    it.n_tok = 1 + static_cast<int>(rng() % n_all);
    for (int t = 0; t < it.n_tok; ++t) {
      const int src = static_cast<int>(rng() % n_all);
      it.x.insert(it.x.end(), hidden.begin() + src * kEmbd, hidden.begin() + (src + 1) * kEmbd);
    }
    it.want = warm.Forward(it.layer, it.x, it.n_tok, nullptr);
    items.push_back(std::move(it));
  }

  ThreadPool pool(2);
  std::atomic<int> mismatches{0};
  std::atomic<bool> over{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 2; ++rep)
        for (size_t i = t; i < items.size(); i += 2) {
          const Item& it = items[(i + rep * 7) % items.size()];
          std::vector<float> got = third.Forward(it.layer, it.x, it.n_tok, t == 0 ? &pool : nullptr);
          if (std::memcmp(got.data(), it.want.data(), got.size() * 4) != 0) ++mismatches;
          if (third.cache->stats().warm_bytes > budget) over = true;
        }
    });
  for (auto& th : threads) th.join();
  third.cache->WaitPrefetchIdle();
  const ExpertCacheStats s = third.cache->stats();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_FALSE(over.load());
  EXPECT_LE(s.max_warm_bytes, budget);
  EXPECT_GT(s.promotions, 16u);
  EXPECT_GT(s.demotions, 0u);
  EXPECT_GT(s.misses, 0u);
  EXPECT_EQ(s.pinned_bytes, 0u);
  EXPECT_LT(s.n_warm, 16u);
}

TEST(CachedMoeTest, UnknownExpertIsNotFound) {
  TinyCache tc(0.0);
  std::vector<TokenRouting> routing(1);
  routing[0].experts = {{3, 1.0f}};
  std::vector<float> x(kEmbd, 0.1f), out(kEmbd);
  auto r = ComputeRoutedCached(*tc.cache, "other-model", 0, routing, x.data(), kEmbd, out.data());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(r.error().message().find("expert 3"), std::string::npos) << r.error().message();
}

}  // namespace
}  // namespace tenzro::runtime
