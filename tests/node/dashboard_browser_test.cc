// The live dashboard (src/node/dashboard.h) in a real headless browser:
// Debian's chromium driven by playwright-core (npm, pinned, installed into
// the build dir on first run) through tests/node/dashboard_browser.mjs.
// Three holders on loopback (replication 2, short declaration TTL); the page
// of holder A must list all three and draw the heatmap; after holder C is
// SIGKILLed the same page (no reload) must drop it and mark the expert only
// C held as uncovered. Screenshots:
// BUILD_DIR/artifacts/dashboard.png and dashboard-after-kill.png.
// DashboardBrowserTest.ServingPanel: the Serving panel of a --serve node
// (tests/node/dashboard_serving_browser.mjs; dashboard-serving.png).
// A missing chromium, node or playwright-core FAILS the test (scripts/setup
// installs them); TENZRO_SKIP_BROWSER_TEST=1 skips it explicitly.
#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/file.h"
#include "net/client.h"
#include "node/runtime_service.h"
#include "testutil/node_process.h"
#include "testutil/testutil.h"

namespace tenzro::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kModel = "tiny-qwen35moe";  // 2 layers x 8 experts
constexpr const char* kPlaywrightVersion = "1.65.1";
constexpr int kTtlS = 3;

std::string BuildDir() { return tenzro::testing::ProjectBuildDir(); }
std::string Chromium() {
  const char* env = std::getenv("TENZRO_CHROMIUM");
  return env && *env ? env : "/usr/bin/chromium";
}

std::string Which(const std::string& name) {
  auto r = Run({"/bin/sh", "-c", "command -v " + name}, std::chrono::seconds(10));
  std::string p = r.out;
  while (!p.empty() && (p.back() == '\n' || p.back() == '\r')) p.pop_back();
  return r.exit_code == 0 ? p : "";
}

// npm install playwright-core@kPlaywrightVersion into BUILD_DIR/browser-test
// unless that version is there. Returns "" or why not.
std::string EnsurePlaywright(const std::string& dir) {
  const std::string manifest = dir + "/node_modules/playwright-core/package.json";
  if (fs::exists(manifest)) {
    auto j = json::parse(std::ifstream(manifest), nullptr, false);
    if (!j.is_discarded() && j.value("version", "") == kPlaywrightVersion) return "";
  }
  std::string npm = Which("npm");
  if (npm.empty()) return "npm is not installed (run scripts/setup)";
  fs::create_directories(dir);
  std::ofstream(dir + "/package.json") << R"({"name":"tenzro-browser-test","version":"0.0.0","private":true})";
  auto r = Run({npm, "install", "--prefix", dir, "--no-audit", "--no-fund", "--no-save", "--prefer-offline",
                "--loglevel=error", std::string("playwright-core@") + kPlaywrightVersion},
               std::chrono::seconds(300));
  if (r.exit_code != 0 || !fs::exists(manifest))
    return "npm install playwright-core@" + std::string(kPlaywrightVersion) + " failed (exit " +
           std::to_string(r.exit_code) + "): " + r.err.substr(0, 400);
  return "";
}

json AdminGet(const RunningNode& n, const std::string& path) {
  auto r = n.Admin().Send("GET", path);
  if (!r || !r->ok()) return json();
  return json::parse(r->body, nullptr, false);
}

// Holder i of 3 holds expert e when e % 3 is i or i - 1 (mod 3): replication
// 2; except layer 1 expert 7, held by C (i = 2) alone, so that C's death
// leaves it uncovered.
bool Holds(int node, int layer, int e) {
  if (layer == 1 && e == 7) return node == 2;
  return e % 3 == node || (e + 1) % 3 == node;
}

// SIGTERM first (playwright then closes chromium), SIGKILL as the last resort.
struct ScriptGuard {
  ChildProcess* p;
  ~ScriptGuard() {
    if (p && p->running()) {
      p->Signal(SIGTERM);
      p->Wait(std::chrono::seconds(10));
    }
  }
};

// "" when chromium, node and playwright-core are there (installing the
// latter), else what is missing.
std::string BrowserMissing(const std::string& node_js, const std::string& pw_dir) {
  std::vector<std::string> missing;
  if (!fs::exists(Chromium())) missing.push_back(Chromium() + " is missing (apt-get install chromium; scripts/setup)");
  if (node_js.empty()) missing.push_back("node is missing (nodejs; scripts/setup)");
  if (missing.empty())
    if (std::string why = EnsurePlaywright(pw_dir); !why.empty()) missing.push_back(why);
  if (missing.empty()) return "";
  std::string msg = "DASHBOARD BROWSER TEST CANNOT RUN: ";
  for (const auto& m : missing) msg += m + "; ";
  return msg + "(set TENZRO_SKIP_BROWSER_TEST=1 to skip it on purpose)";
}

TEST(DashboardBrowserTest, ShowsAllHoldersAndUpdatesAfterAKill) {
  if (const char* s = std::getenv("TENZRO_SKIP_BROWSER_TEST"); s && std::string(s) == "1")
    GTEST_SKIP() << "TENZRO_SKIP_BROWSER_TEST=1";
  const std::string node_js = Which("node");
  const std::string pw_dir = BuildDir() + "/browser-test";
  if (std::string why = BrowserMissing(node_js, pw_dir); !why.empty()) FAIL() << why;

  TempDir tmp;
  const std::vector<std::string> swarm = {"--swarm-refresh-ms", "500", "--swarm-ttl-s", std::to_string(kTtlS),
                                          "--dht-port", "0"};
  NodeOptions oa;
  oa.run_args = swarm;
  RunningNode a = StartNode(tmp.Join("a"), oa);
  ASSERT_TRUE(a.running());
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
  std::vector<RunningNode*> nodes = {&a};
  RunningNode b, c;
  for (RunningNode* n : {&b, &c}) {
    NodeOptions o;
    o.run_args = swarm;
    o.run_args.insert(o.run_args.end(), {"--bootstrap", boot});
    *n = StartNode(tmp.Join(n == &b ? "b" : "c"), o);
    ASSERT_TRUE(n->running());
    nodes.push_back(n);
  }
  std::vector<std::string> ids;
  for (RunningNode* n : nodes) ids.push_back(n->node_json["node_id"].get<std::string>());
  // A holds the gates; experts with replication 2 over A, B, C (B and C fetch from A).
  for (int layer = 0; layer < 2; ++layer) {
    const json& p = prepared[layer];
    a.CliJson({"moe", "load-gate", "--model", kModel, "--layer", std::to_string(layer), "--file",
               p["gate"]["uri"].get<std::string>(), "--json"});
    for (const json& e : p["experts"]) {
      const int ex = e["expert"];
      for (int i = 0; i < 3; ++i) {
        if (!Holds(i, layer, ex)) continue;
        std::vector<std::string> args = {"moe", "load-expert", "--model", kModel, "--layer", std::to_string(layer),
                                         "--expert", std::to_string(ex), "--file", e["uri"].get<std::string>(),
                                         "--json"};
        if (i > 0) args.insert(args.end(), {"--from", a.http_url()});
        json le = nodes[i]->CliJson(args);
        ASSERT_TRUE(le.is_object()) << "node " << i << " layer " << layer << " expert " << ex;
      }
    }
  }
  // A sees all three holders and every expert covered.
  json map;
  ASSERT_TRUE(WaitFor([&] {
    map = AdminGet(a, std::string("/v1/swarm/shard-map?model=") + kModel);
    return map.is_object() && map["holders"].size() == 3 && map["covered_experts"] == 16;
  }, std::chrono::seconds(30))) << map.dump();

  // Two distributed forwards, so the page has recent forwards to show.
  const Bytes hidden = ReadAll(DataPath("moe/tiny-qwen35moe.hidden.f32"));
  const std::string b64 = node::Base64Encode(ByteSpan(hidden));
  for (int layer = 0; layer < 2; ++layer) {
    json body = {{"model", kModel}, {"layer", layer}, {"d_model", 256}, {"n_tokens", 9}, {"hidden_f32_b64", b64}};
    auto r = a.Admin().Send("POST", "/v1/moe/forward-distributed", body.dump());
    ASSERT_TRUE(r && r->status == 200) << (r ? r->body : r.error().ToString());
  }
  // The state the page reads is public and holds no secret.
  {
    net::HttpClient pub(a.http);
    auto r = pub.Send("GET", "/v1/dashboard/state");
    ASSERT_TRUE(r && r->status == 200);
    EXPECT_EQ(r->body.find(a.token), std::string::npos);
    EXPECT_EQ(r->body.find("\"path\""), std::string::npos);
    EXPECT_EQ(r->body.find(a.dir), std::string::npos);
    json st = json::parse(r->body);
    EXPECT_EQ(st["recent_forwards"].size(), 2u);
    EXPECT_EQ(st["shard_map"]["holders"].size(), 3u);
  }

  const std::string artifacts = BuildDir() + "/artifacts";
  fs::create_directories(artifacts);
  fs::remove(artifacts + "/dashboard.png");
  fs::remove(artifacts + "/dashboard-after-kill.png");
  const std::string marker = tmp.Join("killed");
  const std::string log = tmp.Join("browser.log");
  ChildProcess script({node_js, tenzro::testing::ProjectSourceDir() + "/tests/node/dashboard_browser.mjs", "--modules",
                       pw_dir + "/node_modules", "--url", a.http_url() + "/", "--out", artifacts, "--marker", marker,
                       "--holders", "3", "--timeout-ms", "60000", "--chromium", Chromium()},
                      log);
  ScriptGuard guard{&script};
  const auto t0 = Clock::now();
  ASSERT_TRUE(WaitFor([&] { return script.Log().find("READY") != std::string::npos || !script.running(); },
                      std::chrono::seconds(120)))
      << script.Log();
  ASSERT_NE(script.Log().find("READY"), std::string::npos) << script.Log();
  std::printf("[dashboard] page showed 3 holders %.2f s after the browser started\n",
              std::chrono::duration<double>(Clock::now() - t0).count());

  // SIGKILL C; the page must drop it once its declaration expires.
  const auto killed_at = Clock::now();
  c.proc->Signal(SIGKILL);
  c.proc->Wait(std::chrono::seconds(10));
  ASSERT_TRUE(WriteFileAtomic(marker, std::string_view(ids[2])).has_value());
  const int code = script.Wait(std::chrono::seconds(90));
  const std::string out = script.Log();
  ASSERT_EQ(code, 0) << out;
  std::printf("[dashboard] page dropped the killed holder %.2f s after SIGKILL (TTL %d s)\n",
              std::chrono::duration<double>(Clock::now() - killed_at).count(), kTtlS);
  const size_t at = out.find("RESULT ");
  ASSERT_NE(at, std::string::npos) << out;
  json res = json::parse(out.substr(at + 7, out.find('\n', at) - at - 7), nullptr, false);
  ASSERT_TRUE(res.is_object()) << out;
  EXPECT_EQ(res["before"]["holderCount"], 3);
  EXPECT_EQ(res["before"]["cells"], 16);  // 2 layers x 8 experts
  EXPECT_EQ(res["before"]["uncovered"], 0);
  int twice = 0;
  for (const json& r : res["before"]["replicas"]) twice += r == 2;
  EXPECT_EQ(twice, 15);  // and layer 1 expert 7 once
  EXPECT_GT(res["before"]["experts"].get<int>(), 0);  // A's own experts table
  EXPECT_EQ(res["after"]["holderCount"], 2);
  EXPECT_EQ(res["after"]["cells"], 16);
  EXPECT_EQ(res["after"]["uncovered"], 1);  // layer 1 expert 7 (C's alone) is marked uncovered
  int single = 0;
  for (const json& r : res["after"]["replicas"]) single += r == 1;
  EXPECT_GT(single, 0);
  for (const json& id : res["after"]["holderIds"]) EXPECT_NE(id, ids[2]);
  EXPECT_TRUE(res["page_errors"].empty()) << res["page_errors"].dump();
  for (const char* f : {"/dashboard.png", "/dashboard-after-kill.png"}) {
    ASSERT_TRUE(fs::exists(artifacts + f)) << f;
    EXPECT_GT(fs::file_size(artifacts + f), 10000u) << f;
    std::printf("[dashboard] screenshot %s\n", (artifacts + f).c_str());
  }
}

// The Serving panel of a node serving the tiny model (--serve, experts
// in-process) while one long streamed completion runs: the page shows the
// model "ok", tokens/s above 0 and the request with its generated count
// moving. Screenshot: BUILD_DIR/artifacts/dashboard-serving.png.
TEST(DashboardBrowserTest, ServingPanel) {
  if (const char* s = std::getenv("TENZRO_SKIP_BROWSER_TEST"); s && std::string(s) == "1")
    GTEST_SKIP() << "TENZRO_SKIP_BROWSER_TEST=1";
  const std::string node_js = Which("node");
  const std::string pw_dir = BuildDir() + "/browser-test";
  if (std::string why = BrowserMissing(node_js, pw_dir); !why.empty()) FAIL() << why;
  TempDir tmp;
  const std::string dir = tmp.Join("n");
  auto add = RunTenzro({"--data-dir", dir, "moe", "catalog-add", "--model", kModel, "--checkpoint",
                        DataPath("model/tiny-qwen35moe-tok-BF16.gguf")});
  ASSERT_EQ(add.exit_code, 0) << add.err;
  NodeOptions o;
  o.run_args = {"--serve", kModel, "--serve-experts", "local", "--serve-threads", "2"};
  RunningNode n = StartNode(dir, o);
  ASSERT_TRUE(n.running());
  net::HttpClient c(n.http);
  ASSERT_TRUE(WaitFor(
      [&] {
        auto r = c.Send("GET", "/health");
        return r && r->status == 200;
      },
      std::chrono::seconds(60)));
  std::atomic<bool> stop{false};
  // One long stream at a time, a new one whenever one ends, until stopped.
  std::thread stream([&] {
    net::HttpClient sc(n.http);
    const std::string body = json{{"model", kModel}, {"prompt", {51, 71, 68}}, {"max_tokens", 4000},
                                  {"ignore_eos", true}, {"stream", true}}
                                 .dump();
    while (!stop) {
      auto r = sc.SendStreaming("POST", "/v1/completions", body, "application/json", {}, [&](ByteSpan) -> Result<void> {
        if (stop) return Error::Unavailable("done");
        return Ok();
      });
      if (!r || r->status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
  struct Join {
    std::atomic<bool>* stop;
    std::thread* t;
    ~Join() {
      *stop = true;
      t->join();
    }
  } join{&stop, &stream};
  const std::string artifacts = BuildDir() + "/artifacts";
  fs::create_directories(artifacts);
  fs::remove(artifacts + "/dashboard-serving.png");
  ChildProcess script({node_js, tenzro::testing::ProjectSourceDir() + "/tests/node/dashboard_serving_browser.mjs",
                       "--modules", pw_dir + "/node_modules", "--url", n.http_url() + "/", "--out", artifacts,
                       "--timeout-ms", "60000", "--chromium", Chromium()},
                      tmp.Join("browser.log"));
  ScriptGuard guard{&script};
  const int code = script.Wait(std::chrono::seconds(120));
  const std::string out = script.Log();
  ASSERT_EQ(code, 0) << out;
  const size_t at = out.find("RESULT ");
  ASSERT_NE(at, std::string::npos) << out;
  json res = json::parse(out.substr(at + 7, out.find('\n', at) - at - 7), nullptr, false);
  ASSERT_TRUE(res.is_object()) << out;
  EXPECT_EQ(res["first"]["model"], kModel);
  EXPECT_EQ(res["first"]["status"], "ok");
  EXPECT_GT(res["first"]["tps"].get<double>(), 0);
  ASSERT_EQ(res["second"]["requests"].size(), 1u) << res.dump();
  EXPECT_EQ(res["second"]["requests"][0][1], "decode");
  EXPECT_EQ(res["second"]["requests"][0][2], "3");  // prompt tokens
  EXPECT_NE(res["second"]["load"].get<std::string>().find("1 / "), std::string::npos) << res.dump();
  EXPECT_TRUE(res["page_errors"].empty()) << res["page_errors"].dump();
  ASSERT_TRUE(fs::exists(artifacts + "/dashboard-serving.png"));
  std::printf("[dashboard] screenshot %s\n", (artifacts + "/dashboard-serving.png").c_str());
}

}  // namespace
}  // namespace tenzro::testing
