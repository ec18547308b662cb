// The public dashboard costs work bounded by the node, never by the request
// or by what strangers declare (docs/security.md), through a real node
// process on loopback and a stranger's own OpenDHT runner:
//   * a validly signed declaration naming layer and expert 2^20, for an
//     unknown model and for a known (built-in) one: the dashboard answers
//     both in well under a second with a small body, the unknown model as
//     "unknown model" without a shard map, the known one with its catalog
//     shape (2 x 8) and the absurd entry ignored; the admin shard map of the
//     unknown model is a 404 naming it, made without a DHT read; the node's
//     peak RSS stays within a generous bound;
//   * thousands of dashboard requests for distinct model ids from four
//     threads, beside exec calls: exec latency stays near its baseline (the
//     dashboard never runs on the worker pool and never reads the DHT), no
//     DHT read is made for those ids and the agent's tables do not grow.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>

#include "core/file.h"
#include "dispatch/exec_frame.h"
#include "format/safetensors_reader.h"
#include "identity/identity.h"
#include "swarm/agent.h"
#include "swarm/declaration.h"
#include "swarm/dht_transport.h"
#include "swarm/value_id.h"
#include "testutil/node_process.h"
#include "testutil/sanitizer.h"

namespace tenzro::node {
namespace {

// Under AddressSanitizer (testutil/sanitizer.h) the flood sends fewer ids
// before its deadline, and RSS carries ASan's quarantine and caches.
constexpr int kMinIdsSent = testing::kAsan ? 2000 : 10000;
constexpr uint64_t kSanitizerSlackBytes = testing::kAsan ? (512ull << 20) : 0;

using nlohmann::json;
using tenzro::testing::NodeOptions;
using tenzro::testing::RunningNode;
using tenzro::testing::StartNode;
using tenzro::testing::TempDir;
using tenzro::testing::WaitFor;
using Clock = std::chrono::steady_clock;

constexpr const char* kKnown = "tiny-qwen35moe";  // built in: 2 layers x 8 experts
constexpr const char* kUnknown = "no-such-model-x";
constexpr int kHuge = 1 << 20;
constexpr int64_t kEmbd = 256, kFf = 512;  // the tiny model's expert shape

using tenzro::testing::ProcStatusBytes;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

json AdminGet(const RunningNode& n, const std::string& target, int* status = nullptr) {
  auto r = n.Admin().Send("GET", target);
  if (status) *status = r ? r->status : -1;
  return r ? json::parse(r->body, nullptr, false) : json();
}

uint64_t RequestReads(const RunningNode& n) {
  return AdminGet(n, "/v1/swarm/info")["declaration_reads"].value("request", uint64_t{0});
}

// A signed declaration by `who` of one expert at (kHuge, kHuge) of `model`.
std::string HugeDeclaration(const identity::Identity& who, const std::string& model) {
  swarm::Declaration d;
  d.node_id = who.node_id();
  d.model = model;
  d.seq = 1;
  d.timestamp_ms = swarm::UnixMillis();
  d.ttl_s = 300;
  d.endpoints = {{"http", "http://127.0.0.1:9"}};
  d.experts.push_back({kHuge, kHuge, "q4_K", "q4_K", "q6_K", std::string(64, 'a'), swarm::Tier::kWarm, 0});
  d.offers.push_back({kHuge, kHuge, std::string(64, 'b')});
  auto rec = swarm::EncodeRecord(d, who);
  EXPECT_TRUE(rec) << rec.error().ToString();
  return rec ? *rec : std::string();
}

TEST(DashboardBoundsProcessTest, AHugeDeclarationCostsTheDashboardLittle) {
  TempDir tmp;
  NodeOptions o;
  o.run_args = {"--swarm-refresh-ms", "500", "--dht-port", "0"};
  RunningNode a = StartNode(tmp.Join("a"), o);
  ASSERT_TRUE(a.running());

  // The stranger joins the DHT and publishes both declarations.
  swarm::DhtOptions dopt;
  dopt.bootstrap = {"127.0.0.1:" + std::to_string(a.node_json["dht_port"].get<int>())};
  auto stranger = swarm::DhtTransport::Start(dopt);
  ASSERT_TRUE(stranger) << stranger.error().ToString();
  identity::Identity mallory = identity::Identity::Generate();
  for (const std::string model : {kUnknown, kKnown}) {
    const std::string rec = HugeDeclaration(mallory, model);
    ASSERT_TRUE((*stranger)->Put(swarm::DeclarationKey(model), swarm::RecordValueId(mallory.node_id(), "decl", model, 0),
                                 rec));
  }
  // The operator looks at the known model (the agent watches it from now on)
  // until its map shows the stranger, with the absurd entry ignored.
  json map;
  ASSERT_TRUE(WaitFor([&] {
    map = AdminGet(a, std::string("/v1/swarm/shard-map?model=") + kKnown);
    return map.is_object() && map.value("ignored_entries", 0) >= 1;
  }, std::chrono::seconds(20))) << map.dump();
  EXPECT_EQ(map["shape_source"], "builtin");
  EXPECT_EQ(map["layers"].size(), 2u);
  // The unknown model has no shard map: 404 naming it, no DHT read.
  const uint64_t reads0 = RequestReads(a);
  int status = 0;
  json unknown = AdminGet(a, std::string("/v1/swarm/shard-map?model=") + kUnknown, &status);
  EXPECT_EQ(status, 404) << unknown.dump();
  EXPECT_NE(unknown.dump().find(kUnknown), std::string::npos) << unknown.dump();
  EXPECT_EQ(RequestReads(a), reads0);

  const pid_t pid = a.proc->pid();
  const uint64_t hwm_before = ProcStatusBytes(pid, "VmHWM");
  ASSERT_GT(hwm_before, 0u);
  net::HttpClient pub(a.http);
  double slowest_ms = 0;
  size_t largest = 0;
  auto state = [&](const std::string& model) {
    const auto t0 = Clock::now();
    auto r = pub.Send("GET", "/v1/dashboard/state?model=" + model);
    slowest_ms = std::max(slowest_ms, Ms(Clock::now() - t0));
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : r.error().ToString());
    if (!r) return json();
    largest = std::max(largest, r->body.size());
    return json::parse(r->body, nullptr, false);
  };
  for (int i = 0; i < 20; ++i) {
    json s = state(kUnknown);
    EXPECT_TRUE(s["shard_map"].is_null()) << s.dump().substr(0, 500);
    EXPECT_NE(s.value("shard_map_error", "").find("unknown model"), std::string::npos) << s.dump().substr(0, 500);
  }
  json known;
  ASSERT_TRUE(WaitFor([&] {
    known = state(kKnown);
    return known["shard_map"].is_object() && known["shard_map"].value("ignored_entries", 0) >= 1;
  }, std::chrono::seconds(10))) << known.dump().substr(0, 1000);
  EXPECT_EQ(known["shard_map"]["layers"].size(), 2u);
  EXPECT_EQ(known["shard_map"]["total_experts"], 16) << known["shard_map"].dump();
  for (int i = 0; i < 20; ++i) state(kKnown);
  EXPECT_EQ(RequestReads(a), reads0);  // the dashboard read nothing from the DHT
  const uint64_t hwm_after = ProcStatusBytes(pid, "VmHWM");
  std::printf("[dashboard] 2^20 declaration: slowest state %.1f ms, largest %zu bytes, peak RSS %+.1f MiB\n",
              slowest_ms, largest, (static_cast<double>(hwm_after) - hwm_before) / (1 << 20));
  // Before shapes came from the catalog only: 4.8 s, 133 MB, +1.5 GB.
  EXPECT_LT(slowest_ms, 1000);
  EXPECT_LT(largest, 64u << 10);
  EXPECT_LT(hwm_after, hwm_before + (64ull << 20));
  EXPECT_EQ(a.Stop(), 0);
}

// One expert (gate/up/down, f32) as a safetensors file.
std::string WriteExpert(const TempDir& tmp, const std::string& name) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 0.05f);
  std::vector<float> g(kFf * kEmbd), u(kFf * kEmbd), d(kEmbd * kFf);
  for (auto* v : {&g, &u, &d})
    for (float& x : *v) x = nd(rng);
  auto span = [](const std::vector<float>& v) {
    return ByteSpan(reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float));
  };
  format::SafetensorsWriter w;
  EXPECT_TRUE(w.AddTensor("mlp.experts.0.gate_proj.weight", format::StDtype::kF32, {kFf, kEmbd}, span(g)));
  EXPECT_TRUE(w.AddTensor("mlp.experts.0.up_proj.weight", format::StDtype::kF32, {kFf, kEmbd}, span(u)));
  EXPECT_TRUE(w.AddTensor("mlp.experts.0.down_proj.weight", format::StDtype::kF32, {kEmbd, kFf}, span(d)));
  const std::string path = tmp.Join(name);
  EXPECT_TRUE(w.Write(path));
  return path;
}

std::string ExecFrame() {
  dispatch::ExecRequest req;
  req.request_id = 1;
  req.model = kKnown;
  req.layer = 0;
  req.d_model = kEmbd;
  dispatch::ExecBatch batch;
  batch.expert = 3;
  batch.n_rows = 4;
  batch.rows.assign(4 * kEmbd, 0.01f);
  req.experts.push_back(batch);
  const Bytes frame = dispatch::EncodeExecRequest(req);
  return std::string(reinterpret_cast<const char*>(frame.data()), frame.size());
}

double P99(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, v.size() * 99 / 100)];
}

TEST(DashboardBoundsProcessTest, AFloodOfDistinctModelIdsLeavesExecFastAndNothingBehind) {
  TempDir tmp;
  // A joins a swarm through a DHT peer in this process, which then goes
  // silent: every DHT read of A now waits for answers that do not come, as
  // reads through a slow or hostile swarm do.
  auto peer = swarm::DhtTransport::Start(swarm::DhtOptions{});
  ASSERT_TRUE(peer) << peer.error().ToString();
  NodeOptions o;
  o.run_args = {"--dht-port", "0", "--bootstrap", "127.0.0.1:" + std::to_string((*peer)->port())};
  RunningNode a = StartNode(tmp.Join("a"), o);
  ASSERT_TRUE(a.running());
  ASSERT_TRUE(a.CliJson({"moe", "load-expert", "--model", kKnown, "--layer", "0", "--expert", "3", "--file",
                         WriteExpert(tmp, "e3.safetensors"), "--json"})
                  .is_object());
  ASSERT_TRUE(WaitFor([&] { return AdminGet(a, "/v1/swarm/info")["dht"].value("good_nodes", 0) >= 1; },
                      std::chrono::seconds(20)));
  peer->reset();
  const std::string frame = ExecFrame();
  net::HttpClient exec_client(a.http);
  auto exec_ms = [&] {
    const auto t0 = Clock::now();
    auto r = exec_client.Send("POST", "/v1/moe/exec", frame, "application/x-tenzro-exec");
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : r.error().ToString());
    return Ms(Clock::now() - t0);
  };
  for (int i = 0; i < 10; ++i) exec_ms();  // warm up
  std::vector<double> base;
  for (int i = 0; i < 100; ++i) base.push_back(exec_ms());

  const pid_t pid = a.proc->pid();
  const json info0 = AdminGet(a, "/v1/swarm/info");
  const uint64_t rss_before = ProcStatusBytes(pid, "VmRSS");
  constexpr int kThreads = 4, kPerThread = 2500;
  std::atomic<int> done{0}, bad{0}, sent{0};
  std::atomic<int64_t> slowest_us{0};
  std::vector<std::thread> flood;
  const auto deadline = Clock::now() + std::chrono::seconds(30);  // bounds the test if requests are slow
  for (int t = 0; t < kThreads; ++t) {
    flood.emplace_back([&, t] {
      net::HttpClient c(a.http);
      for (int i = 0; i < kPerThread && Clock::now() < deadline; ++i, ++sent) {
        const auto t0 = Clock::now();
        auto r = c.Send("GET", "/v1/dashboard/state?model=flood-" + std::to_string(t) + "-" + std::to_string(i));
        const auto us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
        int64_t prev = slowest_us.load();
        while (us > prev && !slowest_us.compare_exchange_weak(prev, us)) {
        }
        if (!r || r->status != 200 || r->body.find("unknown model") == std::string::npos) ++bad;
      }
      ++done;
    });
  }
  std::vector<double> during;
  while (done.load() < kThreads) during.push_back(exec_ms());
  for (auto& t : flood) t.join();
  const uint64_t rss_after = ProcStatusBytes(pid, "VmRSS");
  const json info1 = AdminGet(a, "/v1/swarm/info");

  const double p99_base = P99(base), p99_during = P99(during);
  std::printf("[dashboard] %d distinct ids from %d threads: exec p99 %.2f ms (baseline %.2f ms, %zu calls during), "
              "slowest state %.1f ms, RSS %+.1f MiB\n",
              sent.load(), kThreads, p99_during, p99_base, during.size(), slowest_us.load() / 1000.0,
              (static_cast<double>(rss_after) - rss_before) / (1 << 20));
  EXPECT_GE(sent.load(), kMinIdsSent);
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GE(during.size(), 10u);
  // Before: each id's DHT lookup ran on the exec pool, and exec calls queued
  // behind them for seconds.
  EXPECT_LT(p99_during, 10 * p99_base + 50);
  EXPECT_LT(slowest_us.load(), 1'000'000);
  // Nothing per id: no DHT read, no agent table grew (each id used to cost
  // a lookup and ~1.4 KB), and RSS within a generous bound.
  EXPECT_EQ(info1["declaration_reads"]["request"], info0["declaration_reads"]["request"]);
  EXPECT_EQ(info1["watched"], info0["watched"]);
  EXPECT_EQ(info1["read_cache"], info0["read_cache"]);
  EXPECT_EQ(info1["records_held"], info0["records_held"]);
  EXPECT_LT(rss_after, rss_before + (32ull << 20) + kSanitizerSlackBytes);
  EXPECT_EQ(a.Stop(), 0);
}

// --dashboard admin moves the page and its state to the admin listener (the
// page loads without the token, the state needs it); off serves neither.
TEST(DashboardBoundsProcessTest, DashboardFlagMovesOrRemovesIt) {
  TempDir tmp;
  for (const std::string where : {"admin", "off"}) {
    NodeOptions o;
    o.run_args = {"--dashboard", where};
    RunningNode n = StartNode(tmp.Join(where), o);
    ASSERT_TRUE(n.running());
    net::HttpClient pub(n.http);
    for (const char* target : {"/", "/v1/dashboard/state"}) {
      auto r = pub.Send("GET", target);
      ASSERT_TRUE(r);
      EXPECT_EQ(r->status, 404) << where << " " << target;
    }
    auto page = n.Admin(false).Send("GET", "/");
    auto state = n.Admin(false).Send("GET", "/v1/dashboard/state");
    auto with_token = n.Admin().Send("GET", "/v1/dashboard/state");
    ASSERT_TRUE(page && state && with_token);
    EXPECT_EQ(page->status, where == "admin" ? 200 : 401) << where;
    EXPECT_EQ(state->status, 401) << where;
    EXPECT_EQ(with_token->status, where == "admin" ? 200 : 404) << where;
    if (where == "admin") {
      EXPECT_NE(page->body.find("id=\"heatmap\""), std::string::npos);
      EXPECT_TRUE(json::parse(with_token->body, nullptr, false).contains("runtime"));
    }
    EXPECT_EQ(n.Stop(), 0);
  }
  tenzro::testing::RunResult bad = tenzro::testing::RunTenzro({"--data-dir", tmp.Join("x"), "node", "run", "--dashboard", "lan"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("public|admin|off"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace tenzro::node
