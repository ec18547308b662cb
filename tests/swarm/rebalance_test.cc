// PlanRebalance: priority (uncovered, under-replicated, hot), offers as the
// source of uncovered experts, never what the node holds, the budget.
#include "swarm/rebalance.h"

#include <gtest/gtest.h>

#include "catalog/builtin_shapes.h"

namespace tenzro::swarm {
namespace {

const std::string kModel = "tiny-qwen35moe";  // 2 layers x 8 experts

Declaration Holder(const std::string& id, std::vector<std::tuple<int, int, double>> experts) {
  Declaration d;
  d.node_id = id;
  d.model = kModel;
  d.endpoints = {{"http", "http://127.0.0.1:" + id.substr(0, 1)}};
  for (auto [l, e, tps] : experts)
    d.experts.push_back({l, e, "q4_K", "q4_K", "q4_K", fmt::format("{:064x}", l * 100 + e), Tier::kWarm, tps});
  return d;
}

TEST(RebalanceTest, PriorityOrderSourcesAndBudget) {
  const std::string self(64, '9');
  std::vector<Declaration> live = {
      // L0/E0: 3 replicas, very hot. L0/E1: 2 replicas. L0/E2: 1 replica (a and self).
      Holder(std::string(64, '1'), {{0, 0, 300}, {0, 1, 0}, {0, 3, 0}}),
      Holder(std::string(64, '2'), {{0, 0, 300}, {0, 1, 0}, {0, 3, 0}}),
      Holder(std::string(64, '3'), {{0, 0, 300}, {0, 2, 0}}),
      Holder(self, {{1, 7, 0}}),
  };
  // A preparer offers L1/E5 (uncovered); nobody offers L1/E6.
  Declaration prep;
  prep.node_id = std::string(64, '5');
  prep.model = kModel;
  prep.offers.push_back({1, 5, std::string(64, 'e')});
  live.push_back(prep);

  auto shape = catalog::BuiltinShape(kModel);
  ASSERT_TRUE(shape);
  ShardMapOptions o;
  o.min_providers = 2;
  o.hot_tps = 100;
  auto map = BuildShardMap(*shape, live, o);
  ASSERT_TRUE(map);

  RebalanceInput in;
  in.self_node_id = self;
  RebalancePlan p = PlanRebalance(*map, live, in);
  ASSERT_GE(p.adopt.size(), 3u);
  // Uncovered with an offer first, then under-replicated (L0/E2, 1 replica), then hot L0/E0.
  EXPECT_EQ(p.adopt[0].reason, "uncovered");
  EXPECT_EQ(std::make_pair(p.adopt[0].layer, p.adopt[0].expert), std::make_pair(1, 5));
  EXPECT_EQ(p.adopt[0].blob_hash, std::string(64, 'e'));
  ASSERT_EQ(p.adopt[0].sources.size(), 1u);
  EXPECT_EQ(p.adopt[0].sources[0].first, prep.node_id);
  EXPECT_EQ(p.adopt[1].reason, "under_replicated");
  EXPECT_EQ(std::make_pair(p.adopt[1].layer, p.adopt[1].expert), std::make_pair(0, 2));
  EXPECT_EQ(p.adopt[1].sources[0].first, std::string(64, '3'));
  EXPECT_EQ(p.adopt.back().reason, "hot");
  EXPECT_EQ(std::make_pair(p.adopt.back().layer, p.adopt.back().expert), std::make_pair(0, 0));
  for (const auto& a : p.adopt) EXPECT_FALSE(a.layer == 1 && a.expert == 7) << "adopted its own expert";
  // Uncovered experts nobody can supply are listed, not adopted.
  bool e6 = false;
  for (auto [l, e] : p.unavailable) e6 |= (l == 1 && e == 6);
  EXPECT_TRUE(e6);

  // Budget for exactly one expert: the top one, the rest skipped.
  in.memory_budget = 10'000;
  in.free_bytes = 6'000;
  in.expert_bytes = 5'000;
  RebalancePlan b = PlanRebalance(*map, live, in);
  ASSERT_EQ(b.adopt.size(), 1u);
  EXPECT_EQ(b.adopt[0].reason, "uncovered");
  EXPECT_EQ(b.skipped_budget.size(), p.adopt.size() - 1);
  nlohmann::json j = RebalancePlanToJson(b);
  EXPECT_EQ(j["adopt"].size(), 1u);
  EXPECT_EQ(j["adopt"][0]["reason"], "uncovered");

  // Deterministic.
  EXPECT_EQ(RebalancePlanToJson(PlanRebalance(*map, live, in)), j);
}

}  // namespace
}  // namespace tenzro::swarm
