// The distributed forward with holders behind the Executor seam: bit-for-bit
// equality with the local MoE block, failover (transport errors, per-expert
// errors, malformed answers), bans, bounded rounds, --on-missing fail and
// renormalize, and input checks. Holders here run the real kernels on
// in-memory experts and every remote call goes through the encoded frames.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>

#include <cmath>
#include <cstring>
#include <map>
#include <thread>

#include "dispatch/forward.h"
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

using runtime::testing::RandomActs;
using runtime::testing::RandomMatrix;
using quant::GgmlType;

constexpr int64_t kEmbd = 256, kFf = 256;
constexpr int kExperts = 8, kTok = 7;
const std::string kModel = "m";
const std::string kSelf(64, 's'), kA(64, 'a'), kB(64, 'b'), kC(64, 'c');

struct Weights {
  std::vector<runtime::ExpertWeights> experts;
  runtime::RouterWeights router;
  runtime::SharedExpertWeights shared;
  Weights() {
    for (int e = 0; e < kExperts; ++e)
      experts.push_back({RandomMatrix(GgmlType::Q4_K, kFf, kEmbd, 10 + e),
                         RandomMatrix(GgmlType::Q4_K, kFf, kEmbd, 30 + e),
                         RandomMatrix(GgmlType::Q6_K, kEmbd, kFf, 50 + e)});
    router.w = RandomMatrix(GgmlType::F32, kExperts, kEmbd, 99);
    shared.ffn = {RandomMatrix(GgmlType::Q4_K, kFf, kEmbd, 70), RandomMatrix(GgmlType::Q4_K, kFf, kEmbd, 71),
                  RandomMatrix(GgmlType::Q6_K, kEmbd, kFf, 72)};
    shared.gate_inp = RandomMatrix(GgmlType::F32, 1, kEmbd, 73);
  }
};

const Weights& W() {
  static Weights w;
  return w;
}

enum class Mode { kOk, kDown, kCorrupt, kWholeError, kHang, kFrozen };

// Remote holders: frames encoded, served by ServeExec, decoded.
class FakeNetwork : public Executor {
 public:
  struct Holder {
    std::unique_ptr<MemoryRunner> runner;
    Mode mode = Mode::kOk;
    int calls = 0;
    std::atomic<int> cancelled{0};  // kFrozen calls ended by their CancelToken
  };
  // kFrozen: no answer until the call is cancelled or its deadline passes.
  Result<ExecResponse> ExecCancellable(const HolderTarget& t, const ExecRequest& req,
                                       std::chrono::milliseconds timeout, CancelToken& cancel) override {
    Holder& h = holders_.at(t.node_id);
    if (h.mode != Mode::kFrozen) return Exec(t, req, timeout);
    ++h.calls;
    auto state = std::make_shared<std::pair<std::mutex, std::condition_variable>>();
    cancel.OnCancel([state] {
      std::lock_guard<std::mutex> l(state->first);
      state->second.notify_all();
    });
    std::unique_lock<std::mutex> l(state->first);
    if (state->second.wait_for(l, timeout, [&] { return cancel.cancelled(); })) {
      ++h.cancelled;
      return Error::Unavailable("cancelled");
    }
    return Error::DeadlineExceeded("no answer in {} ms", timeout.count());
  }
  Holder& Add(const std::string& id, const std::vector<int>& experts) {
    Holder& h = holders_[id];
    h.runner = std::make_unique<MemoryRunner>(kModel, nullptr);
    for (int e : experts) h.runner->Add(0, e, &W().experts[e]);
    return h;
  }
  Result<ExecResponse> Exec(const HolderTarget& t, const ExecRequest& req, std::chrono::milliseconds timeout) override {
    Holder& h = holders_.at(t.node_id);
    ++h.calls;
    if (h.mode == Mode::kDown) return Error::Unavailable("connection refused");
    if (h.mode == Mode::kHang) {  // a dead peer the transport does not notice
      std::this_thread::sleep_for(timeout);
      return Error::DeadlineExceeded("no answer in {} ms", timeout.count());
    }
    const Bytes answer = ServeExec(EncodeExecRequest(req), *h.runner);
    TENZRO_TRY(ExecResponse r, DecodeExecResponse(answer));
    if (h.mode == Mode::kCorrupt) r.request_id ^= 1;
    if (h.mode == Mode::kWholeError) r = ErrorExecResponse(req.request_id, Error::ResourceExhausted("busy"));
    return r;
  }
  std::map<std::string, Holder> holders_;
};

swarm::Declaration Decl(const std::string& id, const std::vector<int>& experts) {
  swarm::Declaration d;
  d.node_id = id;
  d.model = kModel;
  d.endpoints.push_back({"http", "http://127.0.0.1:1"});
  for (int e : experts) d.experts.push_back({0, e, "q4_k", "q4_k", "q6_k", "", swarm::Tier::kWarm, 0});
  return d;
}

struct Swarm {
  std::shared_ptr<FakeNetwork> net = std::make_shared<FakeNetwork>();
  MemoryRunner self_runner{kModel, nullptr};
  std::vector<swarm::Declaration> live;
  std::set<std::pair<int, int>> local;
  std::unique_ptr<Dispatcher> d;

  // Self holds {0, 1}; A {1..5}; B {2..7}; C {0, 6, 7}: every expert twice or more.
  Swarm() {
    for (int e : {0, 1}) {
      self_runner.Add(0, e, &W().experts[e]);
      local.insert({0, e});
    }
    Holder(kA, {1, 2, 3, 4, 5});
    Holder(kB, {2, 3, 4, 5, 6, 7});
    Holder(kC, {0, 6, 7});
    Dispatcher::Sources s;
    s.self_node_id = kSelf;
    s.live = [this](const std::string&) -> Result<std::vector<swarm::Declaration>> { return live; };
    s.local = [this](const std::string&) { return local; };
    d = std::make_unique<Dispatcher>(s, std::make_shared<LocalExecutor>(self_runner, ExecServeOptions{}), net);
  }
  FakeNetwork::Holder& Holder(const std::string& id, const std::vector<int>& experts) {
    live.push_back(Decl(id, experts));
    return net->Add(id, experts);
  }
};

struct Case {
  std::vector<float> x = RandomActs(kTok * kEmbd, 5);
  std::vector<runtime::TokenRouting> routing;
  std::vector<float> shared = std::vector<float>(kTok * kEmbd);
  std::vector<float> want = std::vector<float>(kTok * kEmbd);
  Case() {
    runtime::MoeBlockWeights mb;
    mb.router = W().router;
    mb.routing.top_k = 2;
    for (const auto& e : W().experts) mb.experts.push_back(&e);
    mb.shared = W().shared;
    routing = *runtime::ComputeMoeBlock(mb, x.data(), kTok, want.data());
    EXPECT_TRUE(runtime::SharedExpertFfn(W().shared, x.data(), kTok, shared.data()));
  }
  ForwardInput Input() const {
    ForwardInput in;
    in.model = kModel;
    in.layer = 0;
    in.d_model = kEmbd;
    in.n_tok = kTok;
    in.x = x.data();
    in.routing = routing;
    in.shared = shared.data();
    return in;
  }
  std::set<int> Routed() const {
    std::set<int> s;
    for (const auto& t : routing)
      for (const auto& c : t.experts) s.insert(c.expert);
    return s;
  }
};

bool BitEqual(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

TEST(ForwardTest, MatchesTheLocalBlockBitForBit) {
  Swarm s;
  Case c;
  std::vector<float> out(kTok * kEmbd);
  auto r = s.d->Forward(c.Input(), Exact(), out.data());
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_TRUE(BitEqual(out, c.want));
  EXPECT_EQ(r->rounds, 1);
  EXPECT_TRUE(r->dropped.empty());
  int remote = 0;
  for (const auto& call : r->calls) {
    EXPECT_FALSE(call.error);
    remote += call.target.transport == Transport::kHttp;
  }
  EXPECT_GE(remote, 1);
  const auto j = ReportToJson(*r);
  EXPECT_EQ(j["holders"].size(), r->calls.size());
  EXPECT_GE(j["total_ms"].get<double>(), j["combine_ms"].get<double>());
}

TEST(ForwardTest, HalfPrecisionWireIsCloseButRounded) {
  Swarm s;
  Case c;
  s.local.clear();  // everything remote
  for (RowType t : {RowType::kBf16, RowType::kF16}) {
    ForwardOptions o = Exact();
    o.dtype = t;
    std::vector<float> out(kTok * kEmbd);
    ASSERT_TRUE(s.d->Forward(c.Input(), o, out.data()));
    double num = 0, den = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      num += (out[i] - c.want[i]) * double(out[i] - c.want[i]);
      den += double(c.want[i]) * c.want[i];
    }
    EXPECT_LT(std::sqrt(num / den), 2e-2) << RowTypeName(t);
    EXPECT_FALSE(BitEqual(out, c.want));
  }
}

// Per wire dtype, a forward whose experts run on remote holders (rows
// through real exec frames), alone or next to this node's own experts, is
// bit for bit the local block that rounds each routed expert's input and
// output rows through the same dtype (MoeBlockOptions::wire, what
// model::LocalMoeExecutor uses); and for the rounding dtypes it differs from
// the exact block.
TEST(ForwardTest, WireDtypeMatchesTheLocalBlockRoundedTheSameWay) {
  for (bool mixed : {false, true}) {
  SCOPED_TRACE(mixed ? "local and remote experts" : "remote experts only");
  Swarm s;
  Case c;
  if (!mixed) s.local.clear();  // everything remote
  for (RowType t : {RowType::kF32, RowType::kBf16, RowType::kF16, RowType::kQ8_0}) {
    runtime::MoeBlockWeights mb;
    mb.router = W().router;
    mb.routing.top_k = 2;
    for (const auto& e : W().experts) mb.experts.push_back(&e);
    mb.shared = W().shared;
    runtime::MoeBlockOptions mo;
    mo.wire = t;
    std::vector<float> want(kTok * kEmbd);
    ASSERT_TRUE(runtime::ComputeMoeBlock(mb, c.x.data(), kTok, want.data(), nullptr, mo));
    ForwardOptions o;
    o.dtype = t;
    std::vector<float> out(kTok * kEmbd);
    auto r = s.d->Forward(c.Input(), o, out.data());
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_TRUE(BitEqual(out, want)) << RowTypeName(t);
    EXPECT_EQ(BitEqual(out, c.want), t == RowType::kF32) << RowTypeName(t);
    int local = 0, remote = 0;
    for (const auto& call : r->calls) (call.target.transport == Transport::kLocal ? local : remote)++;
    EXPECT_GE(remote, 1);
    EXPECT_EQ(local >= 1, mixed);
  }
  }
  ForwardOptions def;
  EXPECT_EQ(def.dtype, RowType::kBf16);
}

TEST(ForwardTest, DownHolderIsBannedAndItsItemsGoToReplicas) {
  Swarm s;
  Case c;
  s.net->holders_[kA].mode = Mode::kDown;
  s.net->holders_[kC].mode = Mode::kDown;
  ForwardOptions o = Exact();
  o.ban = std::chrono::seconds(60);
  std::vector<float> out(kTok * kEmbd);
  auto r = s.d->Forward(c.Input(), o, out.data());
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_TRUE(BitEqual(out, c.want));
  const auto banned = s.d->stats().Banned(std::chrono::steady_clock::now());
  const int a_calls = s.net->holders_[kA].calls, c_calls = s.net->holders_[kC].calls;
  EXPECT_EQ(banned.count(kA), a_calls > 0 ? 1u : 0u);
  EXPECT_EQ(banned.count(kC), c_calls > 0 ? 1u : 0u);
  EXPECT_EQ(banned.count(kB), 0u);
  bool saw_error = false;
  for (const auto& call : r->calls) saw_error |= call.error.has_value();
  EXPECT_EQ(saw_error, a_calls + c_calls > 0);
  EXPECT_LE(r->rounds, 2);
  // Banned holders are not asked again while the ban lasts (one the first
  // forward did not ask may be asked now: it is down, so it fails and is
  // banned in turn, and the answer is still right).
  std::vector<float> again(kTok * kEmbd);
  ASSERT_TRUE(s.d->Forward(c.Input(), o, again.data()));
  EXPECT_TRUE(BitEqual(again, c.want));
  if (a_calls > 0) {
    EXPECT_EQ(s.net->holders_[kA].calls, a_calls);
  }
  if (c_calls > 0) {
    EXPECT_EQ(s.net->holders_[kC].calls, c_calls);
  }
}

TEST(ForwardTest, AMeasuredHolderThatHangsCostsTheAdaptiveTimeoutOnly) {
  Swarm s;  // every remote holder's experts have another holder
  Case c;
  ForwardOptions o = Exact();
  o.holder_timeout = std::chrono::seconds(20);
  o.min_timeout = std::chrono::milliseconds(200);
  std::vector<float> out(kTok * kEmbd);
  ASSERT_TRUE(s.d->Forward(c.Input(), o, out.data()));  // measures every holder used
  // The planner spreads load by measured times, so the next forward need not
  // call the holder the last one did: hang the busiest holder of the last
  // forward until a forward does call it (bounded; some remote holder is
  // called on every forward since self holds only experts 0 and 1).
  std::map<std::string, int> before;
  for (auto& [id, h] : s.net->holders_) before[id] = 0;
  bool hit = false;
  for (int attempt = 0; attempt < 8 && !hit; ++attempt) {
    std::string busiest;
    int most = 0;
    for (auto& [id, h] : s.net->holders_)
      if (h.calls - before[id] > most) most = h.calls - before[id], busiest = id;
    ASSERT_FALSE(busiest.empty());
    for (auto& [id, h] : s.net->holders_) before[id] = h.calls;
    FakeNetwork::Holder& hung = s.net->holders_[busiest];
    hung.mode = Mode::kHang;
    const auto t0 = std::chrono::steady_clock::now();
    auto r = s.d->Forward(c.Input(), o, out.data());
    const auto took = std::chrono::steady_clock::now() - t0;
    hung.mode = Mode::kOk;
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_TRUE(BitEqual(out, c.want));
    if (hung.calls == before[busiest]) {
      EXPECT_EQ(r->rounds, 1);  // the hung holder was not asked
      continue;
    }
    hit = true;
    EXPECT_EQ(r->rounds, 2);
    EXPECT_LT(took, std::chrono::seconds(5));  // not the 20 s holder_timeout
    EXPECT_GE(took, std::chrono::milliseconds(200));
  }
  EXPECT_TRUE(hit) << "no forward called the hung holder in 8 tries";
}

// Hedged calls: A and B both hold every remote expert; A, used and measured
// by a dozen forwards, freezes (no answer, no error: its transport notices
// nothing). The next forward sends A's batch to B once A's call runs past
// 1.5 x its recent p99 (at least 5 ms), takes B's answer and cancels A's
// call — one round, about a p99 plus B's time, not A's 10 s deadline.
TEST(ForwardTest, AFrozenHolderIsHedgedOnAReplicaAndItsCallCancelled) {
  auto net = std::make_shared<FakeNetwork>();
  MemoryRunner self_runner{kModel, nullptr};
  std::set<std::pair<int, int>> local;
  for (int e : {0, 1}) {
    self_runner.Add(0, e, &W().experts[e]);
    local.insert({0, e});
  }
  std::vector<swarm::Declaration> live = {Decl(kA, {2, 3, 4, 5, 6, 7}), Decl(kB, {2, 3, 4, 5, 6, 7})};
  net->Add(kA, {2, 3, 4, 5, 6, 7});
  net->Add(kB, {2, 3, 4, 5, 6, 7});
  Dispatcher::Sources src;
  src.self_node_id = kSelf;
  src.live = [&](const std::string&) -> Result<std::vector<swarm::Declaration>> { return live; };
  src.local = [&](const std::string&) { return local; };
  Dispatcher d(src, std::make_shared<LocalExecutor>(self_runner, ExecServeOptions{}), net);
  Case c;
  ForwardOptions o;
  o.holder_timeout = std::chrono::seconds(20);
  o.min_timeout = std::chrono::seconds(10);
  o.dtype = RowType::kF32;  // bit for bit the local block
  std::vector<float> out(kTok * kEmbd);
  // Warm up (no hedging) until the holder the planner would ask next has
  // enough samples for a p99 (bounded).
  std::vector<TokenRoute> routes;
  for (int t = 0; t < kTok; ++t) {
    TokenRoute tr{t, {}};
    for (const auto& e : c.routing[t].experts) tr.experts.push_back({0, e.expert, e.weight, true});
    routes.push_back(tr);
  }
  ForwardOptions warm = o;
  warm.hedge = false;
  std::string used;
  for (int i = 0; i < 40 && used.empty(); ++i) {
    auto plan = d.PlanWork(kModel, GroupByExpert(routes));
    ASSERT_TRUE(plan);
    for (const HolderBatch& b : plan->batches)
      if (b.transport != Transport::kLocal && d.stats().HedgeAfter(b.node_id, b.rows, o.hedge_factor, o.hedge_min))
        used = b.node_id;
    if (used.empty()) {
      ASSERT_TRUE(d.Forward(c.Input(), warm, out.data()));
    }
  }
  ASSERT_FALSE(used.empty()) << "no holder measured enough in 40 forwards";
  const std::string other = used == kA ? kB : kA;

  const HolderStats before = d.stats().Snapshot().at(used);
  const double est_before = before.rtt_ms + 4 / before.rows_per_s * 1000;  // a 4-row call
  net->holders_[used].mode = Mode::kFrozen;
  const int used_before = net->holders_[used].calls;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = d.Forward(c.Input(), o, out.data());
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_TRUE(BitEqual(out, c.want));
  EXPECT_EQ(net->holders_[used].calls, used_before + 1);
  EXPECT_EQ(r->rounds, 1);
  EXPECT_LT(took, std::chrono::seconds(3)) << "hedged, not the 10 s adaptive deadline";
  int won = 0, lost = 0;
  for (const HolderCall& hc : r->calls) {
    if (hc.hedge && !hc.lost) {
      ++won;
      EXPECT_EQ(hc.target.node_id, other);
      EXPECT_FALSE(hc.error.has_value());
    }
    if (hc.lost) {
      ++lost;
      EXPECT_EQ(hc.target.node_id, used);
      EXPECT_FALSE(hc.hedge);
    }
  }
  EXPECT_EQ(won, 1);
  EXPECT_EQ(lost, 1);
  // The loser's call was cancelled, and the holder is not banned for it.
  for (int i = 0; i < 100 && net->holders_[used].cancelled == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(net->holders_[used].cancelled, 1);
  EXPECT_EQ(d.stats().Banned(std::chrono::steady_clock::now()).count(used), 0u);
  EXPECT_GE(d.counters().hedges_won, 1u);
  // Its slow call counted as a sample: this node now expects more of it
  // (recorded by the loser's pool thread once its cancelled call returned,
  // which may be just after the cancel callback ran: waited for, bounded).
  auto estimate = [&] {
    const HolderStats after = d.stats().Snapshot().at(used);
    return after.rtt_ms + 4 / after.rows_per_s * 1000;
  };
  for (int i = 0; i < 200 && !(estimate() > est_before); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_GT(estimate(), est_before);
  net->holders_[used].mode = Mode::kOk;
}

TEST(ForwardTest, PerExpertErrorRetriesElsewhereWithoutBan) {
  Swarm s;
  Case c;
  // A declares 1..5 but its runner lost every expert: not_found per expert.
  s.net->holders_[kA].runner = std::make_unique<MemoryRunner>(kModel, nullptr);
  std::vector<float> out(kTok * kEmbd);
  auto r = s.d->Forward(c.Input(), Exact(), out.data());
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_TRUE(BitEqual(out, c.want));
  EXPECT_TRUE(s.d->stats().Banned(std::chrono::steady_clock::now()).empty());
  int failed = 0;
  for (const auto& call : r->calls) failed += call.failed_experts;
  EXPECT_EQ(failed > 0, s.net->holders_[kA].calls > 0);
}

TEST(ForwardTest, MalformedAndWholeErrorAnswersFailOver) {
  for (Mode m : {Mode::kCorrupt, Mode::kWholeError}) {
    Swarm s;
    Case c;
    s.local.clear();
    s.net->holders_[kB].mode = m;
    std::vector<float> out(kTok * kEmbd);
    auto r = s.d->Forward(c.Input(), Exact(), out.data());
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_TRUE(BitEqual(out, c.want));
    const bool banned = s.d->stats().Banned(std::chrono::steady_clock::now()).count(kB) > 0;
    EXPECT_EQ(banned, m == Mode::kCorrupt && s.net->holders_[kB].calls > 0);
  }
}

TEST(ForwardTest, MissingExpertFailsNamingIt) {
  Swarm s;
  Case c;
  const int victim = *c.Routed().rbegin();
  // Nobody holds `victim` any more (self included).
  s.local.erase({0, victim});
  for (auto& d : s.live) std::erase_if(d.experts, [&](const swarm::HeldExpert& h) { return h.expert == victim; });
  std::vector<float> out(kTok * kEmbd, 7.0f);
  auto r = s.d->Forward(c.Input(), Exact(), out.data());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(r.error().message().find("expert " + std::to_string(victim) + " (tokens"), std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find("renormalize"), std::string::npos);
}

TEST(ForwardTest, EveryReplicaFailingIsBoundedAndNamesTheLastError) {
  Swarm s;
  Case c;
  for (auto& [id, h] : s.net->holders_) h.mode = Mode::kDown;
  s.local.clear();
  ForwardOptions o = Exact();
  o.max_rounds = 3;
  std::vector<float> out(kTok * kEmbd);
  auto r = s.d->Forward(c.Input(), o, out.data());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(r.error().message().find("connection refused"), std::string::npos) << r.error().message();
  int calls = 0;
  for (auto& [id, h] : s.net->holders_) calls += h.calls;
  EXPECT_LE(calls, 3);  // each holder at most once: banned after its failure
}

TEST(ForwardTest, OnlyBannedHoldersLeftIsUnavailableNotNotFound) {
  Swarm s;
  Case c;
  s.local.clear();
  for (auto& [id, h] : s.net->holders_) h.mode = Mode::kDown;
  ForwardOptions o = Exact();
  o.max_rounds = 1;  // the failing round bans everybody
  std::vector<float> out(kTok * kEmbd);
  auto first = s.d->Forward(c.Input(), o, out.data());
  ASSERT_FALSE(first);
  auto again = s.d->Forward(c.Input(), o, out.data());  // nobody usable: all banned
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(again.error().message().find("banned"), std::string::npos) << again.error().message();
}

TEST(ForwardTest, RenormalizeDropsMissingExpertsAndRescales) {
  Swarm s;
  Case c;
  // Token 0 loses one of its two experts; every expert of token 1 goes.
  const int lost = c.routing[0].experts[1].expert;
  std::set<int> gone = {lost};
  for (const auto& e : c.routing[1].experts) gone.insert(e.expert);
  for (int v : gone) {
    s.local.erase({0, v});
    for (auto& d : s.live) std::erase_if(d.experts, [&](const swarm::HeldExpert& h) { return h.expert == v; });
  }
  ForwardOptions o = Exact();
  o.on_missing = OnMissing::kRenormalize;
  std::vector<float> out(kTok * kEmbd);
  auto r = s.d->Forward(c.Input(), o, out.data());
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->dropped.size(), gone.size());
  EXPECT_NE(std::find(r->tokens_without_experts.begin(), r->tokens_without_experts.end(), 1),
            r->tokens_without_experts.end());
  // Expected, in double: per token, sum over surviving experts of
  // w * (sum all w / sum surviving w) * FFN(x), + shared.
  std::vector<float> y(kEmbd);
  for (int t = 0; t < kTok; ++t) {
    double all = 0, alive = 0;
    for (const auto& e : c.routing[t].experts) {
      all += e.weight;
      if (!gone.count(e.expert)) alive += e.weight;
    }
    std::vector<double> want(kEmbd);
    for (int i = 0; i < kEmbd; ++i) want[i] = c.shared[t * kEmbd + i];
    for (const auto& e : c.routing[t].experts) {
      if (gone.count(e.expert) || alive == 0) continue;
      ASSERT_TRUE(runtime::ExpertFfn(W().experts[e.expert], c.x.data() + t * kEmbd, 1, y.data()));
      for (int i = 0; i < kEmbd; ++i) want[i] += e.weight * (all / alive) * y[i];
    }
    double num = 0, den = 0;
    for (int i = 0; i < kEmbd; ++i) {
      num += (out[t * kEmbd + i] - want[i]) * (out[t * kEmbd + i] - want[i]);
      den += want[i] * want[i];
    }
    EXPECT_LT(std::sqrt(num / den), 1e-5) << "token " << t;
  }
  // A token with no expert left gets the shared expert alone.
  for (int i = 0; i < kEmbd; ++i) EXPECT_EQ(out[kEmbd + i], c.shared[kEmbd + i]);
  const auto j = ReportToJson(*r);
  EXPECT_EQ(j["dropped"].size(), gone.size());
  EXPECT_NE(j["dropped"][0]["reason"].get<std::string>().find("no live holder"), std::string::npos);
}

TEST(ForwardTest, InputChecks) {
  Swarm s;
  Case c;
  std::vector<float> out(kTok * kEmbd);
  std::vector<float> bad = c.x;
  bad[3 * kEmbd + 17] = std::nanf("");
  ForwardInput in = c.Input();
  in.x = bad.data();
  auto r = s.d->Forward(in, Exact(), out.data());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("token 3 column 17 is NaN"), std::string::npos) << r.error().message();
  in = c.Input();
  in.routing.pop_back();
  EXPECT_FALSE(s.d->Forward(in, Exact(), out.data()));
  in = c.Input();
  in.n_tok = 0;
  in.routing.clear();
  EXPECT_TRUE(s.d->Forward(in, Exact(), out.data()));
  EXPECT_EQ(*ParseOnMissing("renormalize"), OnMissing::kRenormalize);
  EXPECT_FALSE(ParseOnMissing("drop"));
}

TEST(HolderStatsTest, CallerMeasuredFitQueueAndBans) {
  HolderStatsTable t(0.5);
  t.Begin("a", 10);
  EXPECT_EQ(t.Snapshot()["a"].rows_queued, 10);
  EXPECT_FALSE(t.Snapshot()["a"].measured);
  // One call size so far: all of the measured time is per row (1.2 ms).
  t.End("a", 10, true, 12.0, 10.0);
  auto s = t.Snapshot()["a"];
  EXPECT_TRUE(s.measured);
  EXPECT_DOUBLE_EQ(s.rtt_ms, 0.0);
  EXPECT_NEAR(s.rows_per_s, 1000.0 / 1.2, 1e-9);
  EXPECT_EQ(s.rows_queued, 0);
  // A second size: the line through (10 rows, 12 ms) and (30, 22) with equal
  // weights is 7 ms + 0.5 ms per row. The holder's claimed compute is ignored.
  t.Begin("a", 30);
  t.End("a", 30, true, 22.0, 0.001);
  s = t.Snapshot()["a"];
  EXPECT_NEAR(s.rtt_ms, 7.0, 1e-9);
  EXPECT_NEAR(s.rows_per_s, 2000.0, 1e-6);
  t.End("a", 0, false, 100, 0);  // failures leave the fit alone
  EXPECT_NEAR(t.Snapshot()["a"].rtt_ms, 7.0, 1e-9);
  const auto now = std::chrono::steady_clock::now();
  // Ten seconds without a sample: unmeasured again; the next sample restarts the fit.
  EXPECT_FALSE(t.Snapshot(now + std::chrono::seconds(11))["a"].measured);
  t.End("a", 1, true, 30, 10, now + std::chrono::seconds(11));
  EXPECT_NEAR(t.Snapshot(now + std::chrono::seconds(11))["a"].rows_per_s, 1000.0 / 30, 1e-9);
  t.Ban("a", now + std::chrono::seconds(5));
  t.Ban("a", now + std::chrono::seconds(1));  // never shortens
  EXPECT_EQ(t.Banned(now + std::chrono::seconds(3)).count("a"), 1u);
  EXPECT_TRUE(t.Banned(now + std::chrono::seconds(6)).empty());
  EXPECT_EQ(t.ToJson(now)[0]["errors"], 1);
}

// A holder that claims a near-zero compute time for every call (so a model
// built on its claims would think it infinitely fast) but takes 5 ms per row
// as this node measures it gets no work away from an honest holder that
// takes 1 ms per row and says so.
TEST(HolderStatsTest, AHolderThatLiesAboutItsSpeedAttractsNoWork) {
  HolderStatsTable t;
  for (int i = 0; i < 6; ++i) {
    const uint64_t rows = 10 + 10 * (i % 3);
    t.End("liar", rows, true, 5.0 * rows, 0.001);
    t.End("honest", rows, true, 2.0 + 1.0 * rows, 1.0 * rows);
  }
  const auto st = t.Snapshot();
  const auto time_for = [&](const std::string& id, double rows) {
    return st.at(id).rtt_ms + rows / st.at(id).rows_per_s * 1000.0;
  };
  EXPECT_NEAR(time_for("liar", 1000), 5000, 1);
  EXPECT_NEAR(time_for("honest", 1000), 1002, 1);

  PlanInput in;
  in.self_node_id = "self";
  for (const char* id : {"liar", "honest"}) {
    swarm::Declaration d;
    d.node_id = id;
    d.model = "m";
    d.endpoints.push_back({"http", std::string("http://127.0.0.1:") + (id[0] == 'l' ? "1001" : "1002")});
    for (int e = 0; e < 4; ++e) d.experts.push_back({0, e, "q4_k", "q4_k", "q4_k", "", swarm::Tier::kWarm, 0});
    in.live.push_back(d);
  }
  in.stats = st;
  std::vector<PlanItem> work;
  for (int e = 0; e < 4; ++e) {
    PlanItem it{0, e, {}};
    for (int k = 0; k < 64; ++k) it.tokens.push_back(k);
    work.push_back(it);
  }
  const Plan p = PlanDispatch(work, in);
  uint64_t liar_rows = 0, honest_rows = 0;
  for (const HolderBatch& b : p.batches) (b.node_id == "liar" ? liar_rows : honest_rows) += b.rows;
  EXPECT_EQ(honest_rows, 4u * 64);
  EXPECT_EQ(liar_rows, 0u);
}

}  // namespace
}  // namespace tenzro::dispatch
