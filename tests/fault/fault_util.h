// Shared helpers of the fault-injection tests (tests/fault/, docs/reliability.md):
// a reference node that prepares the tiny fixture and computes the
// single-node forward, admin calls made over HTTP (no CLI process per call),
// the four checks every fault case makes (output equals the reference, the
// blob store is consistent, the node still answers, the error is explicit),
// and a small HTTP server for bad actors written in the test.
//
// Header-only (tenzro_test_module compiles *_test.cc only).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "blob/blob_store.h"
#include "core/file.h"
#include "net/client.h"
#include "net/router.h"
#include "net/server.h"
#include "net/url.h"
#include "node/runtime_service.h"
#include "testutil/node_process.h"

namespace tenzro::fault {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using tenzro::testing::DataPath;
using tenzro::testing::MetricSample;
using tenzro::testing::MetricsText;
using tenzro::testing::NodeOptions;
using tenzro::testing::RunningNode;
using tenzro::testing::StartNode;
using tenzro::testing::TempDir;
using tenzro::testing::WaitFor;
using Clock = std::chrono::steady_clock;

inline constexpr const char* kModel = "tiny-qwen35moe";  // 2 layers x 8 experts, d_model 256, 9 tokens
inline constexpr int kExperts = 8;
inline constexpr int kDModel = 256;
inline constexpr int kTokens = 9;

inline double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// An admin call: status (0 when the request itself failed) and parsed body
// (null when not JSON); `error` holds the transport error, if any.
struct Call {
  int status = 0;
  json body;
  std::string raw;
  std::string error;
  bool ok() const { return status == 200; }
  std::string message() const {
    if (!error.empty()) return error;
    if (body.is_object() && body.contains("error")) return body["error"].dump();
    return raw.substr(0, 400);
  }
};

inline Call AdminCall(const RunningNode& n, const std::string& method, const std::string& path,
                      const json& body = json(), milliseconds timeout = seconds(30)) {
  net::ClientOptions o;
  o.timeout = timeout;
  net::HttpClient c(n.admin, o);
  c.SetBearerToken(n.token);
  auto r = body.is_null() ? c.Send(method, path) : c.Send(method, path, body.dump());
  Call out;
  if (!r) {
    out.error = r.error().ToString();
    return out;
  }
  out.status = r->status;
  out.raw = r->body;
  out.body = json::parse(r->body, nullptr, false);
  if (out.body.is_discarded()) out.body = json();
  return out;
}

// GET /v1/health on the public listener answers 200.
inline bool Healthy(const RunningNode& n) {
  net::ClientOptions o;
  o.timeout = seconds(10);
  net::HttpClient c(n.http, o);
  auto r = c.Send("GET", "/v1/health");
  return r && r->status == 200;
}

inline Call LoadExpert(const RunningNode& n, int layer, int expert, const std::string& uri, const std::string& from) {
  json b = {{"model", kModel}, {"layer", layer}, {"expert", expert}, {"file", uri}};
  if (!from.empty()) b["from"] = from;
  return AdminCall(n, "POST", "/v1/moe/load-expert", b, seconds(60));
}

inline Call LoadGate(const RunningNode& n, int layer, const std::string& uri, const std::string& from) {
  json b = {{"model", kModel}, {"layer", layer}, {"file", uri}};
  if (!from.empty()) b["from"] = from;
  return AdminCall(n, "POST", "/v1/moe/load-gate", b, seconds(60));
}

inline std::string HiddenB64() {
  static const std::string b64 = [] {
    const Bytes hidden = tenzro::testing::ReadAll(DataPath("moe/tiny-qwen35moe.hidden.f32"));
    return node::Base64Encode(ByteSpan(hidden));
  }();
  return b64;
}

// A forward's request body (layer `layer` of the fixture's hidden state).
// f32 rows on the wire (exact): the distributed forward is the local one
// bit for bit (the default, bf16, rounds; /v1/moe/forward ignores the field).
inline std::string ForwardBody(int layer) {
  return json{{"model", kModel},  {"layer", layer},         {"d_model", kDModel},
              {"n_tokens", kTokens}, {"hidden_f32_b64", HiddenB64()}, {"wire_dtype", "f32"}}
      .dump();
}

// The raw f32 output bytes of a forward answer ("" when absent/bad).
inline std::string OutputBytes(const json& answer) {
  if (!answer.is_object() || !answer.contains("output_f32_b64")) return "";
  auto out = node::Base64Decode(answer["output_f32_b64"].get<std::string>());
  return out ? std::string(out->begin(), out->end()) : std::string();
}

// POST /v1/moe/forward-distributed (or /v1/moe/forward when !distributed).
// `extra` fields are merged into the body (e.g. {"hedge": false}).
inline Call Forward(const RunningNode& n, int layer, bool distributed = true, milliseconds timeout = seconds(60),
                    const json& extra = json::object()) {
  json body = json::parse(ForwardBody(layer));
  body.update(extra);
  return AdminCall(n, "POST", distributed ? "/v1/moe/forward-distributed" : "/v1/moe/forward", body, timeout);
}

// Every visible blob of the store at `blob_dir` re-verifies, and no other
// file (temp, staging, orphan outboard) sits in the directory. Returns the
// problems found ("" when consistent).
inline std::string StoreProblems(const std::string& blob_dir) {
  std::string problems;
  std::error_code ec;
  if (!std::filesystem::exists(blob_dir, ec)) return "";
  auto store = blob::BlobStore::Open(blob_dir);
  if (!store) return "open: " + store.error().ToString();
  auto list = (*store)->List();
  if (!list) return "list: " + list.error().ToString();
  std::set<std::string> expected;
  for (const auto& b : *list) {
    if (auto v = (*store)->Verify(b.hash); !v) problems += "verify: " + v.error().ToString() + "; ";
    expected.insert(b.hash.ToHex() + ".data");
    expected.insert(b.hash.ToHex() + ".obao4");
  }
  for (const auto& f : std::filesystem::directory_iterator(blob_dir, ec)) {
    const std::string name = f.path().filename().string();
    if (!expected.count(name)) problems += "stray file: " + name + "; ";
  }
  return problems;
}

// The reference: one node holding every expert and gate of both layers
// (prepared from the Q4_K_M fixture) and its single-node local forward.
struct Reference {
  RunningNode node;
  json prepared[2];             // prepare job results per layer
  std::string local[2];         // local forward output bytes per layer

  const json& Expert(int layer, int e) const {
    for (const json& x : prepared[layer]["experts"])
      if (x["expert"] == e) return x;
    static const json none;
    return none;
  }
  std::string ExpertUri(int layer, int e) const { return Expert(layer, e)["uri"].get<std::string>(); }
  std::string GateUri(int layer) const { return prepared[layer]["gate"]["uri"].get<std::string>(); }
};

// Starts the reference at `dir`, prepares both layers (q4_k_m), loads them
// and computes the local forwards. `run_args` go to `node run`.
inline void StartReference(Reference& ref, const std::string& dir, std::vector<std::string> run_args = {}) {
  NodeOptions o;
  o.run_args = std::move(run_args);
  ref.node = StartNode(dir, o);
  ASSERT_TRUE(ref.node.running());
  auto add = ref.node.Cli({"moe", "catalog-add", "--model", kModel, "--checkpoint",
                           DataPath("moe/tiny-qwen35moe-Q4_K_M.gguf")});
  ASSERT_EQ(add.exit_code, 0) << add.err;
  for (int layer = 0; layer < 2; ++layer) {
    json job = ref.node.CliJson({"moe", "prepare-experts", "--model-id", kModel, "--layer", std::to_string(layer),
                                 "--quant", "q4_k_m", "--gate", "--wait", "--json"});
    ASSERT_EQ(job["state"], "done") << job.dump();
    ref.prepared[layer] = job["result"];
    Call g = LoadGate(ref.node, layer, ref.GateUri(layer), "");
    ASSERT_TRUE(g.ok()) << g.message();
    for (int e = 0; e < kExperts; ++e) {
      Call c = LoadExpert(ref.node, layer, e, ref.ExpertUri(layer, e), "");
      ASSERT_TRUE(c.ok()) << c.message();
    }
    Call f = Forward(ref.node, layer, /*distributed=*/false);
    ASSERT_TRUE(f.ok()) << f.message();
    ref.local[layer] = OutputBytes(f.body);
    ASSERT_EQ(ref.local[layer].size(), size_t{kTokens} * kDModel * 4);
  }
}

// Swarm flags: refresh 500 ms, TTL `ttl_s`, a DHT port picked by the OS.
inline std::vector<std::string> SwarmFlags(int ttl_s = 30, std::vector<std::string> extra = {}) {
  std::vector<std::string> v = {"--swarm-refresh-ms", "500", "--swarm-ttl-s", std::to_string(ttl_s), "--dht-port", "0"};
  v.insert(v.end(), extra.begin(), extra.end());
  return v;
}

inline std::string DhtAddr(const RunningNode& n) {
  return "127.0.0.1:" + std::to_string(n.node_json.value("dht_port", 0));
}

// plan-dispatch on `n` for every expert of `layers`: true once no expert is
// unheld and `holders` remote holders are considered.
inline bool Converged(const RunningNode& n, std::vector<int> layers, int holders) {
  json routings = json::array();
  for (int t = 0; t < kExperts; ++t) {
    json ex = json::array();
    for (int l : layers) ex.push_back({{"layer", l}, {"expert", t}});
    routings.push_back({{"token_index", t}, {"experts", ex}});
  }
  Call p = AdminCall(n, "POST", "/v1/moe/plan-dispatch", json{{"model", kModel}, {"routings", routings}});
  if (!p.ok() || !p.body.is_object()) return false;
  return p.body["unheld"].empty() && p.body["holders_considered"].get<int>() >= holders;
}

// A small HTTP server written in the test (a bad actor on a real socket):
// its own io_context on a thread; stopped on destruction.
class TestServer {
 public:
  TestServer() = default;
  ~TestServer() { Stop(); }
  net::Router& router() { return router_; }
  bool Start() {
    server_ = std::make_unique<net::HttpServer>(ioc_, &router_, net::ServerOptions{});
    if (!server_->Listen({"127.0.0.1", 0})) return false;
    thread_ = std::thread([this] {
      auto guard = boost::asio::make_work_guard(ioc_);
      ioc_.run();
    });
    return true;
  }
  std::string url() const { return server_->endpoint().Url(); }
  net::Endpoint endpoint() const { return server_->endpoint(); }
  void Stop() {
    if (!thread_.joinable()) return;
    server_->Stop();
    ioc_.stop();
    thread_.join();
  }

 private:
  boost::asio::io_context ioc_;
  net::Router router_;
  std::unique_ptr<net::HttpServer> server_;
  std::thread thread_;
};

// VmRSS of `pid` in bytes (0 when unreadable).
inline uint64_t RssBytes(pid_t pid) {
  auto text = ReadTextFile("/proc/" + std::to_string(pid) + "/status");
  if (!text) return 0;
  size_t p = text->find("VmRSS:");
  if (p == std::string::npos) return 0;
  return std::strtoull(text->c_str() + p + 6, nullptr, 10) * 1024;
}

}  // namespace tenzro::fault

namespace tenzro::fault {

// StartNode for a node started through a wrapper: `argv` must end by exec-ing
// `tenzro --data-dir DIR ... node run ...` in the same process (so node.json
// names the child's pid), e.g. unshare + sh -c '... && exec tenzro ...'.
inline RunningNode StartNodeArgv(const std::string& dir, const std::vector<std::string>& argv,
                                 milliseconds timeout = seconds(60)) {
  RunningNode n;
  n.dir = dir;
  n.proc = std::make_unique<tenzro::testing::ChildProcess>(argv, dir + ".log");
  auto ours = [&] {
    auto text = ReadTextFile(dir + "/node.json");
    if (!text) return false;
    auto j = json::parse(*text, nullptr, false);
    return j.is_object() && j.value("pid", -1) == n.proc->pid();
  };
  const bool up = WaitFor([&] { return ours() || !n.proc->running(); }, timeout);
  EXPECT_TRUE(up && n.proc->running()) << n.proc->Log();
  if (!up || !n.proc->running()) return n;
  n.node_json = json::parse(*ReadTextFile(dir + "/node.json"));
  n.admin = *net::ParseEndpoint(n.node_json["admin"].get<std::string>());
  n.http = *net::ParseEndpoint(n.node_json["http"].get<std::string>());
  if (auto t = ReadTextFile(dir + "/admin.token")) {
    n.token = *t;
    while (!n.token.empty() && n.token.back() == '\n') n.token.pop_back();
  }
  return n;
}

// Prepares layer `layer` of the Q4_K_M fixture (and its gate) on `n`; the job result.
inline json PrepareLayer(const RunningNode& n, int layer) {
  auto add = n.Cli({"moe", "catalog-add", "--model", kModel, "--checkpoint", DataPath("moe/tiny-qwen35moe-Q4_K_M.gguf")});
  EXPECT_EQ(add.exit_code, 0) << add.err;
  json job = n.CliJson({"moe", "prepare-experts", "--model-id", kModel, "--layer", std::to_string(layer), "--quant",
                        "q4_k_m", "--gate", "--wait", "--json"});
  EXPECT_EQ(job.value("state", ""), "done") << job.dump();
  return job.value("result", json());
}

}  // namespace tenzro::fault
