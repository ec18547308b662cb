// The swarm through the real binary: five node processes on loopback join
// one OpenDHT network. A prepares the tiny model (and offers its blobs);
// B..E load experts by blob URI with no peer named (provider lookup +
// verified fetch), replication 2. Declarations converge to an exact shard
// map; a SIGKILLed holder drops out within the TTL; a clean stop leaves at
// once; forged and replayed records are ignored; rebalance repairs the
// under-replicated experts. Prints the measured convergence/expiry times.
#include <gtest/gtest.h>

#include <csignal>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "core/file.h"
#include "swarm/agent.h"
#include "swarm/declaration.h"
#include "swarm/dht_transport.h"
#include "identity/envelope.h"
#include "swarm/transport.h"
#include "swarm/value_id.h"
#include "testutil/node_process.h"

namespace tenzro::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kModel = "tiny-qwen35moe";  // 2 layers x 8 experts
constexpr int kTtlS = 3;

double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

json AdminGet(const RunningNode& n, const std::string& path) {
  net::HttpClient c = n.Admin();
  auto r = c.Send("GET", path);
  if (!r || !r->ok()) return json();
  return json::parse(r->body, nullptr, false);
}

json ShardMap(const RunningNode& n) {
  return AdminGet(n, std::string("/v1/swarm/shard-map?model=") + kModel + "&min_providers=2");
}

// node id -> set of "L/E" it holds, from a shard map.
std::map<std::string, std::set<std::string>> HoldersOf(const json& m) {
  std::map<std::string, std::set<std::string>> out;
  if (!m.is_object()) return out;
  for (const json& e : m["experts"])
    for (const json& h : e["holders"])
      out[h.get<std::string>()].insert(fmt::format("{}/{}", e["layer"].get<int>(), e["expert"].get<int>()));
  return out;
}

TEST(SwarmProcessTest, FiveNodesConvergeExpireRejectForgeriesAndRebalance) {
  TempDir tmp;
  const std::vector<std::string> swarm_flags = {"--swarm-refresh-ms", "500", "--swarm-ttl-s", std::to_string(kTtlS)};
  auto flags = [&](std::vector<std::string> extra) {
    std::vector<std::string> v = swarm_flags;
    v.insert(v.end(), extra.begin(), extra.end());
    return v;
  };

  // A: the bootstrap node and preparer.
  NodeOptions ao;
  ao.run_args = flags({});
  RunningNode a = StartNode(tmp.Join("a"), ao);
  ASSERT_TRUE(a.running());
  ASSERT_TRUE(a.node_json.contains("dht_port")) << a.node_json.dump();
  ASSERT_TRUE(a.node_json.contains("node_id"));
  const std::string boot = "127.0.0.1:" + std::to_string(a.node_json["dht_port"].get<int>());
  ASSERT_EQ(a.Cli({"moe", "catalog-add", "--model", kModel, "--checkpoint", DataPath("moe/tiny-qwen35moe-Q4_K_M.gguf")})
                .exit_code,
            0);
  std::vector<json> prepared;
  for (int layer = 0; layer < 2; ++layer) {
    json job = a.CliJson({"moe", "prepare-experts", "--model-id", kModel, "--layer", std::to_string(layer), "--quant",
                          "q4_k_m", "--gate", "--wait", "--json"});
    ASSERT_EQ(job["state"], "done") << job.dump();
    prepared.push_back(job["result"]);
  }

  // B..E join through A.
  std::vector<RunningNode> h;
  for (int i = 0; i < 4; ++i) {
    NodeOptions ho;
    ho.run_args = flags({"--bootstrap", boot, "--memory-budget", "4MiB"});
    h.push_back(StartNode(tmp.Join(std::string(1, char('b' + i))), ho));
    ASSERT_TRUE(h.back().running());
  }
  std::vector<std::string> ids;
  for (auto& n : h) ids.push_back(n.node_json["node_id"].get<std::string>());

  // A announces its prepared blobs at its next refresh (<= 0.5 s): wait until
  // every holder sees a provider of the first one.
  const std::string first_hash = prepared[0]["experts"][0]["hash"].get<std::string>();
  for (auto& n : h) {
    ASSERT_TRUE(WaitFor([&] {
      json p = AdminGet(n, "/v1/swarm/providers?hash=" + first_hash);
      return p.is_object() && !p["providers"].empty();
    }, std::chrono::seconds(10)));
  }

  // Replication 2: global expert g goes to holders g%4 and (g+1)%4, by blob
  // URI only: the providers are found in the DHT and the bytes verified.
  std::map<std::string, std::set<std::string>> want;
  const std::string a_http = a.http_url();
  int fetched_from_a = 0;
  for (int layer = 0; layer < 2; ++layer) {
    for (const json& e : prepared[layer]["experts"]) {
      const int ex = e["expert"].get<int>();
      const int g = layer * 8 + ex;
      for (int k : {g % 4, (g + 1) % 4}) {
        json le = h[k].CliJson({"moe", "load-expert", "--model", kModel, "--layer", std::to_string(layer), "--expert",
                                std::to_string(ex), "--file", e["uri"].get<std::string>(), "--json"});
        ASSERT_TRUE(le.is_object());
        if (le.value("fetched_from", "") == a_http) ++fetched_from_a;
        want[ids[k]].insert(fmt::format("{}/{}", layer, ex));
      }
    }
  }
  // Every fetch found a provider by itself (A, or a holder that loaded first).
  EXPECT_GE(fetched_from_a, 1);
  const auto loaded_at = Clock::now();

  // Convergence: every node's shard map is exact.
  for (size_t i = 0; i < h.size() + 1; ++i) {
    const RunningNode& n = i == 0 ? a : h[i - 1];
    json m;
    bool ok = WaitFor([&] {
      m = ShardMap(n);
      return HoldersOf(m) == want;
    }, std::chrono::seconds(30));
    ASSERT_TRUE(ok) << "node " << i << " map: " << m.dump();
    EXPECT_EQ(m["covered_experts"], 16);
    EXPECT_EQ(m["under_replicated"].size(), 0u);
    EXPECT_EQ(m["holders"].size(), 5u);  // A only offers its prepared blobs: a holder of 0 experts
  }
  std::printf("[swarm] 5 nodes: shard map exact on every node %.2f s after the last load\n", SecondsSince(loaded_at));

  // Forgeries injected straight into the DHT by a stranger's runner.
  swarm::DhtOptions dopt;
  dopt.bootstrap = {boot};
  auto stranger = swarm::DhtTransport::Start(dopt);
  ASSERT_TRUE(stranger) << stranger.error().ToString();
  const std::string key = swarm::DeclarationKey(kModel);
  std::vector<std::string> genuine;
  ASSERT_TRUE(WaitFor([&] {
    genuine = *(*stranger)->Get(key);
    return genuine.size() >= 4;
  }, std::chrono::seconds(20)));
  identity::Identity mallory = identity::Identity::Generate();
  std::string replay;
  // Storing nodes keep a record only at its own value id (value_id.h), so a
  // replay can only go where B's current record is, until B's next refresh
  // (0.5 s) replaces it: the stranger keeps replaying while the nodes read.
  const uint64_t b_value_id = swarm::RecordValueId(ids[0], "decl", kModel, 0);
  {
    // (1) claims B's id, signed by mallory; (2) B's genuine record with one
    // byte of its body changed; (3) a genuine record of B replayed later.
    swarm::Declaration d;
    d.node_id = ids[0];
    d.model = kModel;
    d.seq = UINT64_MAX / 4;
    d.timestamp_ms = swarm::UnixMillis();
    for (int e = 0; e < 8; ++e) d.experts.push_back({1, e, "f32", "f32", "f32", "", swarm::Tier::kWarm, 1e6});
    const std::string forged =
        identity::SealEnvelope(swarm::kDeclarationDomain, swarm::DeclarationToJson(d).dump(), mallory);
    ASSERT_TRUE((*stranger)->Put(key, 0xF00D1, forged));
    std::string tampered;
    for (const auto& v : genuine)
      if (v.find(ids[0]) != std::string::npos) tampered = v;
    ASSERT_FALSE(tampered.empty());
    size_t pos = tampered.find("\\\"layer\\\":");
    ASSERT_NE(pos, std::string::npos);
    tampered[pos + 10] = tampered[pos + 10] == '0' ? '1' : '0';
    ASSERT_TRUE((*stranger)->Put(key, 0xF00D2, tampered));
    // The replay: a fresh genuine record of B, put back 0.7 s later, once B
    // has published a newer one (every 0.5 s). Captured fresh so that it is
    // still inside its TTL (3 s) when the nodes read it, even on a slow
    // (sanitizer, -O0) build; past its TTL it would merely count as "expired".
    auto b_record = [&]() -> std::string {
      auto vals = (*stranger)->Get(key);
      if (!vals) return "";
      for (const auto& v : *vals)
        if (v.find(ids[0]) != std::string::npos && v != forged && v != tampered) return v;
      return "";
    };
    ASSERT_TRUE(WaitFor([&] { replay = b_record(); return !replay.empty(); }, std::chrono::seconds(5)));
    std::this_thread::sleep_for(std::chrono::milliseconds(700));  // B has published a newer record
    ASSERT_TRUE((*stranger)->Put(key, b_value_id, replay));
  }
  for (const RunningNode* n : {&a, &h[2]}) {
    json info;
    EXPECT_TRUE(WaitFor([&] {
      (void)(*stranger)->Put(key, b_value_id, replay);
      ShardMap(*n);  // reads the DHT (at most every 0.5 s)
      info = AdminGet(*n, "/v1/swarm/info");
      // The replayed record is refused as a "replay" (older than B's current
      // record) or, if a slow node reads it past its TTL, as "expired":
      // either way it is not ingested, and the map below stays exact.
      return info["ingest"].value("bad_signature", 0) >= 2 &&
             info["ingest"].value("replay", 0) + info["ingest"].value("expired", 0) >= 1;
    }, std::chrono::milliseconds(6000))) << info.dump();
    json m = ShardMap(*n);
    EXPECT_EQ(HoldersOf(m), want) << m.dump();
  }

  // SIGKILL E: gone from every map within the TTL (plus one lookup).
  const auto killed_at = Clock::now();
  h[3].proc->Signal(SIGKILL);
  h[3].proc->Wait(std::chrono::seconds(10));
  std::map<std::string, std::set<std::string>> want_after = want;
  want_after.erase(ids[3]);
  ASSERT_TRUE(WaitFor([&] { return HoldersOf(ShardMap(a)) == want_after; }, std::chrono::seconds(kTtlS + 10)));
  const double expiry = SecondsSince(killed_at);
  std::printf("[swarm] SIGKILLed holder dropped out after %.2f s (TTL %d s, refresh 0.5 s)\n", expiry, kTtlS);
  // Measured 2.5-3.0 s on an idle machine (TTL + one lookup); 8.6 s once on a
  // 2-core CI box running a browser and 3 other nodes beside this test. The
  // bound says "expires", not how fast: TTL + 8 s of scheduling slack.
  EXPECT_LE(expiry, kTtlS + 8.0);
  // E's experts now have one replica. Waited for: on a loaded machine (the
  // sanitizer build) another holder's refresh can be late for a moment.
  json m;
  EXPECT_TRUE(WaitFor(
      [&] {
        m = ShardMap(a);
        return m["under_replicated"].size() == want[ids[3]].size() && m["covered_experts"] == 16;
      },
      std::chrono::seconds(kTtlS + 10)))
      << m.dump();
  EXPECT_EQ(m["covered_experts"], 16);

  // Rebalance on B: adopts E's experts from their remaining holders.
  json plan = h[0].CliJson({"moe", "rebalance", "--model", kModel, "--json"});
  EXPECT_EQ(plan["applied"], false);
  EXPECT_GE(plan["adopt"].size(), 1u) << plan.dump();
  // under_replicated; or uncovered when, on a loaded machine (the sanitizer
  // build beside other tests), another holder's refresh is late for a moment
  // and the expert's last live replica looks expired. Both are adoptions.
  for (const json& x : plan["adopt"])
    EXPECT_TRUE(x["reason"] == "under_replicated" || x["reason"] == "uncovered") << x.dump();
  json applied = h[0].CliJson({"moe", "rebalance", "--model", kModel, "--apply", "--json"});
  EXPECT_EQ(applied["loaded"], applied["adopt"].size()) << applied.dump();
  // B already held some of E's experts; C and D adopt the rest.
  for (int k : {1, 2}) {
    json r = h[k].CliJson({"moe", "rebalance", "--model", kModel, "--apply", "--json"});
    EXPECT_EQ(r["loaded"], r["adopt"].size()) << r.dump();
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
  }
  ASSERT_TRUE(WaitFor([&] {
    m = ShardMap(a);
    return m.is_object() && m["under_replicated"].empty() && m["covered_experts"] == 16;
  }, std::chrono::seconds(20))) << m.dump();
  std::printf("[swarm] rebalance repaired %zu under-replicated experts\n", want[ids[3]].size());

  // A clean stop announces leaving: gone well before the TTL.
  const auto stop_at = Clock::now();
  EXPECT_EQ(h[2].Stop(), 0);
  ASSERT_TRUE(WaitFor([&] { return HoldersOf(ShardMap(a)).count(ids[2]) == 0; }, std::chrono::seconds(kTtlS + 5)));
  std::printf("[swarm] cleanly stopped holder left after %.2f s\n", SecondsSince(stop_at));

  // Prometheus metrics on the public listener.
  {
    net::HttpClient pub(a.http);
    auto r = pub.Send("GET", "/metrics");
    ASSERT_TRUE(r && r->ok());
    EXPECT_NE(r->body.find("tenzro_dht_peers{state=\"good\"} "), std::string::npos) << r->body;
    EXPECT_NE(r->body.find("tenzro_declarations_seen_total{outcome=\"bad_signature\"} "), std::string::npos);
    EXPECT_NE(r->body.find("# TYPE tenzro_cache_hits_total counter"), std::string::npos);
  }

  // The SVG heatmap through the CLI.
  RunResult svg = a.Cli({"moe", "shard-map", "--model", kModel, "--svg", tmp.Join("map.svg")});
  EXPECT_EQ(svg.exit_code, 0) << svg.err;
  EXPECT_NE(svg.out.find("coverage"), std::string::npos) << svg.out;
  EXPECT_NE(ReadTextFile(tmp.Join("map.svg"))->find("<svg"), std::string::npos);
}

}  // namespace
}  // namespace tenzro::testing
