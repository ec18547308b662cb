#include "swarm/shard_map.h"

#include <gtest/gtest.h>

#include "catalog/builtin_shapes.h"

namespace tenzro::swarm {
namespace {

using nlohmann::json;

std::string Id(char c) { return std::string(64, c); }

HeldExpert X(int layer, int expert, double tps) {
  return {layer, expert, "q4_k", "q4_k", "q6_k", "", Tier::kWarm, tps};
}

Declaration Holder(const std::string& id, HolderState state, std::vector<HeldExpert> experts) {
  Declaration d;
  d.node_id = id;
  d.model = "tiny-qwen35moe";
  d.endpoints = {{"http", "http://127.0.0.1:" + std::to_string(8000 + id[0])}};
  d.experts = std::move(experts);
  d.memory_budget = 1000;
  d.free_bytes = 400;
  d.state = state;
  d.seq = 3;
  return d;
}

// Three holders over tiny-qwen35moe (2 MoE layers x 8 experts):
//   A serving: L0E0 5, L0E1 4, L0E2 0, L1E0 1 tok/s, gates L0 L1, plus two
//              entries the model does not have (L2E0, L0E8)
//   B serving, in two parts: L0E0 6, L0E1 1 | L1E0 2, L1E7 20
//   C joining: L0E0, L0E3, L1E7 (0 tok/s)
// plus a holder of another model and a leaving holder, both ignored.
std::vector<Declaration> HandBuilt() {
  std::vector<Declaration> v;
  Declaration a = Holder(Id('a'), HolderState::kServing, {X(0, 0, 5), X(0, 1, 4), X(0, 2, 0), X(1, 0, 1), X(2, 0, 9), X(0, 8, 9)});
  a.gates = {{0, ""}, {1, ""}};
  v.push_back(a);
  Declaration b0 = Holder(Id('b'), HolderState::kServing, {X(0, 0, 6), X(0, 1, 1)});
  Declaration b1 = Holder(Id('b'), HolderState::kServing, {X(1, 0, 2), X(1, 7, 20)});
  b0.parts = b1.parts = 2;
  b1.part = 1;
  v.push_back(b0);
  v.push_back(b1);
  v.push_back(Holder(Id('c'), HolderState::kJoining, {X(0, 0, 0), X(0, 3, 0), X(1, 7, 0)}));
  Declaration other = Holder(Id('d'), HolderState::kServing, {X(0, 5, 100)});
  other.model = "other-model";
  v.push_back(other);
  v.push_back(Holder(Id('e'), HolderState::kLeaving, {X(0, 6, 100)}));
  return v;
}

catalog::ModelShape Tiny() {
  auto s = catalog::BuiltinShape("tiny-qwen35moe");
  EXPECT_TRUE(s) << s.error().ToString();
  return *s;
}

std::vector<std::pair<int, int>> Refs(const ShardMap& m, const std::vector<size_t>& idx) {
  std::vector<std::pair<int, int>> out;
  for (size_t i : idx) out.push_back({m.experts[i].layer, m.experts[i].expert});
  return out;
}

TEST(ShardMapTest, HandComputedNumbers) {
  catalog::ModelShape shape = Tiny();
  ASSERT_EQ(shape.n_layer, 2);
  auto decls = HandBuilt();
  auto m = BuildShardMap(shape, decls);
  ASSERT_TRUE(m) << m.error().ToString();
  EXPECT_EQ(m->total_experts, 16u);
  EXPECT_EQ(m->covered_experts, 6u);
  EXPECT_EQ(m->ignored_entries, 2u);
  ASSERT_EQ(m->layers.size(), 2u);
  EXPECT_EQ(m->layers[0].covered, 4);
  EXPECT_EQ(m->layers[0].n_expert, 8);
  EXPECT_EQ(m->layers[1].covered, 2);

  auto rep = [&](int l, int e) { return m->experts[m->Find(l, e)].replicas; };
  auto tps = [&](int l, int e) { return m->experts[m->Find(l, e)].tps; };
  EXPECT_EQ(rep(0, 0), 3);
  EXPECT_EQ(rep(0, 1), 2);
  EXPECT_EQ(rep(0, 2), 1);
  EXPECT_EQ(rep(0, 3), 1);
  EXPECT_EQ(rep(0, 4), 0);
  EXPECT_EQ(rep(1, 0), 2);
  EXPECT_EQ(rep(1, 7), 2);
  EXPECT_EQ(rep(1, 3), 0);
  EXPECT_DOUBLE_EQ(tps(0, 0), 11);
  EXPECT_DOUBLE_EQ(tps(0, 1), 5);
  EXPECT_DOUBLE_EQ(tps(1, 0), 3);
  EXPECT_DOUBLE_EQ(tps(1, 7), 20);
  EXPECT_EQ(m->experts[m->Find(0, 0)].holders, (std::vector<std::string>{Id('a'), Id('b'), Id('c')}));
  EXPECT_EQ(m->Find(2, 0), -1);
  EXPECT_EQ(m->Find(0, 8), -1);

  using P = std::vector<std::pair<int, int>>;
  EXPECT_EQ(Refs(*m, m->hot), (P{{1, 7}, {0, 0}}));  // above 10 tok/s, hottest first
  EXPECT_EQ(Refs(*m, m->under_replicated),
            (P{{0, 2}, {0, 3}, {0, 4}, {0, 5}, {0, 6}, {0, 7}, {1, 1}, {1, 2}, {1, 3}, {1, 4}, {1, 5}, {1, 6}}));

  ASSERT_EQ(m->holders.size(), 3u);
  const HolderSummary& a = m->holders[0];
  EXPECT_EQ(a.node_id, Id('a'));
  EXPECT_EQ(a.experts, 4);
  EXPECT_EQ(a.gates, 2);
  EXPECT_DOUBLE_EQ(a.tps, 10);
  EXPECT_EQ(a.memory_budget, 1000u);
  EXPECT_EQ(a.free_bytes, 400u);
  ASSERT_EQ(a.endpoints.size(), 1u);
  EXPECT_EQ(a.endpoints[0].kind, "http");
  const HolderSummary& b = m->holders[1];
  EXPECT_EQ(b.experts, 4);
  EXPECT_EQ(b.parts_seen, 2);
  EXPECT_EQ(b.parts_declared, 2);
  EXPECT_DOUBLE_EQ(b.tps, 29);
  EXPECT_EQ(m->holders[2].state, HolderState::kJoining);
  EXPECT_EQ(m->holders[2].experts, 3);
}

TEST(ShardMapTest, PolicyOptions) {
  auto decls = HandBuilt();
  auto m = BuildShardMap(Tiny(), decls, {.min_providers = 3, .hot_tps = 4.5});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->under_replicated.size(), 15u);  // all but L0E0
  using P = std::vector<std::pair<int, int>>;
  EXPECT_EQ(Refs(*m, m->hot), (P{{1, 7}, {0, 0}, {0, 1}}));
  EXPECT_FALSE(BuildShardMap(Tiny(), decls, {.min_providers = 0}));
  EXPECT_FALSE(BuildShardMap(Tiny(), decls, {.min_providers = 2, .hot_tps = -1}));
  // No holders: nothing covered, everything under-replicated.
  auto empty = BuildShardMap(Tiny(), {});
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->covered_experts, 0u);
  EXPECT_EQ(empty->under_replicated.size(), 16u);
}

TEST(ShardMapTest, JsonFieldNames) {
  auto decls = HandBuilt();
  auto m = BuildShardMap(Tiny(), decls);
  ASSERT_TRUE(m);
  json j = ShardMapToJson(*m);
  EXPECT_EQ(j["model"], "tiny-qwen35moe");
  EXPECT_EQ(j["min_providers"], 2);
  EXPECT_EQ(j["total_experts"], 16);
  EXPECT_EQ(j["covered_experts"], 6);
  EXPECT_DOUBLE_EQ(j["coverage"].get<double>(), 6.0 / 16);
  EXPECT_EQ(j["layers"][1]["covered"], 2);
  EXPECT_DOUBLE_EQ(j["layers"][0]["coverage"].get<double>(), 0.5);
  EXPECT_EQ(j["experts"].size(), 16u);
  EXPECT_EQ(j["experts"][0]["holders"].size(), 3u);
  EXPECT_EQ(j["hot"][0]["layer"], 1);
  EXPECT_EQ(j["hot"][0]["expert"], 7);
  EXPECT_EQ(j["under_replicated"].size(), 12u);
  EXPECT_EQ(j["holders"][1]["tps"], 29.0);
  EXPECT_EQ(j["holders"][2]["state"], "joining");
  EXPECT_EQ(j["holders"][0]["endpoints"][0]["kind"], "http");
}

size_t Count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

TEST(ShardMapTest, SvgOneRectPerExpert) {
  auto decls = HandBuilt();
  auto m = BuildShardMap(Tiny(), decls);
  ASSERT_TRUE(m);
  std::string svg = ShardMapToSvg(*m);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_EQ(Count(svg, "<rect"), 16u);
  EXPECT_EQ(Count(svg, "class=\"hot\""), 2u);
  EXPECT_EQ(Count(svg, "class=\"uncovered\""), 10u);
}

}  // namespace
}  // namespace tenzro::swarm
