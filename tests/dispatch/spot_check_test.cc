// Spot checks: the decision table (who is wrong when two answers differ),
// the seeded selection, the distance, and the distributed forward catching a
// lying holder behind the Executor seam — banned, its rows replaced, the
// output still the local block's; two replicas only is inconclusive; honest
// half-precision wires never trip the default tolerances.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "dispatch/forward.h"
#include "dispatch/spot_check.h"
#include "runtime/moe_block.h"
#include "runtime/test_weights.h"

namespace tenzro::dispatch {
namespace {

// f32 rows (exact): the distributed forward is the local block bit for bit.
// (The default, bf16, rounds: WireDtypeMatchesTheLocalBlockRoundedTheSameWay.)
ForwardOptions Exact() {
  ForwardOptions o;
  o.dtype = RowType::kF32;
  return o;
}

using quant::GgmlType;
using runtime::testing::RandomActs;
using runtime::testing::RandomMatrix;

constexpr double kTol = 1e-3;
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(SpotDecisionTest, Table) {
  // Agreement: nothing to do.
  SpotVerdict v = DecideSpotCheck(1e-5, false, std::nullopt, kTol);
  EXPECT_EQ(v.outcome, SpotOutcome::kAgree);
  EXPECT_FALSE(v.holder_wrong || v.verifier_wrong);
  // This node's own answer wins.
  v = DecideSpotCheck(0.5, true, std::nullopt, kTol);
  EXPECT_EQ(v.outcome, SpotOutcome::kMismatch);
  EXPECT_TRUE(v.holder_wrong);
  EXPECT_FALSE(v.verifier_wrong);
  // Two remotes, no third: nobody is banned.
  v = DecideSpotCheck(0.5, false, std::nullopt, kTol);
  EXPECT_EQ(v.outcome, SpotOutcome::kInconclusive);
  EXPECT_FALSE(v.holder_wrong || v.verifier_wrong);
  // A remote third sides with the verifier: the holder lied.
  v = DecideSpotCheck(0.5, false, ThirdOpinion{0.5, 1e-6, false}, kTol);
  EXPECT_EQ(v.outcome, SpotOutcome::kMismatch);
  EXPECT_TRUE(v.holder_wrong);
  EXPECT_FALSE(v.verifier_wrong);
  // ... or with the holder: the verifier lied.
  v = DecideSpotCheck(0.5, false, ThirdOpinion{0, 0.5, false}, kTol);
  EXPECT_EQ(v.outcome, SpotOutcome::kMismatch);
  EXPECT_FALSE(v.holder_wrong);
  EXPECT_TRUE(v.verifier_wrong);
  // A remote third that agrees with neither settles nothing.
  v = DecideSpotCheck(0.5, false, ThirdOpinion{0.4, 0.3, false}, kTol);
  EXPECT_EQ(v.outcome, SpotOutcome::kInconclusive);
  EXPECT_FALSE(v.holder_wrong || v.verifier_wrong);
  // A local third is the truth: both remotes can be wrong.
  v = DecideSpotCheck(0.5, false, ThirdOpinion{0.4, 0.3, true}, kTol);
  EXPECT_EQ(v.outcome, SpotOutcome::kMismatch);
  EXPECT_TRUE(v.holder_wrong);
  EXPECT_TRUE(v.verifier_wrong);
  // NaN / Inf never agree.
  v = DecideSpotCheck(std::nan(""), true, std::nullopt, kTol);
  EXPECT_TRUE(v.holder_wrong);
  v = DecideSpotCheck(kInf, false, ThirdOpinion{kInf, 0, false}, kTol);
  EXPECT_TRUE(v.holder_wrong);
}

TEST(SpotDecisionTest, SelectionIsSeededDeterministicAndAFraction) {
  const std::string a(64, 'a');
  EXPECT_FALSE(SpotCheckSelected(1, 1, a, 0, 0, 0));
  EXPECT_TRUE(SpotCheckSelected(1, 1, a, 0, 0, 1));
  int hits = 0, same = 0, other_seed = 0;
  constexpr int kDraws = 20000;
  for (int i = 0; i < kDraws; ++i) {
    const bool s = SpotCheckSelected(42, i / 8, a, 1, i % 8, 0.25);
    hits += s;
    same += s == SpotCheckSelected(42, i / 8, a, 1, i % 8, 0.25);
    other_seed += s != SpotCheckSelected(43, i / 8, a, 1, i % 8, 0.25);
  }
  EXPECT_EQ(same, kDraws);
  EXPECT_NEAR(hits / double(kDraws), 0.25, 0.02);
  EXPECT_GT(other_seed, kDraws / 10);  // another seed checks other results
}

TEST(SpotDecisionTest, DistanceAndRounding) {
  std::vector<float> a = {3, 4}, b = {3, 4}, c = {0, 0};
  EXPECT_EQ(SpotRelL2(a, b), 0);
  EXPECT_EQ(SpotRelL2(c, c), 0);
  EXPECT_NEAR(SpotRelL2(a, c), 1.0, 1e-12);
  std::vector<float> d = {3, 4.5f};
  EXPECT_NEAR(SpotRelL2(a, d), 0.5 / std::sqrt(9 + 4.5 * 4.5), 1e-9);
  std::vector<float> n = {3, std::numeric_limits<float>::quiet_NaN()};
  EXPECT_EQ(SpotRelL2(a, n), kInf);
  std::vector<float> r = {1.0f + 1.0f / 1024};  // not representable in bf16
  RoundRows(r, RowType::kBf16);
  EXPECT_EQ(r[0], 1.0f);
  r = {1.0f + 1.0f / 1024};
  RoundRows(r, RowType::kF32);
  EXPECT_EQ(r[0], 1.0f + 1.0f / 1024);
  EXPECT_EQ(SpotOutcomeName(SpotOutcome::kInconclusive), "inconclusive");
  EXPECT_LT(DefaultSpotTolerance(RowType::kF32), DefaultSpotTolerance(RowType::kF16));
  EXPECT_LT(DefaultSpotTolerance(RowType::kF16), DefaultSpotTolerance(RowType::kBf16));
}

// ---- the forward with a lying holder ----

constexpr int64_t kEmbd = 256, kFf = 256;
constexpr int kExperts = 8, kTok = 7;
const std::string kModel = "m";
const std::string kSelf(64, 's'), kA(64, 'a'), kB(64, 'b'), kC(64, 'c');

struct Weights {
  std::vector<runtime::ExpertWeights> experts;
  runtime::RouterWeights router;
  Weights() {
    for (int e = 0; e < kExperts; ++e)
      experts.push_back({RandomMatrix(GgmlType::Q4_K, kFf, kEmbd, 10 + e),
                         RandomMatrix(GgmlType::Q4_K, kFf, kEmbd, 30 + e),
                         RandomMatrix(GgmlType::Q6_K, kEmbd, kFf, 50 + e)});
    router.w = RandomMatrix(GgmlType::F32, kExperts, kEmbd, 99);
  }
};

const Weights& W() {
  static Weights w;
  return w;
}

// Remote holders through encoded frames; a liar scales its answers.
class Network : public Executor {
 public:
  struct Holder {
    std::unique_ptr<MemoryRunner> runner;
    bool lies = false;
    int calls = 0;
  };
  void Add(const std::string& id, const std::vector<int>& experts) {
    Holder& h = holders_[id];
    h.runner = std::make_unique<MemoryRunner>(kModel, nullptr);
    for (int e : experts) h.runner->Add(0, e, &W().experts[e]);
  }
  Result<ExecResponse> Exec(const HolderTarget& t, const ExecRequest& req, std::chrono::milliseconds) override {
    Holder& h = holders_.at(t.node_id);
    ++h.calls;
    TENZRO_TRY(ExecResponse r, DecodeExecResponse(ServeExec(EncodeExecRequest(req), *h.runner)));
    if (h.lies)
      for (ExecResult& e : r.experts)
        for (float& v : e.rows) v = v * 1.5f + 0.01f;
    return r;
  }
  std::map<std::string, Holder> holders_;
};

// Each holder on an address of its own (a wrong-output ban covers the
// liar's address, holder_stats.h): 127.0.0.<first byte of the id>, unless given.
swarm::Declaration Decl(const std::string& id, const std::vector<int>& experts, std::string addr = "") {
  swarm::Declaration d;
  d.node_id = id;
  d.model = kModel;
  if (addr.empty()) addr = "http://127.0.0." + std::to_string(static_cast<unsigned char>(id[0])) + ":1";
  d.endpoints.push_back({"http", addr});
  for (int e : experts) d.experts.push_back({0, e, "q4_k", "q4_k", "q6_k", "", swarm::Tier::kWarm, 0});
  return d;
}

// Self holds nothing; `holders` each hold every expert.
struct Swarm {
  std::shared_ptr<Network> net = std::make_shared<Network>();
  MemoryRunner self_runner{kModel, nullptr};
  std::vector<swarm::Declaration> live;
  std::unique_ptr<Dispatcher> d;
  // With `local_later`, this node holds every expert from its second plan on
  // (they finished loading during the first): spot checks then re-run here.
  explicit Swarm(const std::vector<std::string>& holders, bool local_later = false) {
    std::vector<int> all;
    for (int e = 0; e < kExperts; ++e) all.push_back(e);
    for (const std::string& h : holders) {
      live.push_back(Decl(h, all));
      net->Add(h, all);
    }
    for (int e : all) self_runner.Add(0, e, &W().experts[e]);
    Dispatcher::Sources s;
    s.self_node_id = kSelf;
    s.live = [this](const std::string&) -> Result<std::vector<swarm::Declaration>> { return live; };
    auto plans = std::make_shared<int>(0);
    s.local = [plans, local_later](const std::string&) {
      std::set<std::pair<int, int>> held;
      if (local_later && (*plans)++ > 0)
        for (int e = 0; e < kExperts; ++e) held.insert({0, e});
      return held;
    };
    d = std::make_unique<Dispatcher>(s, std::make_shared<LocalExecutor>(self_runner, ExecServeOptions{}), net);
  }
};

struct Case {
  std::vector<float> x = RandomActs(kTok * kEmbd, 5);
  std::vector<runtime::TokenRouting> routing;
  std::vector<float> want = std::vector<float>(kTok * kEmbd);
  Case() {
    runtime::MoeBlockWeights mb;
    mb.router = W().router;
    mb.routing.top_k = 2;
    for (const auto& e : W().experts) mb.experts.push_back(&e);
    routing = *runtime::ComputeMoeBlock(mb, x.data(), kTok, want.data());
  }
  ForwardInput Input() const {
    ForwardInput in;
    in.model = kModel;
    in.layer = 0;
    in.d_model = kEmbd;
    in.n_tok = kTok;
    in.x = x.data();
    in.routing = routing;
    return in;
  }
};

double Rel(const std::vector<float>& a, const std::vector<float>& b) { return SpotRelL2(a, b); }

TEST(SpotCheckForwardTest, ALyingHolderIsCaughtBannedAndItsRowsReplaced) {
  Swarm s({kA, kB, kC});
  s.net->holders_[kB].lies = true;
  Case c;
  ForwardOptions o = Exact();
  o.spot_check.fraction = 1.0;
  o.spot_check.seed = 7;
  o.spot_check.ban = std::chrono::minutes(10);
  std::vector<float> out(kTok * kEmbd);
  auto r = s.d->Forward(c.Input(), o, out.data());
  ASSERT_TRUE(r) << r.error().ToString();
  ASSERT_GT(s.net->holders_[kB].calls, 0);  // B was asked (as holder or verifier)
  EXPECT_LE(Rel(out, c.want), 1e-6);
  EXPECT_EQ(r->banned_wrong_output, std::vector<std::string>{kB});
  EXPECT_TRUE(s.d->stats().Banned(std::chrono::steady_clock::now()).count(kB));
  EXPECT_FALSE(s.d->stats().Banned(std::chrono::steady_clock::now()).count(kA));
  int mismatches = 0;
  for (const SpotCheckRecord& rec : r->spot_checks) {
    EXPECT_NE(rec.outcome, SpotOutcome::kSkipped);
    if (rec.outcome == SpotOutcome::kMismatch) {
      ++mismatches;
      EXPECT_TRUE(rec.holder == kB || rec.verifier == kB);
      EXPECT_FALSE(rec.third.empty());  // two remotes disagreed: a third settled it
      EXPECT_GT(rec.rel_l2, 0.1);
    }
  }
  EXPECT_GE(mismatches, 1);
  EXPECT_EQ(s.d->counters().bans_wrong_output, 1u);
  EXPECT_EQ(s.d->counters().spot_mismatch, static_cast<uint64_t>(mismatches));
  const auto j = ReportToJson(*r);
  EXPECT_EQ(j["spot_checks"]["banned"], nlohmann::json::array({kB}));
  EXPECT_EQ(j["spot_checks"]["mismatch"], mismatches);
  EXPECT_EQ(j["spot_checks"]["checked"], r->spot_checks.size());

  // Later forwards avoid B and agree everywhere.
  const int b_calls = s.net->holders_[kB].calls;
  for (int i = 0; i < 3; ++i) {
    auto again = s.d->Forward(c.Input(), o, out.data());
    ASSERT_TRUE(again) << again.error().ToString();
    EXPECT_LE(Rel(out, c.want), 1e-6);
    for (const SpotCheckRecord& rec : again->spot_checks) EXPECT_EQ(rec.outcome, SpotOutcome::kAgree);
  }
  EXPECT_EQ(s.net->holders_[kB].calls, b_calls);
}

// The liar comes back with a new key on the same address: it gets no work
// for the ban's duration (it is listed as banned); holders on other
// addresses keep working. (Failure bans stay per node id: ForwardTest.*
// puts every holder on one address.)
TEST(SpotCheckForwardTest, ALiarRekeyedOnTheSameAddressStaysBanned) {
  Swarm s({kA, kB, kC});
  s.net->holders_[kB].lies = true;
  Case c;
  ForwardOptions o = Exact();
  o.spot_check.fraction = 1.0;
  o.spot_check.ban = std::chrono::minutes(10);
  std::vector<float> out(kTok * kEmbd);
  auto r = s.d->Forward(c.Input(), o, out.data());
  ASSERT_TRUE(r) << r.error().ToString();
  ASSERT_EQ(r->banned_wrong_output, std::vector<std::string>{kB});
  const std::string b_addr = s.live[1].endpoints[0].address;
  EXPECT_EQ(HolderStatsTable::AddressKey(b_addr), "127.0.0.98/32");
  EXPECT_EQ(s.d->stats().BannedAddresses(std::chrono::steady_clock::now()).count("127.0.0.98/32"), 1u);

  // B restarts as B2 (a new node id) at the same address (another port), and keeps lying.
  const std::string kB2(64, 'e');
  std::vector<int> all;
  for (int e = 0; e < kExperts; ++e) all.push_back(e);
  s.live.push_back(Decl(kB2, all, "http://127.0.0.98:7777"));
  s.net->Add(kB2, all);
  s.net->holders_[kB2].lies = true;
  for (int i = 0; i < 3; ++i) {
    auto again = s.d->Forward(c.Input(), o, out.data());
    ASSERT_TRUE(again) << again.error().ToString();
    EXPECT_LE(Rel(out, c.want), 1e-6);
    EXPECT_TRUE(again->banned_wrong_output.empty());
  }
  EXPECT_EQ(s.net->holders_[kB2].calls, 0);
  EXPECT_TRUE(s.d->stats().Banned(std::chrono::steady_clock::now()).count(kB2));
  EXPECT_EQ(s.d->counters().bans_wrong_output, 1u);
  // Holders on other addresses still get work.
  auto p = s.d->PlanWork(kModel, {{0, 0, {0}}});
  ASSERT_TRUE(p);
  for (const HolderBatch& b : p->batches) EXPECT_TRUE(b.node_id == kA || b.node_id == kC) << b.node_id;
}

TEST(SpotCheckForwardTest, UncheckedResultsOfACaughtLiarAreRecomputed) {
  // With a fraction below 1 a liar is caught on some result; whatever else it
  // answered in that forward is recomputed, so that forward is right too.
  Swarm s({kA, kB, kC});
  s.net->holders_[kB].lies = true;
  Case c;
  ForwardOptions o = Exact();
  o.spot_check.fraction = 0.3;
  o.spot_check.seed = 11;
  std::vector<float> out(kTok * kEmbd);
  bool caught = false;
  for (int i = 0; i < 40 && !caught; ++i) {
    auto r = s.d->Forward(c.Input(), o, out.data());
    ASSERT_TRUE(r) << r.error().ToString();
    caught = !r->banned_wrong_output.empty();
    if (caught) {
      EXPECT_EQ(r->banned_wrong_output, std::vector<std::string>{kB});
      EXPECT_LE(Rel(out, c.want), 1e-6) << "forward " << i;
      std::printf("liar caught in forward %d: %zu checks, %d other results recomputed\n", i,
                  r->spot_checks.size(), r->spot_recomputed);
    }
  }
  EXPECT_TRUE(caught);
}

TEST(SpotCheckForwardTest, TwoReplicasThatDisagreeAreInconclusive) {
  Swarm s({kA, kB});
  s.net->holders_[kB].lies = true;
  Case c;
  ForwardOptions o = Exact();
  o.spot_check.fraction = 1.0;
  std::vector<float> out(kTok * kEmbd);
  auto r = s.d->Forward(c.Input(), o, out.data());
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_TRUE(r->banned_wrong_output.empty());
  EXPECT_TRUE(s.d->stats().Banned(std::chrono::steady_clock::now()).empty());
  int inconclusive = 0;
  for (const SpotCheckRecord& rec : r->spot_checks) inconclusive += rec.outcome == SpotOutcome::kInconclusive;
  EXPECT_GE(inconclusive, 1);
  EXPECT_EQ(s.d->counters().spot_inconclusive, static_cast<uint64_t>(inconclusive));
}

TEST(SpotCheckForwardTest, HonestHalfPrecisionWiresAgreeUnderTheDefaultTolerance) {
  for (RowType t : {RowType::kF32, RowType::kBf16, RowType::kF16, RowType::kQ8_0}) {
    Swarm s({kA, kB, kC});
    Case c;
    ForwardOptions o;
    o.dtype = t;
    o.spot_check.fraction = 1.0;
    std::vector<float> out(kTok * kEmbd);
    auto r = s.d->Forward(c.Input(), o, out.data());
    ASSERT_TRUE(r) << r.error().ToString();
    ASSERT_FALSE(r->spot_checks.empty());
    double worst = 0;
    for (const SpotCheckRecord& rec : r->spot_checks) {
      EXPECT_EQ(rec.outcome, SpotOutcome::kAgree) << RowTypeName(t) << " expert " << rec.expert;
      worst = std::max(worst, rec.rel_l2);
    }
    std::printf("%s wire: worst honest spot-check rel L2 %.2e (tolerance %.0e)\n",
                std::string(RowTypeName(t)).c_str(), worst, DefaultSpotTolerance(t));
    EXPECT_TRUE(r->banned_wrong_output.empty());
  }
}

TEST(SpotCheckForwardTest, ThisNodesOwnReRunDecidesAndSeesTheWireRounding) {
  for (RowType t : {RowType::kF32, RowType::kBf16, RowType::kQ8_0}) {
    Swarm s({kA, kB}, /*local_later=*/true);
    s.net->holders_[kB].lies = true;
    Case c;
    ForwardOptions o;
    o.dtype = t;
    o.spot_check.fraction = 1.0;
    std::vector<float> out(kTok * kEmbd);
    auto r = s.d->Forward(c.Input(), o, out.data());
    ASSERT_TRUE(r) << r.error().ToString();
    ASSERT_FALSE(r->spot_checks.empty());
    for (const SpotCheckRecord& rec : r->spot_checks) {
      EXPECT_EQ(rec.verifier, kSelf);
      EXPECT_TRUE(rec.third.empty());
      EXPECT_EQ(rec.outcome, rec.holder == kB ? SpotOutcome::kMismatch : SpotOutcome::kAgree)
          << RowTypeName(t) << " expert " << rec.expert << " rel " << rec.rel_l2;
      if (rec.holder == kA)
        std::printf("%s wire, local re-run: honest rel L2 %.2e (tolerance %.0e)\n",
                    std::string(RowTypeName(t)).c_str(), rec.rel_l2, DefaultSpotTolerance(t));
    }
    if (s.net->holders_[kB].calls > 0) {
      EXPECT_EQ(r->banned_wrong_output, std::vector<std::string>{kB});
      // The liar's rows were replaced by this node's (f32: exact).
      if (t == RowType::kF32) {
        EXPECT_LE(Rel(out, c.want), 1e-6);
      }
    }
  }
}

TEST(SpotCheckForwardTest, OffByDefault) {
  Swarm s({kA, kB, kC});
  s.net->holders_[kB].lies = true;
  Case c;
  std::vector<float> out(kTok * kEmbd);
  auto r = s.d->Forward(c.Input(), Exact(), out.data());
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->spot_checks.empty());
  EXPECT_TRUE(r->spot_calls.empty());
}

}  // namespace
}  // namespace tenzro::dispatch
