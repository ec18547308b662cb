// Security defences through real node processes on loopback (docs/security.md):
//   * spot checks: a coordinator C (gate only, --spot-check-fraction 1) and
//     three holders of every layer-0 expert — H1, H2 honest, L lying
//     (--test-corrupt-exec-outputs 1, allowed by TENZRO_ALLOW_TEST_FAULTS=1).
//     L is caught and banned, every forward still equals H1's single-node
//     forward, later forwards avoid L, and C's /metrics count it; L runs on
//     127.0.0.2 and, restarted there with a new key, still gets no work;
//   * per-peer rate limits: a burst of blob/exec requests from 127.0.0.1 gets
//     429s while 127.0.0.2 is still served; over QUIC one peer node id is
//     refused (exec error reply, blob stream reset) while another is served;
//     the rejections are in /metrics; fresh keys (and addresses) from the
//     same /24 are refused by the prefix bucket;
//   * network-supplied names never reach the file system (blob hashes must be
//     64 hex digits), secrets and the data dir are private;
//   * the test-only fault flag is refused without the environment variable.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "blob/blake3.h"
#include "blob/chunk_ranges.h"
#include "core/bytes.h"
#include "core/file.h"
#include "dispatch/exec_frame.h"
#include "identity/identity.h"
#include "node/node_config.h"
#include "node/runtime_service.h"
#include "quic/iroh_blobs.h"
#include "quic/quic_client.h"
#include "quic/rpc.h"
#include "testutil/node_process.h"

namespace tenzro::node {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using tenzro::testing::DataPath;
using tenzro::testing::MetricSample;
using tenzro::testing::MetricsText;
using tenzro::testing::NodeOptions;
using tenzro::testing::ReadF32;
using tenzro::testing::RelL2;
using tenzro::testing::RunningNode;
using tenzro::testing::RunTenzro;
using tenzro::testing::StartNode;
using tenzro::testing::TempDir;
using tenzro::testing::WaitFor;

constexpr const char* kModel = "tiny-qwen35moe";
constexpr int kExperts = 8;

std::string NodeId(const RunningNode& n) {
  auto r = n.Admin().Send("GET", "/v1/swarm/info");
  if (!r || r->status != 200) return "";
  json s = json::parse(r->body, nullptr, false);
  return s.is_object() ? s.value("node_id", "") : "";
}

TEST(SecurityProcessTest, SpotChecksCatchAndBanALyingHolder) {
  TempDir tmp;
  const std::vector<std::string> swarm_flags = {"--swarm-refresh-ms", "1000", "--swarm-ttl-s", "30"};
  NodeOptions oc;
  oc.run_args = swarm_flags;
  oc.run_args.insert(oc.run_args.end(), {"--dht-port", "0", "--spot-check-fraction", "1", "--spot-check-ban-s", "600"});
  RunningNode c = StartNode(tmp.Join("c"), oc);
  ASSERT_TRUE(c.running());
  const std::string boot = "127.0.0.1:" + std::to_string(c.node_json["dht_port"].get<int>());

  // C prepares layer 0 (experts + gate) and loads only the gate.
  const json res = tenzro::testing::PrepareTinyLayer(c, kModel, 0);
  ASSERT_TRUE(res.is_object());
  auto load_gate = [&](const RunningNode& n) {
    n.CliJson({"moe", "load-gate", "--model", kModel, "--layer", "0", "--file", res["gate"]["uri"].get<std::string>(),
               "--from", c.http_url(), "--json"});
  };
  load_gate(c);

  // Holders H1, H2 (honest) and L (lies on every answer), each with every expert.
  std::vector<RunningNode> h;
  for (int i = 0; i < 3; ++i) {
    NodeOptions o;
    o.run_args = swarm_flags;
    o.run_args.insert(o.run_args.end(), {"--dht-port", "0", "--bootstrap", boot});
    const bool liar = i == 2;
    if (liar) {
      // The liar runs on an address of its own: a wrong-output ban covers it.
      o.run_args.insert(o.run_args.end(), {"--test-corrupt-exec-outputs", "1", "--http", "127.0.0.2:0", "--quic",
                                           "127.0.0.2:0"});
      ::setenv("TENZRO_ALLOW_TEST_FAULTS", "1", 1);
    }
    h.push_back(StartNode(tmp.Join("h" + std::to_string(i)), o));
    ::unsetenv("TENZRO_ALLOW_TEST_FAULTS");
    ASSERT_TRUE(h.back().running());
    for (const json& e : res["experts"])
      h.back().CliJson({"moe", "load-expert", "--model", kModel, "--layer", "0", "--expert",
                        std::to_string(e["expert"].get<int>()), "--file", e["uri"].get<std::string>(), "--from",
                        c.http_url(), "--json"});
  }
  EXPECT_NE(h[2].proc->Log().find("TEST FAULT"), std::string::npos) << h[2].proc->Log();
  // H1's single-node forward is the reference.
  load_gate(h[0]);
  const std::string hidden = DataPath("moe/tiny-qwen35moe.hidden.f32");
  const std::string ref_path = tmp.Join("ref.f32");
  json lf = h[0].CliJson({"moe", "forward", "--model", kModel, "--hidden", hidden, "--d-model", "256", "--layer", "0",
                          "--out", ref_path, "--local", "--json"});
  ASSERT_EQ(lf["n_tokens"], 9);
  const std::vector<float> ref = ReadF32(ref_path);
  const std::string liar = NodeId(h[2]);
  ASSERT_EQ(liar.size(), 64u);

  // C sees all three holders of every expert.
  auto converged = [&] {
    json all = json::array();
    for (int t = 0; t < kExperts; ++t) all.push_back({{"token_index", t}, {"experts", {{{"layer", 0}, {"expert", t}}}}});
    const std::string f = tmp.Join("routings.json");
    if (!WriteFileAtomic(f, std::string_view(all.dump()))) return false;
    auto r = c.Cli({"moe", "plan-dispatch", "--model", kModel, "--routings", f, "--json"});
    json p = json::parse(r.out, nullptr, false);
    return r.exit_code == 0 && p.is_object() && p["unheld"].empty() && p["holders_considered"] == 3;
  };
  ASSERT_TRUE(WaitFor(converged, seconds(90)));

  const std::string b64 = Base64Encode(ByteSpan(tenzro::testing::ReadAll(hidden)));
  const json body = {{"model", kModel},  {"layer", 0},           {"d_model", 256},
                     {"n_tokens", 9},    {"hidden_f32_b64", b64}, {"wire_dtype", "f32"}};  // exact: == local
  auto admin = c.Admin();
  auto forward = [&](int i) -> json {
    auto r = admin.Send("POST", "/v1/moe/forward-distributed", body.dump());
    EXPECT_TRUE(r) << "forward " << i;
    if (!r) return json();
    EXPECT_EQ(r->status, 200) << "forward " << i << ": " << r->body;
    json j = json::parse(r->body, nullptr, false);
    auto out = Base64Decode(j.value("output_f32_b64", ""));
    EXPECT_TRUE(out) << "forward " << i;
    if (!out) return j;
    std::vector<float> got(out->size() / 4);
    std::memcpy(got.data(), out->data(), got.size() * 4);
    EXPECT_EQ(got.size(), ref.size());
    // Every remote result is checked, so even the forward that catches L is right.
    EXPECT_LE(RelL2(got, ref), 1e-6) << "forward " << i << ": " << j["spot_checks"].dump();
    return j;
  };

  // L is asked (as holder or verifier) within a few forwards and banned.
  int caught_at = -1;
  for (int i = 0; i < 10 && caught_at < 0; ++i) {
    json j = forward(i);
    ASSERT_TRUE(j.is_object());
    const json& sc = j["spot_checks"];
    EXPECT_EQ(sc["checked"].get<int>(), sc["agree"].get<int>() + sc["mismatch"].get<int>() +
                                            sc["inconclusive"].get<int>() + sc["skipped"].get<int>());
    if (!sc["banned"].empty()) {
      caught_at = i;
      EXPECT_EQ(sc["banned"], json::array({liar})) << sc.dump();
      EXPECT_GE(sc["mismatch"].get<int>(), 1) << sc.dump();
      for (const json& it : sc["items"])
        if (it["outcome"] == "mismatch") {
          EXPECT_TRUE(it["holder"] == liar || it["verifier"] == liar) << it.dump();
        }
      std::printf("liar caught in forward %d: %s\n", i, sc.dump().substr(0, 600).c_str());
    }
  }
  ASSERT_GE(caught_at, 0) << "the lying holder was never caught";

  // Later forwards avoid it: no call, no check involving L, nothing disputed
  // (a re-run that timed out on a loaded machine would be "skipped").
  int agreed = 0;
  for (int i = 0; i < 3; ++i) {
    json j = forward(100 + i);
    ASSERT_TRUE(j.is_object());
    for (const json& hc : j["holders"]) EXPECT_NE(hc["node_id"], liar);
    for (const json& hc : j["spot_checks"]["calls"]) EXPECT_NE(hc["node_id"], liar);
    for (const json& it : j["spot_checks"]["items"]) {
      EXPECT_TRUE(it["outcome"] == "agree" || it["outcome"] == "skipped") << it.dump();
      agreed += it["outcome"] == "agree";
    }
  }
  EXPECT_GE(agreed, 1);
  const std::string m = MetricsText(c);
  EXPECT_EQ(MetricSample(m, "tenzro_holder_bans_total{reason=\"wrong_output\"}"), 1) << m;
  EXPECT_GE(MetricSample(m, "tenzro_spot_checks_total{outcome=\"mismatch\"}"), 1) << m;
  EXPECT_GE(MetricSample(m, "tenzro_spot_checks_total{outcome=\"agree\"}"), 1) << m;
  EXPECT_GE(MetricSample(m, "tenzro_holder_bans_total{reason=\"failure\"}"), 0) << m;
  // The ban shows in C's holder stats.
  auto plan = admin.Send("POST", "/v1/moe/plan-dispatch", json{{"model", kModel}, {"routings", json::array()}}.dump());
  ASSERT_TRUE(plan && plan->status == 200);
  bool banned = false;
  const json pj = json::parse(plan->body);
  for (const json& s : pj["holder_stats"])
    banned |= s["node_id"] == liar && s["banned_for_ms"].get<double>() > 60000;
  EXPECT_TRUE(banned) << plan->body;

  // The liar comes back with a NEW key on the same address (another data
  // dir, other ports on 127.0.0.2), holding every expert again: C sees its
  // declaration, lists it as banned and gives it no work while the ban lasts.
  EXPECT_EQ(h[2].Stop(), 0) << h[2].proc->Log();
  NodeOptions o2;
  o2.run_args = swarm_flags;
  o2.run_args.insert(o2.run_args.end(), {"--dht-port", "0", "--bootstrap", boot, "--test-corrupt-exec-outputs", "1",
                                         "--http", "127.0.0.2:0", "--quic", "127.0.0.2:0"});
  ::setenv("TENZRO_ALLOW_TEST_FAULTS", "1", 1);
  RunningNode l2 = StartNode(tmp.Join("l2"), o2);
  ::unsetenv("TENZRO_ALLOW_TEST_FAULTS");
  ASSERT_TRUE(l2.running());
  const std::string liar2 = NodeId(l2);
  ASSERT_EQ(liar2.size(), 64u);
  ASSERT_NE(liar2, liar);
  for (const json& e : res["experts"])
    l2.CliJson({"moe", "load-expert", "--model", kModel, "--layer", "0", "--expert",
                std::to_string(e["expert"].get<int>()), "--file", e["uri"].get<std::string>(), "--from", c.http_url(),
                "--json"});
  auto liar2_banned = [&] {
    auto p = admin.Send("POST", "/v1/moe/plan-dispatch", json{{"model", kModel}, {"routings", json::array()}}.dump());
    if (!p || p->status != 200) return false;
    const json j = json::parse(p->body, nullptr, false);
    if (!j.is_object()) return false;
    for (const json& s : j["holder_stats"])
      if (s["node_id"] == liar2 && s["banned_for_ms"].get<double>() > 60000) return true;
    return false;
  };
  ASSERT_TRUE(WaitFor(liar2_banned, seconds(60))) << "C never saw the re-keyed liar's declaration";
  for (int i = 0; i < 3; ++i) {
    json j = forward(200 + i);
    ASSERT_TRUE(j.is_object());
    for (const json& hc : j["holders"]) EXPECT_NE(hc["node_id"], liar2);
    for (const json& hc : j["spot_checks"]["calls"]) EXPECT_NE(hc["node_id"], liar2);
    EXPECT_TRUE(j["spot_checks"]["banned"].empty()) << j["spot_checks"].dump();
  }
  EXPECT_EQ(MetricSample(MetricsText(c), "tenzro_holder_bans_total{reason=\"wrong_output\"}"), 1);
  EXPECT_EQ(l2.Stop(), 0) << l2.proc->Log();

  for (int i = 0; i < 2; ++i) EXPECT_EQ(h[i].Stop(), 0) << h[i].proc->Log();
  EXPECT_EQ(c.Stop(), 0) << c.proc->Log();
}

// One HTTP/1.1 request from `src_ip` (bound before connecting) to `to`; the
// status code, or -1.
int StatusFrom(const std::string& src_ip, const net::Endpoint& to, const std::string& method,
               const std::string& target) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in src{};
  src.sin_family = AF_INET;
  ::inet_pton(AF_INET, src_ip.c_str(), &src.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0) return -1;
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(to.port);
  ::inet_pton(AF_INET, to.host.c_str(), &dst.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) != 0) return -1;
  const std::string req = method + " " + target + " HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) return -1;
  char buf[64] = {};
  ssize_t got = 0;
  while (got < 12) {
    ssize_t r = ::recv(fd, buf + got, sizeof buf - 1 - got, 0);
    if (r <= 0) return -1;
    got += r;
  }
  return std::string_view(buf, 9) == "HTTP/1.1 " ? std::atoi(buf + 9) : -1;
}

TEST(SecurityProcessTest, PerPeerRateLimitNetworkNamesAndPrivateFiles) {
  TempDir tmp;
  NodeOptions o;
  o.run_args = {"--peer-rate", "0.01", "--peer-burst", "5"};  // a token per 100 s: none comes back in the test
  RunningNode n = StartNode(tmp.Join("n"), o);
  ASSERT_TRUE(n.running());
  const std::string absent = "/blobs/" + std::string(64, 'a');

  // 127.0.0.1 spends its burst of 5, then gets 429s (blob GETs and exec
  // POSTs share the bucket); other routes are not limited.
  std::vector<int> statuses;
  for (int i = 0; i < 8; ++i) statuses.push_back(StatusFrom("127.0.0.1", n.http, "GET", absent));
  EXPECT_EQ(std::count(statuses.begin(), statuses.end(), 404), 5) << ::testing::PrintToString(statuses);
  EXPECT_EQ(std::count(statuses.begin(), statuses.end(), 429), 3) << ::testing::PrintToString(statuses);
  EXPECT_EQ(StatusFrom("127.0.0.1", n.http, "POST", "/v1/moe/exec"), 429);
  EXPECT_EQ(StatusFrom("127.0.0.1", n.http, "GET", "/v1/health"), 200);
  net::HttpClient pub(n.http);
  auto limited = pub.Send("GET", absent);
  ASSERT_TRUE(limited);
  EXPECT_EQ(limited->status, 429);
  EXPECT_NE(limited->body.find("over its request rate"), std::string::npos) << limited->body;
  EXPECT_NE(limited->body.find("resource_exhausted"), std::string::npos) << limited->body;
  // Another peer address is still served.
  EXPECT_EQ(StatusFrom("127.0.0.2", n.http, "GET", absent), 404);
  const int exec = StatusFrom("127.0.0.2", n.http, "POST", "/v1/moe/exec");  // empty frame: served, refused
  EXPECT_TRUE(exec >= 400 && exec < 500 && exec != 429) << exec;
  // QUIC: limited by peer node id. Peer A's exec calls are answered (error
  // frames: not a frame) until its burst is spent, then refused with an
  // error reply; its blob streams too. Peer B is still served.
  const std::string node_id = n.node_json["node_id"];
  quic::PeerAddr peer{node_id, net::ParseEndpoint(n.node_json["quic"]["address"].get<std::string>()).value()};
  auto a = quic::QuicClient::Start(identity::Identity::Generate()).value();
  auto b = quic::QuicClient::Start(identity::Identity::Generate()).value();
  const Bytes garbage = {'n', 'o', 't', ' ', 'a', ' ', 'f', 'r', 'a', 'm', 'e'};
  for (int i = 0; i < 5; ++i) {
    auto r = quic::CallRpc(*a, peer, quic::kExecAlpn, garbage);
    ASSERT_TRUE(r) << i << ": " << r.error().ToString();
    EXPECT_TRUE(dispatch::DecodeExecResponse(*r)) << i;
  }
  auto over = quic::CallRpc(*a, peer, quic::kExecAlpn, garbage);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().code(), ErrorCode::kResourceExhausted) << over.error().ToString();
  EXPECT_NE(over.error().message().find("over its request rate"), std::string::npos) << over.error().ToString();
  auto blob_hash = blob::Blake3Hash::FromHex(std::string(64, 'a')).value();
  auto refused = quic::FetchRangesQuic(*a, peer, blob_hash, blob::ChunkRanges::All(), [](uint64_t, ByteSpan) {
    return Result<void>(Ok());
  });
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().code(), ErrorCode::kNotFound) << refused.error().ToString();
  auto served = quic::CallRpc(*b, peer, quic::kExecAlpn, garbage);
  ASSERT_TRUE(served) << served.error().ToString();
  auto absent_b = quic::FetchRangesQuic(*b, peer, blob_hash, blob::ChunkRanges::All(), [](uint64_t, ByteSpan) {
    return Result<void>(Ok());
  });
  ASSERT_FALSE(absent_b);
  EXPECT_EQ(absent_b.error().code(), ErrorCode::kNotFound) << absent_b.error().ToString();

  const std::string m = MetricsText(n);
  EXPECT_EQ(MetricSample(m, "tenzro_peer_rate_limited_total"), 7) << m;  // 5 HTTP, 2 QUIC

  // Names from the network: a blob hash must be 64 hex digits before the
  // store is touched (no path, no traversal).
  for (const char* bad : {"/blobs/../../node.key", "/blobs/..%2f..%2fnode.key", "/blobs/node.key",
                          "/blobs/AAAA", "/blobs/%2e%2e"})
    EXPECT_EQ(StatusFrom("127.0.0.3", n.http, "GET", bad), 400) << bad;

  // Secrets and the data dir are private.
  struct stat st;
  ASSERT_EQ(::stat(n.dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0077, 0u) << std::oct << st.st_mode;
  for (const char* f : {"admin.token", "node.key"}) {
    ASSERT_EQ(::stat((n.dir + "/" + f).c_str(), &st), 0) << f;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << f;
  }

  // New keys do not reset the limit: every request above also took a token
  // from 127.0.0.0/24's bucket (--peer-prefix-multiple 4: 20 tokens). Fresh
  // QUIC keys from that network, one call each, are refused within a few
  // keys although their own buckets are full; so is an HTTP address of the
  // /24 that never sent anything.
  int fresh_refused_at = -1;
  for (int k = 0; k < 20 && fresh_refused_at < 0; ++k) {
    auto fresh = quic::QuicClient::Start(identity::Identity::Generate()).value();
    auto r = quic::CallRpc(*fresh, peer, quic::kExecAlpn, garbage);
    if (!r) {
      EXPECT_EQ(r.error().code(), ErrorCode::kResourceExhausted) << r.error().ToString();
      fresh_refused_at = k;
    }
  }
  EXPECT_GE(fresh_refused_at, 0) << "new keys reset the rate limit";
  EXPECT_LE(fresh_refused_at, 10);
  EXPECT_EQ(StatusFrom("127.0.0.9", n.http, "GET", absent), 429);
  const std::string m2 = MetricsText(n);
  EXPECT_GE(MetricSample(m2, "tenzro_peer_prefix_rate_limited_total"), 2) << m2;
  EXPECT_EQ(n.Stop(), 0) << n.proc->Log();
}

TEST(SecurityConfigTest, LimitsAndSpotCheckKeys) {
  NodeConfig cfg;
  EXPECT_EQ(cfg.spot_check_fraction, 0.05);
  EXPECT_GT(cfg.peer_rate, 0);
  ASSERT_TRUE(LoadConfigText("spot_check_fraction = 0.25\nspot_check_tolerance = 0.01\npeer_rate = 50.5\n"
                             "peer_burst = 10\nspot_check_ban_s = 60\n",
                             "t.toml", cfg));
  EXPECT_EQ(cfg.spot_check_fraction, 0.25);
  EXPECT_EQ(cfg.spot_check_tolerance, 0.01);
  EXPECT_EQ(cfg.peer_rate, 50.5);
  EXPECT_EQ(cfg.peer_burst, 10u);
  EXPECT_EQ(cfg.spot_check_ban_s, 60u);
  ASSERT_TRUE(ApplyConfigValue(cfg, "spot_check_fraction", "1"));
  EXPECT_EQ(cfg.spot_check_fraction, 1.0);
  EXPECT_EQ(cfg.quic_inflight_bytes, 256ull << 20);
  EXPECT_EQ(cfg.peer_prefix_multiple, 4);
  ASSERT_TRUE(LoadConfigText("quic_max_inflight_bytes = \"32MiB\"\nquic_max_inflight_bytes_per_ip = \"8MiB\"\n"
                             "peer_prefix_multiple = 0\n",
                             "t.toml", cfg));
  EXPECT_EQ(cfg.quic_inflight_bytes, 32ull << 20);
  EXPECT_EQ(cfg.quic_inflight_bytes_per_ip, 8ull << 20);
  EXPECT_EQ(cfg.peer_prefix_multiple, 0);
  for (const char* bad : {"spot_check_fraction = 1.5", "spot_check_fraction = -0.1", "peer_rate = -1",
                          "peer_burst = 0", "spot_check_fraction = \"x\"", "quic_max_inflight_bytes = 0",
                          "peer_prefix_multiple = 0.5"}) {
    NodeConfig c;
    auto r = LoadConfigText(bad, "t.toml", c);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument) << bad;
  }
}

TEST(SecurityProcessTest, TestFaultFlagNeedsTheEnvironmentVariable) {
  ::unsetenv("TENZRO_ALLOW_TEST_FAULTS");
  TempDir tmp;
  auto r = RunTenzro({"--data-dir", tmp.Join("d"), "node", "run", "--test-corrupt-exec-outputs", "1"}, seconds(30));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("TENZRO_ALLOW_TEST_FAULTS"), std::string::npos) << r.err;
  // The admin API binds loopback only, from a flag or a config file.
  auto admin = RunTenzro({"--data-dir", tmp.Join("d"), "node", "run", "--admin", "0.0.0.0:0"}, seconds(30));
  EXPECT_EQ(admin.exit_code, 2);
  EXPECT_NE(admin.err.find("loopback"), std::string::npos) << admin.err;
  tenzro::testing::WriteAll(tmp.Join("n.toml"), ByteSpan(reinterpret_cast<const uint8_t*>("admin = \"0.0.0.0:1\"\n"), 20));
  auto cfg = RunTenzro({"--data-dir", tmp.Join("d"), "node", "run", "--config", tmp.Join("n.toml")}, seconds(30));
  EXPECT_EQ(cfg.exit_code, 2);
  EXPECT_NE(cfg.err.find("loopback"), std::string::npos) << cfg.err;
}

}  // namespace
}  // namespace tenzro::node
