// The failover policy alone (failover.h): plans and call outcomes are built
// by hand, times are arguments. Every branch: success, a failed holder's
// experts re-planned (with and without a ban), per-expert errors, missing
// experts (no holder, banned holders, last error) under fail and
// renormalize, bounded rounds, discovery errors, lost rows, renormalisation.
#include "dispatch/failover.h"

#include <gtest/gtest.h>

#include <chrono>

namespace tenzro::dispatch {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

const std::string kA(64, 'a'), kB(64, 'b'), kSelf(64, 's');

FailoverPolicy Policy(OnMissing on_missing = OnMissing::kFail, int max_rounds = 3) {
  return FailoverPolicy("m", 4, {{1, {0, 2}}, {2, {1}}, {3, {0, 1, 2}}},
                        {on_missing, max_rounds, milliseconds(5000)});
}

// A plan placing `placed` on one batch and nothing else unheld but `unheld`.
Plan PlanOf(const std::vector<int>& placed, const std::vector<int>& unheld = {},
            const std::set<int>& unheld_banned = {}) {
  Plan p;
  if (!placed.empty()) {
    HolderBatch& b = p.batches.emplace_back();
    b.node_id = kA;
    for (int e : placed) b.items.push_back({4, e, {0}});
  }
  for (int e : unheld) p.unheld.push_back({4, e, {0}});
  for (int e : unheld_banned) p.unheld_banned.insert({4, e});
  return p;
}

CallOutcome Answered(const std::string& node, const std::vector<int>& ok, const std::vector<int>& errors = {},
                     bool remote = true) {
  CallOutcome c;
  c.node_id = node;
  c.remote = remote;
  for (int e : ok) c.experts.push_back({e, std::nullopt});
  for (int e : errors) c.experts.push_back({e, Error::ResourceExhausted("expert {} busy", e)});
  return c;
}

CallOutcome Failed(const std::string& node, const std::vector<int>& experts, CallStatus status, bool remote = true) {
  CallOutcome c;
  c.node_id = node;
  c.remote = remote;
  c.status = status;
  c.error = status == CallStatus::kFailed ? Error::Unavailable("connection refused")
                                          : Error::ResourceExhausted("holder busy");
  for (int e : experts) c.experts.push_back({e, std::nullopt});
  return c;
}

std::vector<int> Experts(const std::vector<PlanItem>& work) {
  std::vector<int> e;
  for (const PlanItem& w : work) e.push_back(w.expert);
  return e;
}

TEST(FailoverTest, OnMissingNames) {
  EXPECT_EQ(OnMissingName(OnMissing::kFail), "fail");
  EXPECT_EQ(OnMissingName(OnMissing::kRenormalize), "renormalize");
  EXPECT_EQ(*ParseOnMissing("fail"), OnMissing::kFail);
  EXPECT_EQ(ParseOnMissing("drop").error().code(), ErrorCode::kInvalidArgument);
}

TEST(FailoverTest, EverythingAnsweredInOneRound) {
  FailoverPolicy p = Policy();
  ASSERT_TRUE(p.BeginRound());
  EXPECT_EQ(p.rounds(), 1);
  EXPECT_FALSE(p.last_round());
  const std::vector<PlanItem> work = p.Work();
  ASSERT_EQ(work.size(), 3u);
  EXPECT_EQ(work[0], (PlanItem{4, 1, {0, 2}}));
  EXPECT_EQ(work[2], (PlanItem{4, 3, {0, 1, 2}}));
  ASSERT_EQ(p.OnPlan(PlanOf({1, 2, 3})), PlanStep::kRun);
  const RoundDecision d =
      p.OnResults({Answered(kSelf, {1}, {}, /*remote=*/false), Answered(kA, {2, 3})}, Clock::now());
  EXPECT_EQ(d.done, (std::set<int>{1, 2, 3}));
  EXPECT_TRUE(d.replan.empty());
  EXPECT_TRUE(d.bans.empty());
  EXPECT_FALSE(p.BeginRound());  // nothing pending
  const auto missing = p.Finish();
  ASSERT_TRUE(missing) << missing.error().ToString();
  EXPECT_TRUE(missing->empty());
}

TEST(FailoverTest, FailedRemoteCallIsBannedAndItsExpertsReplanned) {
  FailoverPolicy p = Policy();
  ASSERT_TRUE(p.BeginRound());
  ASSERT_EQ(p.OnPlan(PlanOf({1, 2, 3})), PlanStep::kRun);
  const auto now = Clock::now();
  const RoundDecision d = p.OnResults({Answered(kB, {1}), Failed(kA, {2, 3}, CallStatus::kFailed)}, now);
  EXPECT_EQ(d.done, (std::set<int>{1}));
  EXPECT_EQ(d.replan, (std::set<int>{2, 3}));
  ASSERT_EQ(d.bans.size(), 1u);
  EXPECT_EQ(d.bans[0].node_id, kA);
  EXPECT_EQ(d.bans[0].until, now + milliseconds(5000));
  // Round 2 re-plans 2 and 3, never on A again.
  ASSERT_TRUE(p.BeginRound());
  EXPECT_EQ(Experts(p.Work()), (std::vector<int>{2, 3}));
  EXPECT_EQ(p.excluded_items(), (std::set<FailoverPolicy::ItemKey>{{kA, 4, 2}, {kA, 4, 3}}));
  ASSERT_EQ(p.OnPlan(PlanOf({2, 3})), PlanStep::kRun);
  EXPECT_TRUE(p.OnResults({Answered(kB, {2, 3})}, now).bans.empty());
  EXPECT_FALSE(p.BeginRound());
  EXPECT_TRUE(p.Finish()->empty());
}

TEST(FailoverTest, BansOnlyFailedRemoteCalls) {
  const auto now = Clock::now();
  EXPECT_TRUE(BanAfter(Failed(kA, {1}, CallStatus::kFailed), now, milliseconds(7)));
  EXPECT_EQ(BanAfter(Failed(kA, {1}, CallStatus::kFailed), now, milliseconds(7))->until, now + milliseconds(7));
  EXPECT_FALSE(BanAfter(Failed(kSelf, {1}, CallStatus::kFailed, /*remote=*/false), now, milliseconds(7)));
  EXPECT_FALSE(BanAfter(Failed(kA, {1}, CallStatus::kErrorFrame), now, milliseconds(7)));
  EXPECT_FALSE(BanAfter(Answered(kA, {}, {1}), now, milliseconds(7)));

  // One ban per failed remote call, in call order; a failed local call re-plans without a ban.
  FailoverPolicy p = Policy();
  ASSERT_TRUE(p.BeginRound());
  ASSERT_EQ(p.OnPlan(PlanOf({1, 2, 3})), PlanStep::kRun);
  const RoundDecision d = p.OnResults({Failed(kSelf, {1}, CallStatus::kFailed, /*remote=*/false),
                                       Failed(kB, {2}, CallStatus::kFailed), Failed(kA, {3}, CallStatus::kFailed)},
                                      now);
  ASSERT_EQ(d.bans.size(), 2u);
  EXPECT_EQ(d.bans[0].node_id, kB);
  EXPECT_EQ(d.bans[1].node_id, kA);
  EXPECT_EQ(d.replan, (std::set<int>{1, 2, 3}));
  EXPECT_TRUE(p.excluded_items().count({kSelf, 4, 1}));
}

TEST(FailoverTest, ErrorFrameAndExpertErrorsReplanWithoutBan) {
  FailoverPolicy p = Policy();
  ASSERT_TRUE(p.BeginRound());
  ASSERT_EQ(p.OnPlan(PlanOf({1, 2, 3})), PlanStep::kRun);
  const RoundDecision d =
      p.OnResults({Failed(kA, {1}, CallStatus::kErrorFrame), Answered(kB, {2}, /*errors=*/{3})}, Clock::now());
  EXPECT_TRUE(d.bans.empty());
  EXPECT_EQ(d.done, (std::set<int>{2}));
  EXPECT_EQ(d.replan, (std::set<int>{1, 3}));
  EXPECT_EQ(p.excluded_items(), (std::set<FailoverPolicy::ItemKey>{{kA, 4, 1}, {kB, 4, 3}}));
  // Nobody else holds them: missing with the last error (the per-expert one names its holder).
  ASSERT_TRUE(p.BeginRound());
  EXPECT_EQ(p.OnPlan(PlanOf({}, {1, 3})), PlanStep::kStop);
  const auto r = p.Finish();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kResourceExhausted);
  const std::string& m = r.error().message();
  EXPECT_NE(m.find("m layer 4: 2 of 3 routed experts could not be computed"), std::string::npos) << m;
  EXPECT_NE(m.find("expert 1 (tokens 0,2): "), std::string::npos) << m;
  EXPECT_NE(m.find("holder busy"), std::string::npos) << m;
  EXPECT_NE(m.find("expert 3 (tokens 0,1,2): "), std::string::npos) << m;
  EXPECT_NE(m.find("holder " + kB.substr(0, 12)), std::string::npos) << m;
  EXPECT_NE(m.find("--on-missing renormalize"), std::string::npos) << m;
}

TEST(FailoverTest, UnheldIsNotFoundOrUnavailableWhenOnlyBannedHoldersHaveIt) {
  FailoverPolicy p = Policy(OnMissing::kRenormalize);
  ASSERT_TRUE(p.BeginRound());
  ASSERT_EQ(p.OnPlan(PlanOf({3}, {1, 2}, /*unheld_banned=*/{2})), PlanStep::kRun);
  EXPECT_FALSE(p.failing());  // renormalize never fails
  EXPECT_FALSE(p.pending(1));
  EXPECT_TRUE(p.pending(3));
  p.OnResults({Answered(kA, {3})}, Clock::now());
  EXPECT_FALSE(p.BeginRound());
  const auto missing = p.Finish();
  ASSERT_TRUE(missing);
  ASSERT_EQ(missing->size(), 2u);
  EXPECT_EQ(missing->at(1).code(), ErrorCode::kNotFound);
  EXPECT_NE(missing->at(1).message().find("no live holder of m layer 4 expert 1"), std::string::npos);
  EXPECT_EQ(missing->at(2).code(), ErrorCode::kUnavailable);
  EXPECT_NE(missing->at(2).message().find("banned"), std::string::npos);
}

TEST(FailoverTest, FailStopsAtTheFirstMissingExpertAndComputesNothingElse) {
  FailoverPolicy p = Policy(OnMissing::kFail);
  ASSERT_TRUE(p.BeginRound());
  EXPECT_EQ(p.OnPlan(PlanOf({1, 3}, {2})), PlanStep::kStop);
  EXPECT_TRUE(p.failing());
  EXPECT_FALSE(p.pending(1));  // the rest is not computed, nor named
  EXPECT_FALSE(p.BeginRound());
  const auto r = p.Finish();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(r.error().message().find("1 of 3 routed experts"), std::string::npos) << r.error().message();
}

TEST(FailoverTest, EmptyPlanStops) {
  FailoverPolicy p = Policy(OnMissing::kRenormalize);
  ASSERT_TRUE(p.BeginRound());
  EXPECT_EQ(p.OnPlan(PlanOf({}, {1, 2, 3})), PlanStep::kStop);
  EXPECT_EQ(p.Finish()->size(), 3u);
}

TEST(FailoverTest, RoundsAreBoundedAndTheLastOneIsNotAdaptive) {
  FailoverPolicy p = Policy(OnMissing::kRenormalize, /*max_rounds=*/2);
  ASSERT_TRUE(p.BeginRound());
  EXPECT_FALSE(p.last_round());
  ASSERT_EQ(p.OnPlan(PlanOf({1, 2, 3})), PlanStep::kRun);
  p.OnResults({Failed(kA, {1, 2, 3}, CallStatus::kFailed)}, Clock::now());
  ASSERT_TRUE(p.BeginRound());
  EXPECT_TRUE(p.last_round());
  EXPECT_EQ(p.rounds(), 2);
  ASSERT_EQ(p.OnPlan(PlanOf({1, 2, 3})), PlanStep::kRun);
  p.OnResults({Answered(kB, {1}), Failed(kB, {2, 3}, CallStatus::kFailed)}, Clock::now());
  EXPECT_FALSE(p.BeginRound());  // experts pending, no rounds left
  EXPECT_EQ(p.rounds(), 2);
  const auto missing = p.Finish();
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->size(), 2u);
  EXPECT_EQ(missing->at(2).code(), ErrorCode::kUnavailable);  // the last call's error
  EXPECT_NE(missing->at(2).message().find("connection refused"), std::string::npos);
}

TEST(FailoverTest, DiscoveryErrorIsTheErrorOfWhatNoHolderComputes) {
  FailoverPolicy p = Policy(OnMissing::kRenormalize);
  p.SetDiscoveryError(Error::Io("dht down"));
  ASSERT_TRUE(p.BeginRound());
  // This node computes 1; 2 fails on it with its own error; 3 nobody holds.
  ASSERT_EQ(p.OnPlan(PlanOf({1, 2}, {3})), PlanStep::kRun);
  p.OnResults({Answered(kSelf, {1}, {2}, /*remote=*/false)}, Clock::now());
  ASSERT_TRUE(p.BeginRound());
  EXPECT_EQ(p.OnPlan(PlanOf({}, {2})), PlanStep::kStop);
  const auto missing = p.Finish();
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->at(3).code(), ErrorCode::kIo);
  EXPECT_EQ(missing->at(2).code(), ErrorCode::kResourceExhausted);
}

TEST(FailoverTest, LostRowsAreMissingWithTheirError) {
  FailoverPolicy p = Policy(OnMissing::kFail);
  ASSERT_TRUE(p.BeginRound());
  ASSERT_EQ(p.OnPlan(PlanOf({1, 2, 3})), PlanStep::kRun);
  p.OnResults({Answered(kA, {1, 2, 3})}, Clock::now());
  EXPECT_FALSE(p.failing());
  p.Lost(2, Error::Unavailable("holder lied"));
  const auto r = p.Finish();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(r.error().message().find("expert 2 (tokens 1): "), std::string::npos);
  EXPECT_NE(r.error().message().find("holder lied"), std::string::npos);
}

TEST(FailoverTest, NoExpertsMeansNoRounds) {
  FailoverPolicy p("m", 0, {}, {});
  EXPECT_FALSE(p.BeginRound());
  EXPECT_TRUE(p.Finish()->empty());
}

TEST(FailoverTest, RenormalizeKeepsEachTokensWeightSum) {
  std::vector<runtime::TokenRouting> routing(3);
  routing[0].experts = {{1, 0.5f}, {2, 0.3f}, {3, 0.2f}};
  routing[1].experts = {{2, 0.6f}, {3, 0.4f}};
  routing[2].experts = {{1, 1.0f}};
  const std::vector<runtime::TokenRouting> before = routing;
  EXPECT_TRUE(RenormalizeRouting(routing, {}).empty());
  EXPECT_EQ(routing[0].experts[1].weight, before[0].experts[1].weight);

  const std::map<int, Error> missing = {{1, Error::NotFound("gone")}};
  EXPECT_EQ(RenormalizeRouting(routing, missing), (std::vector<int>{2}));
  EXPECT_EQ(routing[0].experts[0].weight, 0.0f);
  EXPECT_FLOAT_EQ(routing[0].experts[1].weight, 0.3f * (1.0f / 0.5f));
  EXPECT_FLOAT_EQ(routing[0].experts[2].weight, 0.2f * (1.0f / 0.5f));
  EXPECT_EQ(routing[1].experts[0].weight, 0.6f);  // untouched
  EXPECT_EQ(routing[2].experts[0].weight, 0.0f);  // only the shared expert left
}

}  // namespace
}  // namespace tenzro::dispatch
