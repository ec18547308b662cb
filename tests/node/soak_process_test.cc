// Soak: honest distributed forwards through real node processes while a
// hostile client floods every public route of every node (docs/security.md).
//
// A coordinator C (gate only) and two holders H1, H2 of every layer-0
// expert, on 127.0.0.1. C's forwards are timed unloaded (the baseline), then
// again while flood threads from 127.0.1.0/24 (another network prefix, as a
// stranger would be; a fresh QUIC key every few calls) hammer each node
// with: POST /v1/moe/exec (junk bodies and valid, costly frames: every
// expert, 64 rows), GET /blobs/ (a missing and a present hash), GET /metrics,
// GET /v1/dashboard/state, and over QUIC exec (junk and costly) and
// iroh-blobs (missing and present). Asserted: every honest forward succeeds
// with the right output, their p99 stays within a generous bound of the
// baseline's, each node's RSS grows by a bounded amount, every node is
// still up. Duration: TENZRO_SOAK_SECONDS (default 10; `make soak` runs
// 300).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "blob/blob_uri.h"
#include "blob/chunk_ranges.h"
#include "core/bytes.h"
#include "core/file.h"
#include "dispatch/exec_frame.h"
#include "identity/identity.h"
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
using tenzro::testing::NodeOptions;
using tenzro::testing::ReadF32;
using tenzro::testing::RelL2;
using tenzro::testing::RunningNode;
using tenzro::testing::StartNode;
using tenzro::testing::TempDir;
using tenzro::testing::WaitFor;
using Clock = std::chrono::steady_clock;

constexpr const char* kModel = "tiny-qwen35moe";
constexpr int kExperts = 8;

// Resident set size of `pid` in MiB (0 when unreadable).
double RssMiB(int pid) { return static_cast<double>(tenzro::testing::ProcStatusBytes(pid, "VmRSS")) / (1 << 20); }

// One HTTP/1.1 request from `src_ip` with `body`; reads the whole response
// (Connection: close). The status, or -1 on a transport failure.
int HttpFrom(const std::string& src_ip, const net::Endpoint& to, const std::string& method, const std::string& target,
             const std::string& body = "", const std::string& content_type = "application/octet-stream") {
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
  const std::string req = method + " " + target + " HTTP/1.1\r\nHost: x\r\nContent-Type: " + content_type +
                          "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) return -1;
  std::string head;
  char buf[16384];
  for (;;) {
    ssize_t r = ::recv(fd, buf, sizeof buf, 0);
    if (r <= 0) break;
    if (head.size() < 16) head.append(buf, static_cast<size_t>(std::min<ssize_t>(r, 16)));
  }
  return head.size() >= 12 && head.rfind("HTTP/1.1 ", 0) == 0 ? std::atoi(head.c_str() + 9) : -1;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

// What the flood did, per action: answered (any status < 500 or a reply),
// refused by a limit (429/503, resource_exhausted), or failed otherwise.
struct FloodCounts {
  std::mutex mu;
  std::map<std::string, std::array<int, 3>> by_action;
  void Add(const std::string& action, int kind) {
    std::lock_guard<std::mutex> lock(mu);
    ++by_action[action][kind];
  }
};

int HttpKind(int status) { return status == 429 || status == 503 ? 1 : (status > 0 && status < 500 ? 0 : 2); }
int QuicKind(const Result<void>& r) {
  if (r) return 0;
  return r.error().code() == ErrorCode::kResourceExhausted ? 1 : (r.error().code() == ErrorCode::kNotFound ? 0 : 2);
}

TEST(SoakProcessTest, HonestForwardsSurviveAFloodOfEveryPublicRoute) {
  const char* env = std::getenv("TENZRO_SOAK_SECONDS");
  const int soak_s = env ? std::max(1, std::atoi(env)) : 10;
  TempDir tmp;
  const std::vector<std::string> swarm_flags = {"--swarm-refresh-ms", "1000", "--swarm-ttl-s", "30"};
  NodeOptions oc;
  oc.run_args = swarm_flags;
  oc.run_args.insert(oc.run_args.end(), {"--dht-port", "0"});
  RunningNode c = StartNode(tmp.Join("c"), oc);
  ASSERT_TRUE(c.running());
  const std::string boot = "127.0.0.1:" + std::to_string(c.node_json["dht_port"].get<int>());
  const json res = tenzro::testing::PrepareTinyLayer(c, kModel, 0);
  ASSERT_TRUE(res.is_object());
  auto load_gate = [&](const RunningNode& n) {
    n.CliJson({"moe", "load-gate", "--model", kModel, "--layer", "0", "--file", res["gate"]["uri"].get<std::string>(),
               "--from", c.http_url(), "--json"});
  };
  load_gate(c);
  std::vector<RunningNode> h;
  for (int i = 0; i < 2; ++i) {
    NodeOptions o;
    o.run_args = swarm_flags;
    o.run_args.insert(o.run_args.end(), {"--dht-port", "0", "--bootstrap", boot});
    h.push_back(StartNode(tmp.Join("h" + std::to_string(i)), o));
    ASSERT_TRUE(h.back().running());
    for (const json& e : res["experts"])
      h.back().CliJson({"moe", "load-expert", "--model", kModel, "--layer", "0", "--expert",
                        std::to_string(e["expert"].get<int>()), "--file", e["uri"].get<std::string>(), "--from",
                        c.http_url(), "--json"});
  }
  load_gate(h[0]);
  const std::string hidden = DataPath("moe/tiny-qwen35moe.hidden.f32");
  const std::string ref_path = tmp.Join("ref.f32");
  json lf = h[0].CliJson({"moe", "forward", "--model", kModel, "--hidden", hidden, "--d-model", "256", "--layer", "0",
                          "--out", ref_path, "--local", "--json"});
  ASSERT_EQ(lf["n_tokens"], 9);
  const std::vector<float> ref = ReadF32(ref_path);
  auto converged = [&] {
    json all = json::array();
    for (int t = 0; t < kExperts; ++t) all.push_back({{"token_index", t}, {"experts", {{{"layer", 0}, {"expert", t}}}}});
    const std::string f = tmp.Join("routings.json");
    if (!WriteFileAtomic(f, std::string_view(all.dump()))) return false;
    auto r = c.Cli({"moe", "plan-dispatch", "--model", kModel, "--routings", f, "--json"});
    json p = json::parse(r.out, nullptr, false);
    return r.exit_code == 0 && p.is_object() && p["unheld"].empty() && p["holders_considered"] == 2;
  };
  ASSERT_TRUE(WaitFor(converged, seconds(90)));

  const std::string b64 = Base64Encode(ByteSpan(tenzro::testing::ReadAll(hidden)));
  const std::string body =
      json{{"model", kModel},  {"layer", 0},           {"d_model", 256},
           {"n_tokens", 9},    {"hidden_f32_b64", b64}, {"wire_dtype", "f32"}}  // exact: == local
          .dump();
  auto admin = c.Admin();
  // One honest forward: its wall time in ms, or -1 (a failure is reported).
  auto forward = [&]() -> double {
    const auto t0 = Clock::now();
    auto r = admin.Send("POST", "/v1/moe/forward-distributed", body);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (!r || r->status != 200) {
      ADD_FAILURE() << "honest forward failed: " << (r ? r->body : r.error().ToString());
      return -1;
    }
    json j = json::parse(r->body, nullptr, false);
    auto out = Base64Decode(j.is_object() ? j.value("output_f32_b64", "") : "");
    if (!out) {
      ADD_FAILURE() << "no output";
      return -1;
    }
    std::vector<float> got(out->size() / 4);
    std::memcpy(got.data(), out->data(), got.size() * 4);
    EXPECT_LE(RelL2(got, ref), 1e-6);
    return ms;
  };

  // Baseline, unloaded (after a warm-up that dials the holders).
  for (int i = 0; i < 3; ++i) forward();
  std::vector<double> base;
  for (int i = 0; i < 30; ++i) base.push_back(forward());
  std::vector<RunningNode*> nodes = {&c, &h[0], &h[1]};
  std::vector<double> rss0;
  for (RunningNode* n : nodes) rss0.push_back(RssMiB(n->proc->pid()));

  // The hostile client's material.
  const std::string missing = "/blobs/" + std::string(64, 'a');
  auto present_hash = blob::ParseHashOrUri(res["experts"][0]["uri"].get<std::string>()).value();
  const std::string present = "/blobs/" + present_hash.ToHex();
  std::mt19937 rng(7);
  std::string junk(4096, '\0');
  for (char& ch : junk) ch = static_cast<char>(rng());
  dispatch::ExecRequest costly;
  costly.model = kModel;
  costly.layer = 0;
  costly.d_model = 256;
  for (int e = 0; e < kExperts; ++e) {
    dispatch::ExecBatch b;
    b.expert = e;
    b.n_rows = 64;
    b.rows.resize(64 * 256);
    for (float& v : b.rows) v = std::uniform_real_distribution<float>(-1, 1)(rng);
    costly.experts.push_back(std::move(b));
  }
  const Bytes costly_frame = dispatch::EncodeExecRequest(costly);
  const std::string costly_body(costly_frame.begin(), costly_frame.end());
  struct Target {
    net::Endpoint http;
    quic::PeerAddr quic;
  };
  std::vector<Target> targets;
  for (RunningNode* n : nodes)
    targets.push_back({n->http, {n->node_json["node_id"].get<std::string>(),
                                 net::ParseEndpoint(n->node_json["quic"]["address"].get<std::string>()).value()}});

  FloodCounts counts;
  std::atomic<bool> stop{false};
  std::atomic<int> rounds{0};
  std::vector<std::thread> flood;
  constexpr int kFloodThreads = 4;
  for (int t = 0; t < kFloodThreads; ++t) {
    flood.emplace_back([&, t] {
      const std::string ip = "127.0.1." + std::to_string(10 + t);
      std::unique_ptr<quic::QuicClient> qc;
      for (int i = 0; !stop; ++i) {
        if (i % 20 == 0) qc = quic::QuicClient::Start(identity::Identity::Generate(), {ip, 0}).value();  // re-key
        const Target& to = targets[static_cast<size_t>(i + t) % targets.size()];
        quic::CallOptions co;
        co.total_timeout = std::chrono::seconds(10);
        quic::BlobFetchOptions bo;
        bo.call = co;
        auto discard = [](uint64_t, ByteSpan) { return Result<void>(Ok()); };
        switch (i % 10) {
          case 0: counts.Add("http exec junk", HttpKind(HttpFrom(ip, to.http, "POST", "/v1/moe/exec", junk))); break;
          case 1:
            counts.Add("http exec costly", HttpKind(HttpFrom(ip, to.http, "POST", "/v1/moe/exec", costly_body,
                                                             "application/x-tenzro-exec")));
            break;
          case 2: counts.Add("http blob missing", HttpKind(HttpFrom(ip, to.http, "GET", missing))); break;
          case 3: counts.Add("http blob present", HttpKind(HttpFrom(ip, to.http, "GET", present))); break;
          case 4: counts.Add("http metrics", HttpKind(HttpFrom(ip, to.http, "GET", "/metrics"))); break;
          case 5: counts.Add("http dashboard", HttpKind(HttpFrom(ip, to.http, "GET", "/v1/dashboard/state"))); break;
          case 6: {
            auto r = quic::CallRpc(*qc, to.quic, quic::kExecAlpn,
                                   ByteSpan(reinterpret_cast<const uint8_t*>(junk.data()), junk.size()), co);
            counts.Add("quic exec junk", QuicKind(r ? Result<void>(Ok()) : Result<void>(r.error())));
            break;
          }
          case 7: {
            auto r = quic::CallRpc(*qc, to.quic, quic::kExecAlpn, costly_frame, co);
            counts.Add("quic exec costly", QuicKind(r ? Result<void>(Ok()) : Result<void>(r.error())));
            break;
          }
          case 8: {
            auto r = quic::FetchRangesQuic(*qc, to.quic, present_hash, blob::ChunkRanges::All(), discard, bo);
            counts.Add("quic blob present", QuicKind(r ? Result<void>(Ok()) : Result<void>(r.error())));
            break;
          }
          case 9: {
            auto miss = blob::Blake3Hash::FromHex(std::string(64, 'a')).value();
            auto r = quic::FetchRangesQuic(*qc, to.quic, miss, blob::ChunkRanges::All(), discard, bo);
            counts.Add("quic blob missing", QuicKind(r ? Result<void>(Ok()) : Result<void>(r.error())));
            break;
          }
        }
        ++rounds;
      }
    });
  }
  // RSS while the flood runs.
  std::vector<double> rss_max = rss0;
  std::thread sampler([&] {
    while (!stop) {
      for (size_t i = 0; i < nodes.size(); ++i) rss_max[i] = std::max(rss_max[i], RssMiB(nodes[i]->proc->pid()));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  std::vector<double> loaded;
  const auto end = Clock::now() + seconds(soak_s);
  while (Clock::now() < end) loaded.push_back(forward());
  stop = true;
  for (auto& th : flood) th.join();
  sampler.join();

  const double b50 = Percentile(base, 0.5), b99 = Percentile(base, 0.99);
  const double l50 = Percentile(loaded, 0.5), l99 = Percentile(loaded, 0.99);
  std::printf("soak %d s: %d flood requests; honest forwards: baseline p50 %.1f ms p99 %.1f ms (%zu), "
              "under flood p50 %.1f ms p99 %.1f ms (%zu)\n",
              soak_s, rounds.load(), b50, b99, base.size(), l50, l99, loaded.size());
  for (const auto& [action, k] : counts.by_action)
    std::printf("  %-18s answered %6d  refused %6d  failed %4d\n", action.c_str(), k[0], k[1], k[2]);
  for (size_t i = 0; i < nodes.size(); ++i)
    std::printf("  node %zu RSS %.0f MiB -> peak %.0f MiB\n", i, rss0[i], rss_max[i]);

  for (double ms : base) EXPECT_GE(ms, 0);
  for (double ms : loaded) EXPECT_GE(ms, 0);
  EXPECT_GE(loaded.size(), 3u);
  EXPECT_GT(rounds.load(), 100);
  // Generous: the flood shares two cores with the three nodes.
  EXPECT_LE(l99, std::max(25 * b99, b99 + 5000)) << "p99 " << l99 << " ms vs baseline " << b99 << " ms";
  for (size_t i = 0; i < nodes.size(); ++i) EXPECT_LE(rss_max[i] - rss0[i], 512) << "node " << i;
  for (RunningNode* n : nodes) EXPECT_TRUE(n->running()) << n->proc->Log();
  EXPECT_GE(forward(), 0);  // and afterwards
  for (RunningNode* n : nodes) EXPECT_EQ(n->Stop(), 0) << n->proc->Log();
}

}  // namespace
}  // namespace tenzro::node
