// GET /metrics (node/node_metrics.h) through the real binary: two nodes, A
// (gate + experts 0..3 of layer 0) and B (experts 4..7, fetched from A by
// blob URI). The new families appear at start, and a distributed forward on A
// moves the forward counter, the stage histograms and the exec bytes (local
// and remote); B's fetches move the blob families. Plus NodeMetrics itself:
// outcomes, verification failures, the recent-forwards ring.
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include <nlohmann/json.hpp>

#include "node/node_metrics.h"
#include "node/runtime_service.h"
#include "testutil/node_process.h"

namespace tenzro::testing {
namespace {

using nlohmann::json;

constexpr const char* kModel = "tiny-qwen35moe";

bool HasFamily(const std::string& text, const std::string& name, const std::string& type) {
  return text.find("# TYPE " + name + " " + type + "\n") != std::string::npos;
}

std::string BytesSeries(const char* transport, const char* traffic, const char* direction) {
  return std::string("tenzro_transport_bytes_total{transport=\"") + transport + "\",traffic=\"" + traffic +
         "\",direction=\"" + direction + "\"}";
}

TEST(DashboardMetricsTest, NewFamiliesAppearAndMoveAfterAForward) {
  TempDir tmp;
  NodeOptions oa;
  oa.run_args = {"--swarm-refresh-ms", "500", "--swarm-ttl-s", "30", "--dht-port", "0"};
  RunningNode a = StartNode(tmp.Join("a"), oa);
  ASSERT_TRUE(a.running());
  const std::string m0 = MetricsText(a);
  for (auto [name, type] : std::vector<std::pair<const char*, const char*>>{
           {"tenzro_forwards_total", "counter"},
           {"tenzro_forward_stage_seconds", "histogram"},
           {"tenzro_transport_bytes_total", "counter"},
           {"tenzro_blob_fetches_total", "counter"},
           {"tenzro_blob_fetch_bytes_total", "counter"},
           {"tenzro_blob_verify_failures_total", "counter"},
           {"tenzro_cache_hits_total", "counter"},
           {"tenzro_cache_promotions_total", "counter"},
           {"tenzro_warm_bytes", "gauge"},
           {"tenzro_dht_peers", "gauge"},
           {"tenzro_declarations_seen_total", "counter"}})
    EXPECT_TRUE(HasFamily(m0, name, type)) << name << "\n" << m0;
  EXPECT_EQ(MetricSample(m0, "tenzro_forwards_total{outcome=\"ok\"}"), 0);
  EXPECT_EQ(MetricSample(m0, BytesSeries("local", "exec", "sent")), 0);

  ASSERT_EQ(a.Cli({"moe", "catalog-add", "--model", kModel, "--checkpoint", DataPath("moe/tiny-qwen35moe-Q4_K_M.gguf")})
                .exit_code,
            0);
  json job = a.CliJson({"moe", "prepare-experts", "--model-id", kModel, "--layer", "0", "--quant", "q4_k_m", "--gate",
                        "--wait", "--json"});
  ASSERT_EQ(job["state"], "done") << job.dump();
  const json& p = job["result"];
  NodeOptions ob = oa;
  ob.run_args.insert(ob.run_args.end(),
                     {"--bootstrap", "127.0.0.1:" + std::to_string(a.node_json["dht_port"].get<int>())});
  RunningNode b = StartNode(tmp.Join("b"), ob);
  ASSERT_TRUE(b.running());
  a.CliJson({"moe", "load-gate", "--model", kModel, "--layer", "0", "--file", p["gate"]["uri"].get<std::string>(),
             "--json"});
  for (const json& e : p["experts"]) {
    const int ex = e["expert"];
    std::vector<std::string> args = {"moe", "load-expert", "--model", kModel, "--layer", "0", "--expert",
                                     std::to_string(ex), "--file", e["uri"].get<std::string>(), "--json"};
    if (ex >= 4) args.insert(args.end(), {"--from", a.http_url()});
    ASSERT_TRUE((ex < 4 ? a : b).CliJson(args).is_object()) << ex;
  }
  // B fetched 4 verified blobs over HTTP from A.
  const std::string mb = MetricsText(b);
  EXPECT_EQ(MetricSample(mb, "tenzro_blob_fetches_total{transport=\"http\",outcome=\"ok\"}"), 4) << mb;
  EXPECT_GT(MetricSample(mb, "tenzro_blob_fetch_bytes_total{transport=\"http\"}"), 4 * 100000) << mb;
  EXPECT_GE(MetricSample(mb, BytesSeries("http", "blob", "received")), MetricSample(mb, "tenzro_blob_fetch_bytes_total{transport=\"http\"}"));
  EXPECT_EQ(MetricSample(mb, "tenzro_blob_verify_failures_total{transport=\"http\"}"), 0);
  EXPECT_GT(MetricSample(MetricsText(a), BytesSeries("http", "blob", "sent")), 4 * 100000);

  // A sees B's experts, then forwards: some experts local, some on B.
  ASSERT_TRUE(WaitFor([&] {
    auto r = a.Admin().Send("GET", std::string("/v1/swarm/shard-map?model=") + kModel);
    json m = r && r->ok() ? json::parse(r->body, nullptr, false) : json();
    return m.is_object() && m["covered_experts"] == 8;
  }, std::chrono::seconds(30)));
  const ::tenzro::Bytes hidden = ReadAll(DataPath("moe/tiny-qwen35moe.hidden.f32"));
  json body = {{"model", kModel}, {"layer", 0}, {"d_model", 256}, {"n_tokens", 9},
               {"hidden_f32_b64", node::Base64Encode(ByteSpan(hidden))}};
  auto r = a.Admin().Send("POST", "/v1/moe/forward-distributed", body.dump());
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : r.error().ToString());
  body["d_model"] = 128;  // wrong: an error forward
  r = a.Admin().Send("POST", "/v1/moe/forward-distributed", body.dump());
  ASSERT_TRUE(r && r->status == 400) << (r ? r->body : r.error().ToString());

  const std::string m1 = MetricsText(a);
  EXPECT_EQ(MetricSample(m1, "tenzro_forwards_total{outcome=\"ok\"}"), 1) << m1;
  EXPECT_EQ(MetricSample(m1, "tenzro_forwards_total{outcome=\"error\"}"), 1) << m1;
  for (const char* stage : {"gate", "shared", "plan", "exec", "combine", "dispatch", "total"}) {
    const std::string lbl = std::string("{stage=\"") + stage + "\"";
    EXPECT_EQ(MetricSample(m1, "tenzro_forward_stage_seconds_count" + lbl + "}"), 1) << stage;
    EXPECT_EQ(MetricSample(m1, "tenzro_forward_stage_seconds_bucket" + lbl + ",le=\"+Inf\"}"), 1) << stage;
    EXPECT_GE(MetricSample(m1, "tenzro_forward_stage_seconds_sum" + lbl + "}"), 0) << stage;
  }
  EXPECT_GT(MetricSample(m1, BytesSeries("local", "exec", "sent")), 0) << m1;
  EXPECT_GT(MetricSample(m1, BytesSeries("local", "exec", "received")), 0) << m1;
  const double remote_sent = MetricSample(m1, BytesSeries("quic", "exec", "sent")) + MetricSample(m1, BytesSeries("http", "exec", "sent"));
  const double remote_recv =
      MetricSample(m1, BytesSeries("quic", "exec", "received")) + MetricSample(m1, BytesSeries("http", "exec", "received"));
  EXPECT_GT(remote_sent, 0) << m1;
  EXPECT_GT(remote_recv, 0) << m1;
  // B served those calls: it received at least the rows A sent (plus frame headers).
  const std::string mb2 = MetricsText(b);
  const double b_recv = MetricSample(mb2, BytesSeries("quic", "exec", "received")) + MetricSample(mb2, BytesSeries("http", "exec", "received"));
  EXPECT_GE(b_recv, remote_sent) << mb2;
  EXPECT_GT(MetricSample(mb2, "tenzro_cache_hits_total") + MetricSample(mb2, "tenzro_cache_misses_total"), 0) << mb2;

  // The dashboard's state lists the forward with its stage times.
  net::HttpClient pub(a.http);
  auto st = pub.Send("GET", "/v1/dashboard/state");
  ASSERT_TRUE(st && st->status == 200);
  json s = json::parse(st->body);
  ASSERT_EQ(s["recent_forwards"].size(), 2u) << s.dump();
  EXPECT_EQ(s["recent_forwards"][0]["ok"], false);  // newest first
  EXPECT_EQ(s["recent_forwards"][1]["ok"], true);
  EXPECT_TRUE(s["recent_forwards"][1]["stages_ms"].contains("exec"));
  EXPECT_EQ(s["model"], kModel);
  EXPECT_EQ(s["shard_map"]["covered_experts"], 8);
  EXPECT_EQ(s["shard_map"]["holders"].size(), 2u);
  EXPECT_EQ(s["runtime"]["experts"].size(), 4u);
  auto page = pub.Send("GET", "/");
  ASSERT_TRUE(page && page->status == 200);
  EXPECT_NE(page->body.find("id=\"heatmap\""), std::string::npos);
  auto missing = pub.Send("GET", "/no-such-page");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(pub.Send("GET", "/v1/dashboard/state?model=" + std::string(300, 'x'))->status, 400);

  EXPECT_EQ(b.Stop(), 0);
  EXPECT_EQ(a.Stop(), 0);
}

TEST(DashboardMetricsTest, NodeMetricsCountsOutcomesAndKeepsTheLastForwards) {
  node::NodeMetrics m;
  m.RecordBlobFetch("http", std::nullopt, 1000);
  m.RecordBlobFetch("http", ErrorCode::kCorruption, 0);
  m.RecordBlobFetch("quic", ErrorCode::kUnavailable, 0);
  for (int i = 0; i < 25; ++i) {
    node::ForwardRecord r;
    r.model = "m";
    r.layer = i;
    r.ok = i % 5 != 0;
    r.stages_ms = {{"total", 2.0}};
    m.RecordForward(r);
  }
  std::string out;
  m.Render(out);
  EXPECT_EQ(MetricSample(out, "tenzro_blob_fetches_total{transport=\"http\",outcome=\"ok\"}"), 1);
  EXPECT_EQ(MetricSample(out, "tenzro_blob_fetches_total{transport=\"http\",outcome=\"corruption\"}"), 1);
  EXPECT_EQ(MetricSample(out, "tenzro_blob_fetches_total{transport=\"quic\",outcome=\"unavailable\"}"), 1);
  EXPECT_EQ(MetricSample(out, "tenzro_blob_fetch_bytes_total{transport=\"http\"}"), 1000);
  EXPECT_EQ(MetricSample(out, "tenzro_blob_verify_failures_total{transport=\"http\"}"), 1);
  EXPECT_EQ(MetricSample(out, "tenzro_forwards_total{outcome=\"ok\"}"), 20);
  EXPECT_EQ(MetricSample(out, "tenzro_forwards_total{outcome=\"error\"}"), 5);
  EXPECT_EQ(MetricSample(out, "tenzro_forward_stage_seconds_count{stage=\"total\"}"), 20);  // ok forwards only
  EXPECT_EQ(MetricSample(out, "tenzro_forward_stage_seconds_bucket{stage=\"total\",le=\"0.0025\"}"), 20);
  json recent = m.RecentForwards();
  ASSERT_EQ(recent.size(), node::NodeMetrics::kRecentForwards);
  EXPECT_EQ(recent[0]["layer"], 24);
  EXPECT_EQ(recent[19]["layer"], 5);
  EXPECT_EQ(recent[19]["ok"], false);
  EXPECT_TRUE(recent[19].contains("error"));
}

}  // namespace
}  // namespace tenzro::testing
