// Faults of the holders a distributed forward calls, through real node
// processes on loopback (docs/reliability.md, "Fault injection"):
//   * a holder SIGKILLed while forwards are in flight;
//   * a holder frozen (SIGSTOP) for longer than its deadline, then thawed;
//   * a slow holder (SIGSTOP for a fraction of its deadline);
//   * a holder whose exec answers are cut short (a test-side server that
//     declares itself in the DHT under its own key and relays a genuine
//     holder's answers truncated to half).
// Swarm: N0 (DHT bootstrap, both gates, no experts: every expert is remote),
// N1 and N2 (all 8 experts of layer 0 each, replication 2), all loaded by
// blob URI from a reference node R that holds everything and computed the
// single-node forward. Every case asserts: each forward's output is
// bit-identical to R's; the failed holder call names its error; N0 keeps
// answering /v1/health and a later forward succeeds; blob stores verify.
#include <signal.h>

#include <atomic>
#include <map>
#include <mutex>

#include "fault/fault_util.h"
#include "identity/identity.h"
#include "swarm/agent.h"
#include "swarm/declaration.h"
#include "swarm/dht_transport.h"
#include "swarm/transport.h"
#include "swarm/value_id.h"

namespace tenzro::fault {
namespace {

// One swarm for the whole suite (setting it up and stopping it cleanly costs
// more than the cases): the cases run in file order and leave it as they
// found it (every holder thawed, the bad holder's declaration withdrawn),
// except the last, which kills N1.
class HolderFaultTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new TempDir();
    ref_ = new Reference();
    n_ = new std::vector<RunningNode>();
    ids_ = new std::vector<std::string>();
    const auto t0 = Clock::now();
    StartSwarm();
    ready_ = !::testing::Test::HasFailure();
    std::printf("[setup] swarm of R + 3 nodes ready in %.2f s\n", SecondsSince(t0));
  }

  static void StartSwarm() {
    StartReference(*ref_, tmp_->Join("r"));
    ASSERT_FALSE(HasFatalFailure());
    auto& n = *n_;
    n.push_back(StartNode(tmp_->Join("n0"), Opts(SwarmFlags())));
    ASSERT_TRUE(n[0].running());
    for (int i = 1; i < 3; ++i) {
      n.push_back(StartNode(tmp_->Join("n" + std::to_string(i)), Opts(SwarmFlags(30, {"--bootstrap", DhtAddr(n[0])}))));
      ASSERT_TRUE(n[i].running());
    }
    for (int layer = 0; layer < 2; ++layer) {
      Call g = LoadGate(n[0], layer, ref_->GateUri(layer), ref_->node.http_url());
      ASSERT_TRUE(g.ok()) << g.message();
    }
    for (int i = 1; i < 3; ++i)
      for (int e = 0; e < kExperts; ++e) {
        Call c = LoadExpert(n[i], 0, e, ref_->ExpertUri(0, e), ref_->node.http_url());
        ASSERT_TRUE(c.ok()) << c.message();
      }
    for (int i = 1; i < 3; ++i) ids_->push_back(n[i].node_json["node_id"].get<std::string>());
    ASSERT_TRUE(WaitFor([&] { return Converged(n[0], {0}, 2); }, seconds(60)));
  }

  static void TearDownTestSuite() {
    // SIGTERM to all at once (a clean stop announces leaving and drains),
    // then wait for each.
    std::vector<RunningNode*> live;
    for (auto& n : *n_) live.push_back(&n);
    live.push_back(&ref_->node);
    std::erase_if(live, [](RunningNode* n) { return !n->running(); });
    for (RunningNode* n : live) {
      n->proc->Signal(SIGCONT);
      n->proc->Signal(SIGTERM);
    }
    const auto t0 = Clock::now();
    for (RunningNode* n : live) {
      EXPECT_EQ(n->proc->Wait(seconds(30)), 0) << n->proc->Log();
      std::printf("[teardown] %s stopped after %.2f s\n", n->dir.c_str(), SecondsSince(t0));
      if (SecondsSince(t0) > 10) {  // a slow clean stop: show why
        const std::string log = n->proc->Log();
        std::printf("%s\n", log.substr(log.size() > 3000 ? log.size() - 3000 : 0).c_str());
      }
    }
    // Every store verifies and holds no temp/partial file.
    for (const char* d : {"r", "n0", "n1", "n2"}) EXPECT_EQ(StoreProblems(tmp_->Join(d) + "/blobs"), "") << d;
    delete ids_;
    delete n_;
    delete ref_;
    delete tmp_;
  }

  void SetUp() override {
    ASSERT_TRUE(ready_) << "swarm setup failed";
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(n()[i].running()) << "node " << i << " is gone";
  }

  static std::vector<RunningNode>& n() { return *n_; }
  static const std::vector<std::string>& ids() { return *ids_; }
  static const Reference& ref() { return *ref_; }

  static NodeOptions Opts(std::vector<std::string> run_args) {
    NodeOptions o;
    o.run_args = std::move(run_args);
    return o;
  }

  // One forward of layer 0 on N0: asserts 200 and the reference output.
  Call CheckedForward(int i, const json& extra = json::object()) {
    Call f = Forward(n()[0], 0, true, seconds(60), extra);
    EXPECT_TRUE(f.ok()) << "forward " << i << ": " << f.message();
    EXPECT_TRUE(OutputBytes(f.body) == ref().local[0]) << "forward " << i << " differs from the single-node forward";
    return f;
  }

  // Holder calls of a forward answer made to node `id` (errors included);
  // with `spot`, the spot-check re-runs (nodes check 5% of remote results on
  // another replica) instead of the forward's own calls.
  static std::vector<json> CallsTo(const Call& f, const std::string& id, bool spot = false) {
    std::vector<json> out;
    if (!f.body.is_object()) return out;
    if (spot && !(f.body.contains("spot_checks") && f.body["spot_checks"].contains("calls"))) return out;
    if (!spot && !f.body.contains("holders")) return out;
    const json& calls = spot ? f.body["spot_checks"]["calls"] : f.body["holders"];
    if (calls.is_array())
      for (const json& h : calls)
        if (h.value("node_id", "") == id) out.push_back(h);
    return out;
  }

  // Runs 6 forwards (measuring the holders: their deadline becomes
  // max(1 s, 20x expected)) and returns the holder (1 or 2) that served the
  // most calls: the planner's favourite, the one a fault will hit.
  int Favourite() {
    std::map<std::string, int> served;
    for (int i = 0; i < 6; ++i) {
      Call f = CheckedForward(i);
      for (const json& h : f.body["holders"]) served[h.value("node_id", "")]++;
    }
    return served[ids()[0]] >= served[ids()[1]] ? 1 : 2;
  }

  // N0 still serves: health, and a forward equal to the reference.
  void ExpectStillServing() {
    EXPECT_TRUE(Healthy(n()[0]));
    CheckedForward(-1);
  }

  static inline TempDir* tmp_ = nullptr;
  static inline Reference* ref_ = nullptr;
  static inline std::vector<RunningNode>* n_ = nullptr;
  static inline std::vector<std::string>* ids_ = nullptr;  // N1, N2
  static inline bool ready_ = false;
};

TEST_F(HolderFaultTest, HolderFrozenThenThawed) {
  const int v = Favourite();
  ASSERT_FALSE(HasFailure());
  const std::string victim_id = ids()[v - 1];
  n()[v].proc->Signal(SIGSTOP);
  // Forwards until one calls the frozen holder, at most 60 or 40 s.
  int timed_out = 0;
  double worst = 0;
  std::string error;
  const auto start = Clock::now();
  for (int i = 0; i < 60 && timed_out == 0 && SecondsSince(start) < 40 && !HasFailure(); ++i) {
    const auto t0 = Clock::now();
    Call f = CheckedForward(i);
    worst = std::max(worst, SecondsSince(t0));
    for (bool spot : {false, true})  // a spot-check re-run may be the first to meet it
      for (const json& h : CallsTo(f, victim_id, spot))
        if (h.contains("error")) {
          ++timed_out;
          error = h["error"].get<std::string>();
        }
  }
  std::printf("[fault] frozen holder: %d timed-out calls, slowest forward %.2f s, error: %s\n", timed_out, worst,
              error.c_str());
  EXPECT_GE(timed_out, 1);
  EXPECT_FALSE(error.empty());
  EXPECT_LE(worst, 12.0);
  n()[v].proc->Signal(SIGCONT);
  // Thawed: it answers again and, once its ban (5 s) is over, serves forwards.
  EXPECT_TRUE(WaitFor([&] { return Healthy(n()[v]); }, seconds(10)));
  const auto thawed = Clock::now();
  bool served = WaitFor([&] {
    Call f = CheckedForward(100);
    for (const json& h : CallsTo(f, victim_id))
      if (!h.contains("error")) return true;
    return false;
  }, seconds(30));
  EXPECT_TRUE(served) << "the thawed holder is never called again";
  std::printf("[fault] thawed holder served again %.2f s after SIGCONT\n", SecondsSince(thawed));
  ExpectStillServing();
}

TEST_F(HolderFaultTest, SlowHolder) {
  // The victim is the holder the previous forward called (the planner sends
  // a round's few experts to one or two holders and its choice follows the
  // measured speeds, so it is re-read before each attempt).
  auto victim_of = [](const Call& f) {
    std::map<std::string, int> rows;
    for (const json& h : f.body["holders"]) rows[h.value("node_id", "")] += h.value("rows", 0);
    return rows[ids()[0]] >= rows[ids()[1]] ? 1 : 2;
  };
  int v = 1;
  // The victim stops while a forward runs, for 300 ms after the forward's
  // calls leave (under its >= 1 s deadline): the forward waits for it, or
  // (once the holder is measured well enough for a p99) hedges its batch on
  // a replica and cancels its call; nothing fails, nothing is re-planned. On a slow (sanitizer, -O0) build the gate
  // alone takes a few hundred ms, so the stop starts with the forward and lasts
  // the lead (request, gate, plan) measured on the previous forward + 300 ms.
  constexpr double kStallMs = 300;
  // When the calls of a forward left, in ms after the client sent it: at most
  // s - (dispatch_ms - sent_ms), since the dispatch ended before the answer came.
  auto left_by = [](const Call& f, double s, const json& h) {
    return s * 1000 - (f.body["stages"]["dispatch_ms"].get<double>() - h["sent_ms"].get<double>());
  };
  double lead_ms = 0;
  {
    const auto t0 = Clock::now();
    Call f = CheckedForward(0);
    ASSERT_FALSE(HasFailure());
    ASSERT_FALSE(f.body["holders"].empty()) << f.body.dump();
    lead_ms = std::max(0.0, left_by(f, SecondsSince(t0), f.body["holders"][0]));
    v = victim_of(f);
  }
  bool called = false;
  for (int attempt = 0; attempt < 8 && !called && !HasFailure(); ++attempt) {
    const std::string victim_id = ids()[v - 1];
    const double stop_ms = std::min(lead_ms, 500.0) + kStallMs;  // a stall of <= 800 ms, under 1 s
    n()[v].proc->Signal(SIGSTOP);
    Call f;
    const auto t0 = Clock::now();
    std::thread t([&] { f = Forward(n()[0], 0); });
    std::this_thread::sleep_for(milliseconds(static_cast<int>(stop_ms)));  // the injected delay itself
    n()[v].proc->Signal(SIGCONT);
    t.join();
    const double s = SecondsSince(t0);
    ASSERT_TRUE(f.ok()) << f.message();
    EXPECT_TRUE(OutputBytes(f.body) == ref().local[0]);
    for (const json& h : f.body["holders"]) {
      if (!h.value("lost", false)) {  // a hedge's loser is cancelled
        EXPECT_FALSE(h.contains("error")) << h.dump();
      }
    }
    EXPECT_EQ(f.body["stages"]["rounds"], 1) << f.body.dump();
    auto to_n1 = CallsTo(f, victim_id);
    if (to_n1.empty()) {
      v = victim_of(f);
      continue;
    }
    if (to_n1[0].value("lost", false)) {
      // Hedged: a replica answered the stopped holder's batch before the
      // stop ended, and the stopped holder's call was cancelled.
      std::printf("[fault] slow holder: stopped %.0f ms, its batch hedged, forward took %.2f s\n", stop_ms, s);
      EXPECT_LT(s * 1000, stop_ms + 200) << f.body.dump();
      const std::string m = MetricsText(n()[0]);
      EXPECT_GE(MetricSample(m, "tenzro_hedged_calls_total{result=\"won\"}"), 1) << m;
      EXPECT_GE(MetricSample(m, "tenzro_hedged_calls_total{result=\"sent\"}"),
                MetricSample(m, "tenzro_hedged_calls_total{result=\"won\"}"));
      called = true;
      continue;
    }
    // The holder could not answer before SIGCONT, stop_ms after t0.
    const double rtt = to_n1[0]["rtt_ms"].get<double>();
    const double left = left_by(f, s, to_n1[0]);
    const double floor_ms = stop_ms - left;
    std::printf("[fault] slow holder: stopped %.0f ms, forward took %.2f s, the slow call %.1f ms (left by %.0f ms "
                "after the stop began), no re-plan\n",
                stop_ms, s, rtt, left);
    lead_ms = std::max(0.0, left);
    if (floor_ms < 100) continue;  // it left (nearly) after the stop: try again with the new lead
    called = true;
    EXPECT_GE(rtt, floor_ms);
  }
  EXPECT_TRUE(called) << "the planner never gave the slow holder work while it was stopped";
  ExpectStillServing();
}

TEST_F(HolderFaultTest, TruncatedExecAnswer) {
  // A bad holder: its own identity, a signed declaration naming its HTTP
  // endpoint and every expert of layer 0; it relays N1's exec answers cut to
  // half their length.
  std::atomic<int> requests{0};
  auto n1_http = n()[1].http;
  TestServer evil;
  evil.router().Add("POST", "/v1/moe/exec", [&](const net::Request& req) {
    ++requests;
    net::HttpClient up(n1_http);
    auto ct = req.Header("content-type");
    auto r = up.Send("POST", "/v1/moe/exec", req.body, ct ? std::string(*ct) : std::string());
    std::string body = r ? r->body.substr(0, r->body.size() / 2) : std::string();
    net::Response resp = net::Response::Text(200, body);
    if (r) {
      if (auto rct = r->Header("content-type")) resp.content_type = std::string(*rct);
    }
    return resp;
  });
  ASSERT_TRUE(evil.Start());

  swarm::DhtOptions dopt;
  dopt.bootstrap = {DhtAddr(n()[0])};
  auto dht = swarm::DhtTransport::Start(dopt);
  ASSERT_TRUE(dht) << dht.error().ToString();
  identity::Identity bad = identity::Identity::Generate();
  swarm::Declaration d;
  d.node_id = bad.node_id();
  d.model = kModel;
  d.endpoints = {{"http", evil.url()}};
  for (int e = 0; e < kExperts; ++e) d.experts.push_back({0, e, "q4_k", "q4_k", "q6_k", "", swarm::Tier::kWarm, 0});
  d.seq = 1;
  d.timestamp_ms = swarm::UnixMillis();
  d.ttl_s = 120;
  auto rec = swarm::EncodeRecord(d, bad);
  ASSERT_TRUE(rec) << rec.error().ToString();
  // At its own value id: readers drop a record found anywhere else (value_id.h).
  const uint64_t bad_id = swarm::RecordValueId(bad.node_id(), "decl", kModel, 0);
  ASSERT_TRUE((*dht)->Put(swarm::DeclarationKey(kModel), bad_id, *rec));
  ASSERT_TRUE(WaitFor([&] { return Converged(n()[0], {0}, 3); }, seconds(30)));

  // Without hedging: a hedge to another replica may win before the cut answer
  // arrives, and then the bad holder's call is a cancelled loser, not a failure.
  int failed = 0;
  std::string error;
  for (int i = 0; i < 12 && !HasFailure(); ++i) {
    Call f = CheckedForward(i, json{{"hedge", false}});
    // The forward's own calls, and its spot checks' re-runs (which may be the
    // only call the bad holder gets: the planner sends a round to its
    // fastest holders, and a spot check to any other replica).
    for (bool spot : {false, true})
      for (const json& h : CallsTo(f, bad.node_id(), spot))
        if (h.contains("error")) {
          ++failed;
          error = h["error"].get<std::string>();
        }
  }
  std::printf("[fault] truncated exec answers: %d requests to the bad holder, %d failed calls, error: %s\n",
              requests.load(), failed, error.c_str());
  EXPECT_GE(requests.load(), 1);
  EXPECT_GE(failed, 1);
  EXPECT_FALSE(error.empty());
  ExpectStillServing();
  // Withdraw the bad holder (a "leaving" declaration), as a clean stop would.
  d.state = swarm::HolderState::kLeaving;
  d.seq = 2;
  d.timestamp_ms = swarm::UnixMillis();
  auto leave = swarm::EncodeRecord(d, bad);
  ASSERT_TRUE(leave);
  ASSERT_TRUE((*dht)->Put(swarm::DeclarationKey(kModel), bad_id, *leave));
  EXPECT_TRUE(WaitFor([&] { return !Converged(n()[0], {0}, 3); }, seconds(10)));
  evil.Stop();
}

TEST_F(HolderFaultTest, HolderKilledMidBatch) {
  // Forwards back to back from one thread; after 5 completed, another thread
  // SIGKILLs the holder that served the most of them (the planner's
  // favourite), while the next forwards run. Runs last: N1 or N2 stays dead.
  std::atomic<int> done{0}, victim{-1};
  std::atomic<bool> stop{false};
  std::thread killer([&] {
    if (WaitFor([&] { return victim.load() >= 0 || stop.load(); }, seconds(60)) && !stop.load())
      n()[victim.load()].proc->Signal(SIGKILL);
  });
  std::vector<Call> calls;
  std::vector<double> latency;
  std::map<std::string, int> served;
  for (int i = 0; i < 30 && !HasFailure(); ++i) {
    const auto t0 = Clock::now();
    calls.push_back(CheckedForward(i));
    latency.push_back(SecondsSince(t0));
    if (i < 5)
      for (const json& h : calls.back().body["holders"]) served[h.value("node_id", "")]++;
    if (i == 4) victim = served[ids()[0]] >= served[ids()[1]] ? 1 : 2;
    done = i + 1;
  }
  stop = true;
  killer.join();
  ASSERT_FALSE(HasFailure());
  ASSERT_GE(victim.load(), 1);
  const std::string victim_id = ids()[victim.load() - 1];
  EXPECT_EQ(n()[victim.load()].proc->Wait(seconds(5)), -1);
  // Some forward met the dead holder: its call failed with an error naming
  // the transport failure, the forward re-planned and still answered. The
  // first to meet it may be a spot check re-running a result there (then the
  // holder is banned and no later call goes to it); a spot check's failed
  // re-run costs no round.
  int failed = 0, failed_spot = 0;
  double worst = 0;
  std::string first_error;
  for (size_t i = 5; i < calls.size(); ++i) {
    worst = std::max(worst, latency[i]);
    for (const json& h : CallsTo(calls[i], victim_id))
      if (h.contains("error") && !h.value("lost", false)) {  // a hedge's cancelled loser is no failure
        ++failed;
        if (first_error.empty()) first_error = h["error"].get<std::string>();
        EXPECT_GE(calls[i].body["stages"]["rounds"].get<int>(), 2) << calls[i].body.dump();
      }
    for (const json& h : CallsTo(calls[i], victim_id, /*spot=*/true))
      if (h.contains("error")) {
        ++failed_spot;
        if (first_error.empty()) first_error = h["error"].get<std::string>();
      }
  }
  std::printf("[fault] SIGKILLed holder: %d failed calls (+%d spot-check re-runs), slowest forward after the kill "
              "%.2f s, error: %s\n",
              failed, failed_spot, worst, first_error.c_str());
  failed += failed_spot;
  EXPECT_GE(failed, 1);
  EXPECT_FALSE(first_error.empty());
  EXPECT_LE(worst, 12.0) << "failover must cost at most one holder deadline";
  // N0 banned it (its stats count the error).
  Call p = AdminCall(n()[0], "POST", "/v1/moe/plan-dispatch", json{{"model", kModel}, {"routings", json::array()}});
  bool banned = false;
  for (const json& h : p.body["holder_stats"]) banned |= h["node_id"] == victim_id && h["errors"].get<int>() > 0;
  EXPECT_TRUE(banned) << p.body.dump();
  ExpectStillServing();
}

}  // namespace
}  // namespace tenzro::fault
