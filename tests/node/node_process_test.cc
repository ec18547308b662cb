// Multi-process tests: `tenzro node run` as a real child process on loopback.
#include <signal.h>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/file.h"
#include "net/client.h"
#include "net/json_http.h"
#include "net/url.h"
#include "testutil/node_process.h"

namespace tenzro::node {
namespace {

using std::chrono::seconds;
using tenzro::testing::ChildProcess;
using tenzro::testing::RunTenzro;
using tenzro::testing::TempDir;
using tenzro::testing::TenzroBin;
using tenzro::testing::WaitFor;

using tenzro::testing::RunningNode;

// A node with debug logging and the test-only routes (testutil/node_process.h).
RunningNode StartNode(const std::string& dir, const std::vector<std::string>& extra = {}, const char* log = "node.log") {
  tenzro::testing::NodeOptions o;
  o.global_args = {"--log-level", "debug"};
  o.run_args = {"--debug-routes", "true"};
  o.run_args.insert(o.run_args.end(), extra.begin(), extra.end());
  o.log_path = dir + "." + log;
  RunningNode n = tenzro::testing::StartNode(dir, o);
  if (n.running()) {
    EXPECT_EQ(n.node_json["pid"], n.proc->pid());
  }
  return n;
}

nlohmann::json Json(const Result<net::ClientResponse>& r) {
  EXPECT_TRUE(r);
  if (!r) return nullptr;
  auto j = nlohmann::json::parse(r->body, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r->body;
  return j;
}

TEST(NodeProcessTest, AdminAuthInfoAndCleanSigterm) {
  TempDir tmp;
  std::string dir = tmp.Join("data");
  RunningNode n = StartNode(dir);
  ASSERT_TRUE(n.proc->running());

  struct stat st;
  ASSERT_EQ(::stat((dir + "/admin.token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(n.token.size(), 64u);
  EXPECT_TRUE(net::IsLoopbackHost(n.admin.host));

  // No token, wrong token: 401 with a JSON error.
  auto anon = n.Admin(false).Send("GET", "/v1/node/info");
  ASSERT_TRUE(anon);
  EXPECT_EQ(anon->status, 401);
  EXPECT_EQ(Json(anon)["error"]["code"], "permission_denied");
  auto wrong_client = n.Admin(false);
  wrong_client.SetBearerToken(std::string(64, '0'));
  auto wrong = wrong_client.Send("GET", "/v1/node/info");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);

  auto info = n.Admin().Send("GET", "/v1/node/info");
  ASSERT_TRUE(info);
  ASSERT_EQ(info->status, 200) << info->body;
  nlohmann::json ij = Json(info);
  EXPECT_EQ(ij["data_dir"], dir);
  EXPECT_EQ(ij["listeners"]["admin"], n.admin.Url());
  EXPECT_EQ(ij["pid"], n.proc->pid());

  // The public listener serves without a token.
  net::HttpClient pub(n.http);
  auto health = pub.Send("GET", "/v1/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);

  // The CLI finds the node through node.json + admin.token.
  auto cli = RunTenzro({"--data-dir", dir, "node", "info"}, seconds(30));
  EXPECT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_NE(cli.out.find(n.admin.Url()), std::string::npos) << cli.out;
  auto cli_json = RunTenzro({"--data-dir", dir, "node", "info", "--json"}, seconds(30));
  ASSERT_EQ(cli_json.exit_code, 0) << cli_json.err;
  EXPECT_EQ(nlohmann::json::parse(cli_json.out)["version"], ij["version"]);
  // --node/--token work without the data dir files.
  auto explicit_cli = RunTenzro({"--data-dir", tmp.Join("elsewhere"), "--node", n.admin.Url(), "--token", n.token,
                                 "node", "info"}, seconds(30));
  EXPECT_EQ(explicit_cli.exit_code, 0) << explicit_cli.err;
  auto bad_token = RunTenzro({"--data-dir", tmp.Join("elsewhere"), "--node", n.admin.Url(), "--token", "nope",
                              "node", "info"}, seconds(30));
  EXPECT_EQ(bad_token.exit_code, 8) << bad_token.err;  // permission denied

  // A second node on the same data dir is refused.
  auto second = RunTenzro({"--data-dir", dir, "node", "run"}, seconds(30));
  EXPECT_NE(second.exit_code, 0);
  EXPECT_NE(second.err.find("already running"), std::string::npos) << second.err;

  n.proc->Signal(SIGTERM);
  EXPECT_EQ(n.proc->Wait(seconds(30)), 0) << n.proc->Log();
  EXPECT_FALSE(PathExists(dir + "/node.json"));
}

TEST(NodeProcessTest, OversizeBodyAndMalformedJsonKeepTheNodeServing) {
  TempDir tmp;
  std::string dir = tmp.Join("data");
  RunningNode n = StartNode(dir, {"--max-body-bytes", "4096"});
  ASSERT_TRUE(n.proc->running());
  auto c = n.Admin();

  auto big = c.Send("POST", "/v1/debug/jobs", std::string(100000, ' '));
  ASSERT_TRUE(big) << big.error().ToString();
  EXPECT_EQ(big->status, 413);
  EXPECT_EQ(Json(big)["error"]["code"], "resource_exhausted");

  auto bad = c.Send("POST", "/v1/debug/jobs", R"({"steps": 1,)");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  nlohmann::json bj = Json(bad);
  EXPECT_EQ(bj["error"]["code"], "invalid_argument");
  EXPECT_NE(bj["error"]["message"].get<std::string>().find("not valid JSON"), std::string::npos);

  auto missing = c.Send("POST", "/v1/debug/jobs", R"({"steps": 1})");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 400);
  EXPECT_NE(Json(missing)["error"]["message"].get<std::string>().find("step_ms"), std::string::npos);

  auto nf = c.Send("GET", "/v1/jobs/0123456789abcdef");
  ASSERT_TRUE(nf);
  EXPECT_EQ(nf->status, 404);

  auto info = c.Send("GET", "/v1/node/info");
  ASSERT_TRUE(info);
  EXPECT_EQ(info->status, 200);

  // `tenzro node stop` shuts it down cleanly.
  auto stop = RunTenzro({"--data-dir", dir, "node", "stop"}, seconds(60));
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(n.proc->Wait(seconds(30)), 0) << n.proc->Log();
  EXPECT_FALSE(PathExists(dir + "/node.json"));

  // With no node, client commands say how to start one.
  auto none = RunTenzro({"--data-dir", dir, "node", "info"}, seconds(30));
  EXPECT_EQ(none.exit_code, 5);
  EXPECT_NE(none.err.find("tenzro node run --data-dir " + dir), std::string::npos) << none.err;
}

TEST(NodeProcessTest, JobsFailAndSurviveAKill) {
  TempDir tmp;
  std::string dir = tmp.Join("data");
  std::string id_failed, id_done, id_killed;
  {
    RunningNode n = StartNode(dir);
    ASSERT_TRUE(n.proc->running());
    auto c = n.Admin();
    auto f = c.Send("POST", "/v1/debug/jobs", R"({"steps": 2, "step_ms": 10, "fail": "expert 3 is corrupt"})");
    ASSERT_TRUE(f);
    ASSERT_EQ(f->status, 202) << f->body;
    id_failed = Json(f)["id"];
    auto d = c.Send("POST", "/v1/debug/jobs", R"({"steps": 2, "step_ms": 10})");
    ASSERT_TRUE(d);
    id_done = Json(d)["id"];

    // The CLI waits and reports the job's own error.
    auto w = RunTenzro({"--data-dir", dir, "node", "job", id_failed, "--wait"}, seconds(60));
    EXPECT_NE(w.exit_code, 0);
    EXPECT_NE(w.err.find("expert 3 is corrupt"), std::string::npos) << w.err;
    auto wd = RunTenzro({"--data-dir", dir, "node", "job", id_done, "--wait"}, seconds(60));
    EXPECT_EQ(wd.exit_code, 0) << wd.err;

    auto fj = Json(c.Send("GET", "/v1/jobs/" + id_failed));
    EXPECT_EQ(fj["state"], "failed");
    EXPECT_EQ(fj["error"]["message"], "expert 3 is corrupt");

    // A long job, then SIGKILL mid-run.
    auto k = c.Send("POST", "/v1/debug/jobs", R"({"steps": 1000, "step_ms": 50})");
    ASSERT_TRUE(k);
    id_killed = Json(k)["id"];
    ASSERT_TRUE(WaitFor([&] {
      auto j = Json(c.Send("GET", "/v1/jobs/" + id_killed));
      return j.is_object() && j["state"] == "running";
    }, seconds(30)));
    n.proc->Signal(SIGKILL);
    n.proc->Wait(seconds(30));
  }
  EXPECT_TRUE(PathExists(dir + "/node.json"));  // stale after a kill
  RunningNode n = StartNode(dir, {}, "node2.log");
  ASSERT_TRUE(n.proc->running());
  auto c = n.Admin();
  nlohmann::json kj = Json(c.Send("GET", "/v1/jobs/" + id_killed));
  EXPECT_EQ(kj["state"], "failed");
  EXPECT_EQ(kj["error"]["message"], "node restarted while the job was running");
  EXPECT_EQ(Json(c.Send("GET", "/v1/jobs/" + id_done))["state"], "done");
  EXPECT_EQ(Json(c.Send("GET", "/v1/jobs/" + id_failed))["state"], "failed");
  nlohmann::json list = Json(c.Send("GET", "/v1/jobs?state=failed"));
  EXPECT_EQ(list["jobs"].size(), 2u);
  auto cli = RunTenzro({"--data-dir", dir, "node", "jobs"}, seconds(30));
  EXPECT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_NE(cli.out.find(id_killed), std::string::npos);
  n.proc->Signal(SIGINT);
  EXPECT_EQ(n.proc->Wait(seconds(30)), 0) << n.proc->Log();
}

TEST(NodeProcessTest, BadConfigIsAClearError) {
  TempDir tmp;
  auto admin = RunTenzro({"--data-dir", tmp.Join("d"), "node", "run", "--admin", "0.0.0.0:0"}, seconds(30));
  EXPECT_EQ(admin.exit_code, 2);
  EXPECT_NE(admin.err.find("loopback"), std::string::npos) << admin.err;
  tenzro::testing::WriteAll(tmp.Join("n.toml"), ByteSpan(reinterpret_cast<const uint8_t*>("htp = \"x\"\n"), 10));
  auto cfg = RunTenzro({"--data-dir", tmp.Join("d"), "node", "run", "--config", tmp.Join("n.toml")}, seconds(30));
  EXPECT_EQ(cfg.exit_code, 2);
  EXPECT_NE(cfg.err.find("'htp'"), std::string::npos) << cfg.err;
}

}  // namespace
}  // namespace tenzro::node
