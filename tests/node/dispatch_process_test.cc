// The distributed forward through real node processes on loopback:
//   * a reference node R prepares the tiny fixture's experts and gates and
//     computes the single-node local forward;
//   * three holders N0, N1, N2 join one swarm (OpenDHT on loopback) and load
//     every expert of both layers twice (replication 2) from R's blobs; N0
//     also loads the gates;
//   * plan-dispatch on N0 matches a hand-computed plan;
//   * the distributed forward on N0 equals R's local forward (<= 1e-6
//     relative; with f32 rows it is bit for bit) and the ggml oracle;
//   * SIGKILL of the busiest remote holder in the middle of 200 consecutive
//     forwards: every forward completes and equals the fault-free output.
#include <signal.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/file.h"
#include "node/runtime_service.h"
#include "testutil/node_process.h"

namespace tenzro::node {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using tenzro::testing::DataPath;
using tenzro::testing::NodeOptions;
using tenzro::testing::ReadF32;
using tenzro::testing::RelL2;
using tenzro::testing::RunningNode;
using tenzro::testing::StartNode;
using tenzro::testing::TempDir;
using tenzro::testing::WaitFor;

constexpr const char* kModel = "tiny-qwen35moe";
constexpr int kExperts = 8;

// Holder i of 3 holds expert e when e % 3 is i or i - 1 (mod 3): two each.
bool Holds(int node, int e) { return e % 3 == node || (e + 1) % 3 == node; }

class DispatchProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    oracle_ = json::parse(*ReadTextFile(DataPath("moe/tiny-qwen35moe.moe-oracle.json")));
    hidden_ = DataPath("moe/tiny-qwen35moe.hidden.f32");

    // R: prepares both layers, loads everything, computes the local forward.
    r_ = StartNode(tmp_.Join("r"));
    ASSERT_TRUE(r_.running());
    auto add = r_.Cli({"moe", "catalog-add", "--model", kModel, "--checkpoint",
                       DataPath("moe/tiny-qwen35moe-Q4_K_M.gguf")});
    ASSERT_EQ(add.exit_code, 0) << add.err;
    for (int layer = 0; layer < 2; ++layer) {
      json job = r_.CliJson({"moe", "prepare-experts", "--model-id", kModel, "--layer", std::to_string(layer),
                             "--quant", "q4_k_m", "--gate", "--wait", "--json"});
      ASSERT_EQ(job["state"], "done") << job.dump();
      prepared_.push_back(job["result"]);
      Load(r_, layer, /*gate=*/true, [](int) { return true; });
      const std::string out = tmp_.Join("local" + std::to_string(layer) + ".f32");
      json fr = r_.CliJson({"moe", "forward", "--model", kModel, "--hidden", hidden_, "--d-model", "256", "--layer",
                            std::to_string(layer), "--out", out, "--local", "--json"});
      ASSERT_EQ(fr["n_tokens"], 9);
      local_.push_back(ReadF32(out));
    }

    // Three holders in one swarm; N0 is the DHT bootstrap.
    const std::vector<std::string> swarm_flags = {"--swarm-refresh-ms", "1000", "--swarm-ttl-s", "30"};
    NodeOptions o0;
    o0.run_args = swarm_flags;
    o0.run_args.insert(o0.run_args.end(), {"--dht-port", "0"});
    n_.push_back(StartNode(tmp_.Join("n0"), o0));
    ASSERT_TRUE(n_[0].running());
    ASSERT_TRUE(n_[0].node_json.contains("dht_port")) << n_[0].node_json.dump();
    const std::string boot = "127.0.0.1:" + std::to_string(n_[0].node_json["dht_port"].get<int>());
    for (int i = 1; i < 3; ++i) {
      NodeOptions o;
      o.run_args = swarm_flags;
      o.run_args.insert(o.run_args.end(), {"--dht-port", "0", "--bootstrap", boot});
      n_.push_back(StartNode(tmp_.Join("n" + std::to_string(i)), o));
      ASSERT_TRUE(n_[i].running());
    }
    for (int i = 0; i < 3; ++i)
      for (int layer = 0; layer < 2; ++layer) Load(n_[i], layer, /*gate=*/i == 0, [i](int e) { return Holds(i, e); });
  }

  void TearDown() override {
    for (auto& n : n_) {
      if (n.running()) {
        EXPECT_EQ(n.Stop(), 0) << n.proc->Log();
      }
    }
    if (r_.running()) {
      EXPECT_EQ(r_.Stop(), 0) << r_.proc->Log();
    }
  }

  // Loads layer `layer`'s experts that `want` selects (and the gate) from R's blobs.
  void Load(const RunningNode& n, int layer, bool gate, const std::function<bool(int)>& want) {
    const json& r = prepared_[layer];
    if (gate)
      n.CliJson({"moe", "load-gate", "--model", kModel, "--layer", std::to_string(layer), "--file",
                 r["gate"]["uri"].get<std::string>(), "--from", r_.http_url(), "--json"});
    for (const json& e : r["experts"]) {
      const int ex = e["expert"];
      if (!want(ex)) continue;
      n.CliJson({"moe", "load-expert", "--model", kModel, "--layer", std::to_string(layer), "--expert",
                 std::to_string(ex), "--file", e["uri"].get<std::string>(), "--from", r_.http_url(), "--json"});
    }
  }

  // plan-dispatch on N0 for `routings` (written to a file).
  json Plan(const json& routings) {
    const std::string f = tmp_.Join("routings.json");
    EXPECT_TRUE(WriteFileAtomic(f, std::string_view(routings.dump())));
    return n_[0].CliJson({"moe", "plan-dispatch", "--model", kModel, "--routings", f, "--json"});
  }

  // Every expert of both layers planned somewhere (the swarm has converged).
  bool Converged() {
    json all = json::array();
    for (int t = 0; t < kExperts; ++t)
      all.push_back({{"token_index", t}, {"experts", {{{"layer", 0}, {"expert", t}}, {{"layer", 1}, {"expert", t}}}}});
    json p = Plan(all);
    if (!p.is_object() || !p["unheld"].empty()) return false;
    return p["holders_considered"] == 2;
  }

  std::string NodeId(int i) {
    auto r = n_[i].Admin().Send("GET", "/v1/swarm/info");
    EXPECT_TRUE(r && r->status == 200);
    json s = r ? json::parse(r->body, nullptr, false) : json();
    return s.is_object() ? s.value("node_id", "") : "";
  }

  // The tokens/s that `holder` publishes for its experts, summed (0 if none).
  double PublishedTps(const std::string& holder) {
    auto r = n_[0].Admin().Send("GET", std::string("/v1/swarm/declarations?model=") + kModel);
    if (!r || r->status != 200) return 0;
    json j = json::parse(r->body, nullptr, false);
    double tps = 0;
    if (!j.is_object()) return 0;
    for (const json& d : j["declarations"])
      if (d.value("node_id", "") == holder)
        for (const json& e : d["experts"]) tps += e.value("tps", 0.0);
    return tps;
  }

  TempDir tmp_;
  json oracle_;
  std::string hidden_;
  RunningNode r_;
  std::vector<RunningNode> n_;
  std::vector<json> prepared_;
  std::vector<std::vector<float>> local_;
};

TEST_F(DispatchProcessTest, PlanForwardAndFailover) {
  ASSERT_TRUE(WaitFor([&] { return Converged(); }, seconds(90))) << Plan(json::array()).dump();
  const std::string id0 = NodeId(0), id1 = NodeId(1), id2 = NodeId(2);
  const std::string lo = std::min(id1, id2), hi = std::max(id1, id2);

  // plan-dispatch, hand-computed (no holder measured yet: 1 ms, 1000 rows/s):
  //   items largest first: e1 {0,1}, then e0 {0}, e4 {1}, e7 {2} (1 row each).
  //   e0: N0 holds it -> local. N1 and N2 each hold e1, e4, e7 (4 rows):
  //   the cover takes the lower id for all (est 1 + 4 = 5); then moves off it
  //   (call cost 0.5 ms): e1 to the higher id gives 3 / 3 (gain 2 - 0.5),
  //   better than e4 or e7 (4 / 2, gain 1 - 0.5) -> lower {e4, e7}, higher {e1}.
  //   layer 0 expert 9 and layer 5 expert 0 exist nowhere -> unheld.
  json routings = json::parse(R"([
    {"token_index": 0, "experts": [{"layer": 0, "expert": 0, "weight": 0.6}, {"layer": 0, "expert": 1, "weight": 0.4}]},
    {"token_index": 1, "experts": [{"layer": 0, "expert": 1}, {"layer": 0, "expert": 4}]},
    {"token_index": 2, "experts": [{"layer": 0, "expert": 7}]},
    {"token_index": 3, "experts": [{"layer": 0, "expert": 9}, {"layer": 5, "expert": 0}]}])");
  json plan = Plan(routings);
  ASSERT_EQ(plan["batches"].size(), 3u) << plan.dump(2);
  EXPECT_EQ(plan["self"], id0);
  const json& b0 = plan["batches"][0];
  EXPECT_EQ(b0["transport"], "local");
  EXPECT_EQ(b0["node_id"], id0);
  EXPECT_EQ(b0["items"], json::parse(R"([{"layer": 0, "expert": 0, "token_indices": [0]}])"));
  const json& b1 = plan["batches"][1];
  EXPECT_EQ(b1["node_id"], lo);
  // Holders advertising QUIC are called over QUIC (this node runs an
  // endpoint), else over HTTP.
  const RunningNode& lo_node = lo == id1 ? n_[1] : n_[2];
  if (b1["transport"] == "quic") {
    EXPECT_EQ(b1["endpoint"], lo_node.node_json["quic"]["address"]) << lo_node.node_json.dump();
  } else {
    EXPECT_EQ(b1["transport"], "http");
    EXPECT_EQ(b1["endpoint"], lo_node.http_url());
  }
  EXPECT_EQ(b1["items"], json::parse(R"([{"layer": 0, "expert": 4, "token_indices": [1]},
                                         {"layer": 0, "expert": 7, "token_indices": [2]}])"));
  EXPECT_NEAR(b1["estimated_ms"].get<double>(), 3.0, 1e-9);
  const json& b2 = plan["batches"][2];
  EXPECT_EQ(b2["node_id"], hi);
  EXPECT_EQ(b2["items"], json::parse(R"([{"layer": 0, "expert": 1, "token_indices": [0, 1]}])"));
  EXPECT_NEAR(b2["estimated_ms"].get<double>(), 3.0, 1e-9);
  EXPECT_EQ(plan["unheld"],
            json::parse(R"([{"layer": 0, "expert": 9, "token_indices": [3], "holders_banned": false},
                            {"layer": 5, "expert": 0, "token_indices": [3], "holders_banned": false}])"));
  auto human = n_[0].Cli({"moe", "plan-dispatch", "--model", kModel, "--routings", tmp_.Join("routings.json")});
  EXPECT_EQ(human.exit_code, 0) << human.err;
  EXPECT_NE(human.out.find("unheld"), std::string::npos) << human.out;

  // The distributed forward through the CLI equals R's local forward (f32
  // rows: exact; the default bf16 rounds).
  for (const json& c : oracle_["cases"]) {
    if (c["weights"] != "Q4_K_M") continue;
    const int layer = c["layer"];
    const std::string out = tmp_.Join("dist" + std::to_string(layer) + ".f32");
    json fr = n_[0].CliJson({"moe", "forward", "--model", kModel, "--hidden", hidden_, "--d-model", "256",
                             "--layer", std::to_string(layer), "--out", out, "--json", "--wire-dtype", "f32"});
    ASSERT_TRUE(fr.is_object());
    EXPECT_EQ(fr["distributed"], true);
    EXPECT_EQ(fr["wire_dtype"], "f32");
    EXPECT_EQ(fr["n_tokens"], 9);
    EXPECT_EQ(fr["stages"]["rounds"], 1);
    std::set<std::string> transports;
    for (const json& h : fr["holders"]) {
      EXPECT_FALSE(h.contains("error")) << h.dump();
      transports.insert(h["transport"].get<std::string>());
    }
    if (layer == 0) std::printf("distributed forward transports: %s\n", json(transports).dump().c_str());
    EXPECT_TRUE(transports.count("local")) << fr["holders"].dump();
    EXPECT_TRUE(transports.count("http") || transports.count("quic")) << fr["holders"].dump();
    const std::vector<float> got = ReadF32(out);
    ASSERT_EQ(got.size(), local_[layer].size());
    EXPECT_LE(RelL2(got, local_[layer]), 1e-6) << "layer " << layer;
    EXPECT_EQ(got, local_[layer]) << "f32 rows: expected bit-identical to the local forward";
    const std::vector<float> ref = ReadF32(DataPath("moe/" + c["full_ref"].get<std::string>()));
    EXPECT_LE(RelL2(got, ref), c["ggml_vs_ref_rel_l2"].get<double>()) << "layer " << layer;
  }
  auto verbose = n_[0].Cli({"moe", "forward", "--model", kModel, "--hidden", hidden_, "--d-model", "256", "--layer",
                            "0", "--out", tmp_.Join("v.f32"), "--verbose"});
  EXPECT_EQ(verbose.exit_code, 0) << verbose.err;
  EXPECT_NE(verbose.out.find("stages: gate"), std::string::npos) << verbose.out;
  EXPECT_NE(verbose.out.find("token    0"), std::string::npos) << verbose.out;
  // Input checks: wrong d_model, a file that is not whole tokens.
  auto dm = n_[0].Cli({"moe", "forward", "--model", kModel, "--hidden", hidden_, "--d-model", "128", "--layer", "0",
                       "--out", tmp_.Join("x.f32")});
  EXPECT_EQ(dm.exit_code, 2) << dm.err;
  EXPECT_NE(dm.err.find("n_embd 256"), std::string::npos) << dm.err;

  // 200 consecutive forwards over the admin API (layers alternate); once 60
  // have completed, the remote holder that served the most calls so far is
  // SIGKILLed (from another thread, while forwards keep running).
  std::string raw[2];
  for (int layer = 0; layer < 2; ++layer) {
    raw[layer].resize(local_[layer].size() * 4);
    std::memcpy(raw[layer].data(), local_[layer].data(), raw[layer].size());
  }
  const Bytes hidden = tenzro::testing::ReadAll(hidden_);
  const std::string b64 = Base64Encode(ByteSpan(hidden));
  std::atomic<int> done{0}, victim{-1};
  std::thread killer([&] {
    if (WaitFor([&] { return victim.load() >= 0 || done.load() > 200; }, seconds(300)) && victim.load() >= 0)
      n_[victim.load()].proc->Signal(SIGKILL);
  });
  std::map<std::string, int> remote_calls, recent_calls;  // recent: forwards 40..59
  std::set<std::string> last_used;                        // remote holders of the last forward that had any
  struct Join {
    std::atomic<int>& done;
    std::thread& t;
    ~Join() {
      done = 1000;
      if (t.joinable()) t.join();
    }
  } join{done, killer};
  auto admin = n_[0].Admin();
  int failed_calls = 0, retried = 0, hedged = 0;
  for (int i = 0; i < 200; ++i) {
    const int layer = i % 2;
    json body = {{"model", kModel}, {"layer", layer},         {"d_model", 256},
                 {"n_tokens", 9}, {"hidden_f32_b64", b64}, {"wire_dtype", "f32"}};
    auto r = admin.Send("POST", "/v1/moe/forward-distributed", body.dump());
    ASSERT_TRUE(r) << "forward " << i << ": " << r.error().ToString();
    ASSERT_EQ(r->status, 200) << "forward " << i << ": " << r->body;
    json j = json::parse(r->body);
    auto out = Base64Decode(j["output_f32_b64"].get<std::string>());
    ASSERT_TRUE(out);
    ASSERT_EQ(std::string(out->begin(), out->end()), raw[layer]) << "forward " << i << " differs";
    for (const json& h : j["holders"]) {
      failed_calls += h.contains("error");
      hedged += h.value("hedge", false) && !h.value("lost", false);
      if (h["transport"] != "local") {
        remote_calls[h["node_id"].get<std::string>()]++;
        if (i >= 40) recent_calls[h["node_id"].get<std::string>()]++;
      }
    }
    retried += j["stages"]["rounds"].get<int>() > 1;
    std::set<std::string> used;
    for (const json& h : j["holders"])
      if (h["transport"] != "local") used.insert(h["node_id"].get<std::string>());
    if (!used.empty()) last_used = used;
    // The victim is the holder the planner used last (it ranks by measured
    // times, so the one it chose a moment ago is the one it calls next); when
    // the last forwards called both, the one used most in forwards 40..59.
    if (i + 1 == 60) {
      const bool one = last_used.count(id1) > 0, two = last_used.count(id2) > 0;
      victim = one && !two ? 1 : two && !one ? 2 : (recent_calls[id1] >= recent_calls[id2] ? 1 : 2);
    }
    done = i + 1;
  }
  killer.join();
  std::printf("200 forwards: %d failed holder calls, %d forwards re-planned, %d hedges won\n", failed_calls, retried,
              hedged);
  ASSERT_GE(victim.load(), 1);
  const int survivor = 3 - victim.load();
  const std::string victim_id = victim.load() == 1 ? id1 : id2, survivor_id = survivor == 1 ? id1 : id2;
  EXPECT_EQ(n_[victim.load()].proc->Wait(seconds(5)), -1);  // killed
  EXPECT_GE(failed_calls, 1);
  // The dead holder's items were computed elsewhere: in a re-plan, or by a
  // hedge when its call ran past its p99 before the ICMP error came back.
  EXPECT_GE(retried + hedged, 1);
  // The dead holder is banned in N0's stats.
  json p = Plan(json::array());
  bool banned = false;
  for (const json& h : p["holder_stats"]) banned |= h["node_id"] == victim_id && h["errors"].get<int>() > 0;
  EXPECT_TRUE(banned) << p["holder_stats"].dump();
  // The surviving remote holder counted what it served: its declarations
  // (re-published every second) carry a tokens/s above zero.
  EXPECT_TRUE(WaitFor([&] { return PublishedTps(survivor_id) > 0; }, seconds(20)));
}

}  // namespace
}  // namespace tenzro::node
