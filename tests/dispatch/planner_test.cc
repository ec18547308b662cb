// The planner against hand-computed cases: local first, lowest estimated
// completion time (rtt + rows / throughput), ties to the lower node id,
// queued rows, bans, leaving holders, unheld experts, transports, and
// determinism under reordered input.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "dispatch/planner.h"

namespace tenzro::dispatch {
namespace {

using nlohmann::json;

const std::string kSelf(64, 's');
const std::string kA(64, 'a');
const std::string kB(64, 'b');
const std::string kC(64, 'c');

swarm::Declaration Decl(const std::string& id, std::vector<std::pair<int, int>> experts, bool quic = false) {
  swarm::Declaration d;
  d.node_id = id;
  d.model = "m";
  d.endpoints.push_back({"http", "http://127.0.0.1:" + std::to_string(1000 + id[0])});
  if (quic) d.endpoints.push_back({"quic", "127.0.0.1:" + std::to_string(2000 + id[0])});
  for (auto [l, e] : experts) d.experts.push_back({l, e, "q4_k", "q4_k", "q4_k", "", swarm::Tier::kWarm, 0});
  return d;
}

HolderStats Measured(double rtt, double tput, double queued = 0) { return {rtt, tput, queued, true}; }

TEST(PlannerTest, ParseRoutingsAcceptsOptionalWeightAndGroups) {
  auto r = ParseRoutings(json::parse(R"([
    {"token_index": 0, "experts": [{"layer": 0, "expert": 5, "weight": 0.7}, {"layer": 0, "expert": 1}]},
    {"token_index": 2, "experts": [{"layer": 0, "expert": 1, "weight": 0.5}, {"layer": 1, "expert": 5}]},
    {"token_index": 1, "experts": []}])"));
  ASSERT_TRUE(r) << r.error().ToString();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_TRUE((*r)[0].experts[0].has_weight);
  EXPECT_FLOAT_EQ((*r)[0].experts[0].weight, 0.7f);
  EXPECT_FALSE((*r)[0].experts[1].has_weight);
  const std::vector<PlanItem> items = GroupByExpert(*r);
  const std::vector<PlanItem> want = {{0, 1, {0, 2}}, {0, 5, {0}}, {1, 5, {2}}};
  EXPECT_EQ(items, want);
}

TEST(PlannerTest, ParseRoutingsRefusesBadInputNamingIt) {
  auto msg = [](const char* text) {
    auto r = ParseRoutings(json::parse(text));
    EXPECT_FALSE(r) << text;
    return r ? std::string() : r.error().message();
  };
  EXPECT_NE(msg(R"({"token_index": 0})").find("array"), std::string::npos);
  EXPECT_NE(msg(R"([{"experts": []}])").find("token_index"), std::string::npos);
  EXPECT_NE(msg(R"([{"token_index": -1, "experts": []}])").find("non-negative"), std::string::npos);
  EXPECT_NE(msg(R"([{"token_index": 0, "experts": [{"layer": 0, "expert": "5"}]}])").find("'expert'"),
            std::string::npos);
  EXPECT_NE(msg(R"([{"token_index": 3, "experts": []}, {"token_index": 3, "experts": []}])").find("token 3"),
            std::string::npos);
  EXPECT_NE(msg(R"([{"token_index": 0, "experts": [{"layer": 0, "expert": 2}, {"layer": 0, "expert": 2}]}])")
                .find("twice"),
            std::string::npos);
  EXPECT_NE(msg(R"([{"token_index": 0, "experts": [{"layer": 0, "expert": 2, "weight": "x"}]}])").find("weight"),
            std::string::npos);
  EXPECT_NE(msg(R"([{"token_index": 0}])").find("experts"), std::string::npos);
}

// Hand computation (est = rtt + (queued + planned + rows) / rows_per_s * 1000),
// with calls free (call_cost_ms 0): items largest first: e1 (3 rows), e0 (2
// rows, local), e2 (2 rows), e3 (1 row); A and B hold e1..e3.
//   cover: A and B could each take all 6 rows; B finishes them sooner
//          (5 + 6/10000e3 = 5.6 < 1 + 6/1000e3 = 7)              -> {B}
//   moves off B (the last to finish): e1 to A: A 4.0, B 5.3     -> 5.3
//                                     e3 to A: A 5.0, B 5.2     -> 5.2
//   (e2 to A would give A 7.0: no better)
TEST(PlannerTest, LowestEstimatedCompletionTime) {
  PlanInput in;
  in.self_node_id = kSelf;
  in.call_cost_ms = 0;
  in.local = {{0, 0}};
  in.live = {Decl(kA, {{0, 1}, {0, 2}, {0, 3}}), Decl(kB, {{0, 1}, {0, 2}, {0, 3}}), Decl(kSelf, {{0, 9}})};
  in.stats[kA] = Measured(1.0, 1000);
  in.stats[kB] = Measured(5.0, 10000);
  const std::vector<PlanItem> work = {{0, 0, {0, 1}}, {0, 1, {0, 2, 3}}, {0, 2, {1, 4}}, {0, 3, {5}}};
  const Plan p = PlanDispatch(work, in);
  ASSERT_EQ(p.batches.size(), 3u);
  EXPECT_EQ(p.batches[0].node_id, kSelf);
  EXPECT_EQ(p.batches[0].transport, Transport::kLocal);
  EXPECT_EQ(p.batches[0].items, (std::vector<PlanItem>{{0, 0, {0, 1}}}));
  EXPECT_EQ(p.batches[1].node_id, kA);
  EXPECT_EQ(p.batches[1].transport, Transport::kHttp);
  EXPECT_EQ(p.batches[1].endpoint, "http://127.0.0.1:1097");
  EXPECT_EQ(p.batches[1].items, (std::vector<PlanItem>{{0, 1, {0, 2, 3}}, {0, 3, {5}}}));
  EXPECT_EQ(p.batches[1].rows, 4u);
  EXPECT_NEAR(p.batches[1].estimated_ms, 5.0, 1e-9);
  EXPECT_EQ(p.batches[2].node_id, kB);
  EXPECT_EQ(p.batches[2].items, (std::vector<PlanItem>{{0, 2, {1, 4}}}));
  EXPECT_NEAR(p.batches[2].estimated_ms, 5.2, 1e-9);
  EXPECT_TRUE(p.unheld.empty());
  EXPECT_EQ(p.holders_considered, 2);  // our own declaration is not a remote holder

  const json j = PlanToJson(p);
  EXPECT_EQ(j["batches"][1]["items"][0]["token_indices"], json({0, 2, 3}));
  EXPECT_EQ(j["batches"][0]["transport"], "local");
}

// The same input at the default call cost (0.5 ms): a second call would save
// 5.6 - 5.2 = 0.4 ms, less than it costs, so B computes e1..e3 in one call.
TEST(PlannerTest, ASecondCallOnlyWhenItSavesMoreThanItCosts) {
  PlanInput in;
  in.self_node_id = kSelf;
  in.local = {{0, 0}};
  in.live = {Decl(kA, {{0, 1}, {0, 2}, {0, 3}}), Decl(kB, {{0, 1}, {0, 2}, {0, 3}})};
  in.stats[kA] = Measured(1.0, 1000);
  in.stats[kB] = Measured(5.0, 10000);
  const std::vector<PlanItem> work = {{0, 0, {0, 1}}, {0, 1, {0, 2, 3}}, {0, 2, {1, 4}}, {0, 3, {5}}};
  Plan p = PlanDispatch(work, in);
  ASSERT_EQ(p.batches.size(), 2u);
  EXPECT_EQ(p.batches[1].node_id, kB);
  EXPECT_EQ(p.batches[1].rows, 6u);
  EXPECT_NEAR(p.batches[1].estimated_ms, 5.6, 1e-9);
  // At 0.2 ms a call, the first move (e1 to A: 5.6 -> 5.3) pays for the
  // call it opens, and the second (e3: -> 5.2) opens none.
  in.call_cost_ms = 0.2;
  p = PlanDispatch(work, in);
  ASSERT_EQ(p.batches.size(), 3u);
  EXPECT_NEAR(std::max(p.batches[1].estimated_ms, p.batches[2].estimated_ms), 5.2, 1e-9);
}

// A decode step of a swarm of many small holders: 8 routed experts of 64,
// each expert on 2 of 16 holders (holder h holds experts 4h..4h+3 and
// 4(h+1)..4(h+1)+3 mod 64), all equally fast. The old rule (each item to the
// soonest finish) used one holder per expert, 8 calls; the cover needs one
// holder for each pair of neighbouring experts.
TEST(PlannerTest, ManySmallHoldersAreAskedInFewCalls) {
  PlanInput in;
  in.self_node_id = kSelf;
  std::vector<std::string> ids;
  for (int h = 0; h < 16; ++h) {
    const std::string id = fmt::format("{:064x}", h + 1);
    ids.push_back(id);
    std::vector<std::pair<int, int>> experts;
    for (int k = 0; k < 8; ++k) experts.push_back({0, (4 * h + k) % 64});
    in.live.push_back(Decl(id, experts, true));
    in.stats[id] = Measured(0.3, 20000);  // 0.3 ms a call + 0.05 ms a row
  }
  in.quic = true;
  // Experts 0,1 (holders 15, 0), 4,5 (0, 1), 8,9 (1, 2), 12,13 (2, 3): 4 holders cover all.
  std::vector<PlanItem> work;
  for (int e : {0, 1, 4, 5, 8, 9, 12, 13}) work.push_back({0, e, {0}});
  const Plan p = PlanDispatch(work, in);
  EXPECT_LE(p.batches.size(), 4u);
  size_t items = 0;
  for (const HolderBatch& b : p.batches) {
    items += b.items.size();
    EXPECT_EQ(b.transport, Transport::kQuic);
  }
  EXPECT_EQ(items, 8u);
  EXPECT_TRUE(p.unheld.empty());
}

// A holder that covers everything but is slow does not get everything: the
// cover picks it, and the moves hand its items to the fast replicas.
TEST(PlannerTest, ASlowHolderThatHoldsEverythingShedsWorkToFastReplicas) {
  PlanInput in;
  in.self_node_id = kSelf;
  in.live = {Decl(kA, {{0, 1}, {0, 2}, {0, 3}, {0, 4}}), Decl(kB, {{0, 1}, {0, 2}}), Decl(kC, {{0, 3}, {0, 4}})};
  in.stats[kA] = Measured(20.0, 1000);  // a far holder: 20 ms a call
  in.stats[kB] = Measured(1.0, 1000);
  in.stats[kC] = Measured(1.0, 1000);
  const Plan p = PlanDispatch({{0, 1, {0}}, {0, 2, {1}}, {0, 3, {2}}, {0, 4, {3}}}, in);
  ASSERT_EQ(p.batches.size(), 2u);
  EXPECT_EQ(p.batches[0].node_id, kB);
  EXPECT_EQ(p.batches[1].node_id, kC);
  EXPECT_NEAR(p.batches[0].estimated_ms, 3.0, 1e-9);
  EXPECT_NEAR(p.batches[1].estimated_ms, 3.0, 1e-9);
}

// Rows already queued at A (6) push e1 to B: A 1 + (6+3)/1000e3 = 10 > B 5.3.
TEST(PlannerTest, QueuedRowsCount) {
  PlanInput in;
  in.self_node_id = kSelf;
  in.live = {Decl(kA, {{0, 1}}), Decl(kB, {{0, 1}})};
  in.stats[kA] = Measured(1.0, 1000, 6);
  in.stats[kB] = Measured(5.0, 10000);
  const Plan p = PlanDispatch({{0, 1, {0, 2, 3}}}, in);
  ASSERT_EQ(p.batches.size(), 1u);
  EXPECT_EQ(p.batches[0].node_id, kB);
  EXPECT_NEAR(p.batches[0].estimated_ms, 5.3, 1e-9);
}

// Unmeasured holders use the defaults (1 ms, 1000 rows/s): equal estimates,
// so the lower node id wins, then A's planned rows push the next item to B.
TEST(PlannerTest, TiesGoToTheLowerNodeIdAndLoadSpreads) {
  PlanInput in;
  in.self_node_id = kSelf;
  in.live = {Decl(kB, {{0, 1}, {0, 2}}), Decl(kA, {{0, 1}, {0, 2}})};
  const Plan p = PlanDispatch({{0, 1, {0}}, {0, 2, {1}}}, in);
  ASSERT_EQ(p.batches.size(), 2u);
  EXPECT_EQ(p.batches[0].node_id, kA);
  EXPECT_EQ(p.batches[0].items[0].expert, 1);
  EXPECT_NEAR(p.batches[0].estimated_ms, 2.0, 1e-9);
  EXPECT_EQ(p.batches[1].node_id, kB);
  EXPECT_EQ(p.batches[1].items[0].expert, 2);
}

TEST(PlannerTest, UnheldLeavingBannedAndFailedAreRespected) {
  PlanInput in;
  in.self_node_id = kSelf;
  swarm::Declaration leaving = Decl(kC, {{0, 4}});
  leaving.state = swarm::HolderState::kLeaving;
  swarm::Declaration no_endpoint = Decl(std::string(64, 'd'), {{0, 5}});
  no_endpoint.endpoints.clear();
  in.live = {Decl(kA, {{0, 1}, {0, 2}}), Decl(kB, {{0, 1}, {0, 3}}), leaving, no_endpoint};
  in.excluded = {kB};
  in.excluded_items = {{kA, 0, 2}};
  const Plan p = PlanDispatch({{0, 1, {0}}, {0, 2, {1}}, {0, 3, {2}}, {0, 4, {3}}, {0, 5, {4}}, {0, 6, {5}}}, in);
  ASSERT_EQ(p.batches.size(), 1u);
  EXPECT_EQ(p.batches[0].node_id, kA);
  EXPECT_EQ(p.batches[0].items, (std::vector<PlanItem>{{0, 1, {0}}}));
  const std::vector<PlanItem> unheld = {{0, 2, {1}}, {0, 3, {2}}, {0, 4, {3}}, {0, 5, {4}}, {0, 6, {5}}};
  EXPECT_EQ(p.unheld, unheld);
  EXPECT_EQ(p.unheld_banned, (std::set<std::pair<int, int>>{{0, 3}}));  // only banned B holds it
  const json j = PlanToJson(p);
  EXPECT_EQ(j["unheld"].size(), 5u);
  EXPECT_EQ(j["unheld"][1]["holders_banned"], true);
  EXPECT_EQ(j["unheld"][0]["holders_banned"], false);
}

TEST(PlannerTest, LocalItemThatFailedGoesRemote) {
  PlanInput in;
  in.self_node_id = kSelf;
  in.local = {{0, 1}};
  in.live = {Decl(kA, {{0, 1}})};
  in.excluded_items = {{kSelf, 0, 1}};
  const Plan p = PlanDispatch({{0, 1, {0}}}, in);
  ASSERT_EQ(p.batches.size(), 1u);
  EXPECT_EQ(p.batches[0].node_id, kA);
}

TEST(PlannerTest, QuicOnlyWhenAdvertisedAndAvailable) {
  PlanInput in;
  in.self_node_id = kSelf;
  in.live = {Decl(kA, {{0, 1}}, /*quic=*/true), Decl(kB, {{0, 2}})};
  Plan p = PlanDispatch({{0, 1, {0}}, {0, 2, {1}}}, in);
  ASSERT_EQ(p.batches.size(), 2u);
  EXPECT_EQ(p.batches[0].transport, Transport::kHttp);
  in.quic = true;
  p = PlanDispatch({{0, 1, {0}}, {0, 2, {1}}}, in);
  EXPECT_EQ(p.batches[0].transport, Transport::kQuic);
  EXPECT_EQ(p.batches[0].endpoint, "127.0.0.1:2097");
  EXPECT_EQ(p.batches[1].transport, Transport::kHttp);
}

TEST(PlannerTest, DeterministicForReorderedInput) {
  PlanInput in;
  in.self_node_id = kSelf;
  in.local = {{0, 7}};
  std::vector<PlanItem> work;
  for (int e = 0; e < 16; ++e) {
    std::vector<int> toks;
    for (int t = 0; t <= e % 5; ++t) toks.push_back(t * 3 + e % 2);
    work.push_back({0, e, toks});
  }
  // Parts: A's declaration split in two; everyone holds overlapping sets.
  swarm::Declaration a1 = Decl(kA, {{0, 0}, {0, 1}, {0, 2}, {0, 3}, {0, 4}});
  swarm::Declaration a2 = Decl(kA, {{0, 5}, {0, 6}, {0, 8}, {0, 9}});
  a2.part = 1;
  in.live = {a1, a2, Decl(kB, {{0, 3}, {0, 4}, {0, 5}, {0, 10}, {0, 11}, {0, 12}}),
             Decl(kC, {{0, 0}, {0, 9}, {0, 10}, {0, 13}, {0, 14}})};
  in.stats[kC] = Measured(0.5, 3000, 2);
  const json first = PlanToJson(PlanDispatch(work, in));
  std::mt19937 rng(3);
  for (int i = 0; i < 20; ++i) {
    std::shuffle(work.begin(), work.end(), rng);
    std::shuffle(in.live.begin(), in.live.end(), rng);
    EXPECT_EQ(PlanToJson(PlanDispatch(work, in)), first);
  }
  // Expert 15 is held by nobody.
  EXPECT_EQ(first["unheld"].size(), 1u);
  EXPECT_EQ(first["unheld"][0]["expert"], 15);
}

}  // namespace
}  // namespace tenzro::dispatch
