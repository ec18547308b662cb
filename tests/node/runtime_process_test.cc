// The expert runtime through the real binary on loopback: node A prepares the
// tiny fixture's experts, node B loads them by blob URI from A within a small
// memory budget, shows Warm/Cold tiers, runs the local MoE forward (as
// accurate as ggml), refuses bad input without changing state, and after a
// restart re-registers its cold tier and gates.
#include <signal.h>

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/file.h"
#include "net/url.h"
#include "testutil/node_process.h"

namespace tenzro::node {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using tenzro::testing::ChildProcess;
using tenzro::testing::DataPath;
using tenzro::testing::ReadF32;
using tenzro::testing::RelL2;
using tenzro::testing::RunResult;
using tenzro::testing::RunTenzro;
using tenzro::testing::TempDir;
using tenzro::testing::TenzroBin;
using tenzro::testing::WaitFor;

constexpr const char* kModel = "tiny-qwen35moe";

using tenzro::testing::RunningNode;

RunningNode Start(const std::string& dir, const std::vector<std::string>& extra = {}) {
  tenzro::testing::NodeOptions o;
  o.run_args = extra;
  return tenzro::testing::StartNode(dir, o);
}

RunResult Cli(const RunningNode& n, std::vector<std::string> args) { return n.Cli(std::move(args)); }
json CliJson(const RunningNode& n, std::vector<std::string> args) { return n.CliJson(std::move(args)); }

TEST(RuntimeProcessTest, LoadByBlobUriStatusForwardAndRestart) {
  TempDir tmp;
  const json oracle = json::parse(*ReadTextFile(DataPath("moe/tiny-qwen35moe.moe-oracle.json")));
  const std::string hidden = DataPath("moe/tiny-qwen35moe.hidden.f32");

  // Node A: catalog + prepare both layers (all experts + gate) at q4_k_m.
  RunningNode a = Start(tmp.Join("a"));
  ASSERT_TRUE(a.proc->running());
  RunResult add = Cli(a, {"moe", "catalog-add", "--model", kModel, "--checkpoint",
                          DataPath("moe/tiny-qwen35moe-Q4_K_M.gguf")});
  ASSERT_EQ(add.exit_code, 0) << add.err;
  std::vector<json> prepared;
  for (int layer = 0; layer < 2; ++layer) {
    json job = CliJson(a, {"moe", "prepare-experts", "--model-id", kModel, "--layer", std::to_string(layer),
                           "--quant", "q4_k_m", "--gate", "--wait", "--json"});
    ASSERT_EQ(job["state"], "done") << job.dump();
    prepared.push_back(job["result"]);
  }

  // Node B: a budget of about a quarter of the experts.
  const std::string budget = "1MiB";
  const uint64_t budget_bytes = 1 << 20;
  RunningNode b = Start(tmp.Join("b"), {"--memory-budget", budget});
  ASSERT_TRUE(b.proc->running());
  const std::string from = a.http_url();  // node.json gives "http://HOST:PORT"
  for (int layer = 0; layer < 2; ++layer) {
    const json& r = prepared[layer];
    json g = CliJson(b, {"moe", "load-gate", "--model", kModel, "--layer", std::to_string(layer), "--file",
                         r["gate"]["uri"].get<std::string>(), "--from", from, "--json"});
    EXPECT_EQ(g["n_expert"], 8);
    EXPECT_EQ(g["n_expert_used"], 2);
    EXPECT_EQ(g["shared_expert"], true);
    EXPECT_EQ(g["shape_source"], "builtin");  // B has no catalog; the tiny shape is built in
    EXPECT_FALSE(g.contains("note"));
    for (const json& e : r["experts"]) {
      json le = CliJson(b, {"moe", "load-expert", "--model", kModel, "--layer", std::to_string(layer), "--expert",
                            std::to_string(e["expert"].get<int>()), "--file", e["uri"].get<std::string>(), "--from",
                            from, "--json"});
      EXPECT_EQ(le["source"], "blob");
      EXPECT_EQ(le["fetched_from"], from);
      EXPECT_EQ(le["formats"], layer == 1 ? "q4_K/q4_K/q6_K" : "q4_K/q4_K/q4_K");
    }
  }

  // Refusals leave the state unchanged: layer 1's expert filed as layer 0,
  // an unknown blob without a peer.
  json before = CliJson(b, {"moe", "status", "--json"});
  const std::string l1e0 = prepared[1]["experts"][0]["uri"];
  RunResult wrong = Cli(b, {"moe", "load-expert", "--model", kModel, "--layer", "0", "--expert", "0", "--file", l1e0});
  EXPECT_EQ(wrong.exit_code, 2) << wrong.err;
  EXPECT_NE(wrong.err.find("layer 1"), std::string::npos) << wrong.err;
  RunResult nopeer = Cli(b, {"moe", "load-expert", "--model", kModel, "--layer", "0", "--expert", "0", "--file",
                             "tenzro://blob/" + std::string(64, 'a')});
  EXPECT_EQ(nopeer.exit_code, 3) << nopeer.err;
  json after = CliJson(b, {"moe", "status", "--json"});
  EXPECT_EQ(after["experts"], before["experts"]);
  EXPECT_EQ(after["gates"], before["gates"]);

  // Status: tiers, budget, compute backend.
  ASSERT_EQ(after["experts"].size(), 16u);
  ASSERT_EQ(after["gates"].size(), 2u);
  int warm = 0, cold = 0;
  for (const json& e : after["experts"]) (e["tier"] == "Warm" ? warm : cold)++;
  EXPECT_GT(warm, 0);
  EXPECT_GT(cold, 0);
  EXPECT_EQ(after["memory"]["budget_bytes"], budget_bytes);
  EXPECT_LE(after["memory"]["warm_bytes"].get<uint64_t>(), budget_bytes);
  EXPECT_EQ(after["compute"]["gpu"], "none (no GPU compute backend in this build)");
  EXPECT_EQ(after["compute"]["backend"], "cpu");
  RunResult human = Cli(b, {"moe", "status"});
  EXPECT_EQ(human.exit_code, 0) << human.err;
  EXPECT_NE(human.out.find("GPU: none (no GPU compute backend in this build)"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("Cold"), std::string::npos);

  // Forward, both layers, against the f64 reference.
  std::vector<std::vector<float>> outs;
  for (const json& c : oracle["cases"]) {
    if (c["weights"] != "Q4_K_M") continue;
    const int layer = c["layer"];
    const std::string out = tmp.Join("out" + std::to_string(layer) + ".f32");
    json fr = CliJson(b, {"moe", "forward", "--model", kModel, "--hidden", hidden, "--d-model", "256", "--layer",
                          std::to_string(layer), "--out", out, "--local", "--json"});
    EXPECT_EQ(fr["n_tokens"], 9);
    EXPECT_EQ(fr["routing"].size(), 9u);
    const std::vector<float> got = ReadF32(out);
    const std::vector<float> ref = ReadF32(DataPath("moe/" + c["full_ref"].get<std::string>()));
    ASSERT_EQ(got.size(), ref.size());
    const double err = RelL2(got, ref);
    EXPECT_LE(err, c["ggml_vs_ref_rel_l2"].get<double>()) << "layer " << layer;
    outs.push_back(got);
  }
  json st = CliJson(b, {"moe", "status", "--json"});
  EXPECT_GT(st["counters"]["promotions"].get<uint64_t>(), 0u);
  EXPECT_GT(st["counters"]["demotions"].get<uint64_t>(), 0u);
  EXPECT_LE(st["memory"]["max_warm_bytes"].get<uint64_t>(), budget_bytes);

  // Bad forwards: wrong d_model, a file that is not whole tokens, no --layer
  // with two gated layers.
  RunResult dm = Cli(b, {"moe", "forward", "--model", kModel, "--hidden", hidden, "--d-model", "128", "--layer", "0",
                         "--out", tmp.Join("x.f32"), "--local"});
  EXPECT_EQ(dm.exit_code, 2) << dm.err;
  EXPECT_NE(dm.err.find("n_embd 256"), std::string::npos) << dm.err;
  ASSERT_TRUE(WriteFileAtomic(tmp.Join("short.f32"), std::string_view("123456")));
  RunResult sh = Cli(b, {"moe", "forward", "--model", kModel, "--hidden", tmp.Join("short.f32"), "--d-model", "256",
                         "--out", tmp.Join("x.f32"), "--local"});
  EXPECT_EQ(sh.exit_code, 2) << sh.err;
  RunResult nl = Cli(b, {"moe", "forward", "--model", kModel, "--hidden", hidden, "--d-model", "256", "--out",
                         tmp.Join("x.f32"), "--local"});
  EXPECT_EQ(nl.exit_code, 2) << nl.err;
  EXPECT_FALSE(PathExists(tmp.Join("x.f32")));

  // Restart B: the cold tier and the gates come back; same answers.
  b.proc->Signal(SIGTERM);
  ASSERT_EQ(b.proc->Wait(seconds(30)), 0) << b.proc->Log();
  RunningNode b2 = Start(tmp.Join("b"), {"--memory-budget", budget});
  ASSERT_TRUE(b2.proc->running());
  json rs = CliJson(b2, {"moe", "status", "--json"});
  ASSERT_EQ(rs["experts"].size(), 16u);
  EXPECT_EQ(rs["gates"].size(), 2u);
  for (const json& e : rs["experts"]) EXPECT_EQ(e["tier"], "Cold");
  EXPECT_TRUE(rs["restart_notes"].empty()) << rs["restart_notes"].dump();
  for (int layer = 0; layer < 2; ++layer) {
    const std::string out = tmp.Join("again" + std::to_string(layer) + ".f32");
    RunResult fr = Cli(b2, {"moe", "forward", "--model", kModel, "--hidden", hidden, "--d-model", "256", "--layer",
                            std::to_string(layer), "--out", out, "--local"});
    ASSERT_EQ(fr.exit_code, 0) << fr.err;
    EXPECT_NE(fr.out.find("token"), std::string::npos);
    EXPECT_EQ(ReadF32(out), outs[layer]);
  }
  b2.proc->Signal(SIGTERM);
  EXPECT_EQ(b2.proc->Wait(seconds(30)), 0) << b2.proc->Log();
  a.proc->Signal(SIGTERM);
  EXPECT_EQ(a.proc->Wait(seconds(30)), 0) << a.proc->Log();
}

}  // namespace
}  // namespace tenzro::node

namespace tenzro::node {
namespace {

// A provider that serves a blob which verifies against its hash but is not
// an expert (or gate) file: the fetching node refuses it and deletes it from
// its store again, so a stranger cannot park arbitrary bytes on a holder's
// disk through load-expert / rebalance.
TEST(RuntimeProcessTest, AFetchedBlobThatIsNotAnExpertIsDeletedAgain) {
  TempDir tmp;
  RunningNode a = Start(tmp.Join("a"));
  RunningNode b = Start(tmp.Join("b"));
  ASSERT_TRUE(a.running() && b.running());
  const std::string junk = tmp.Join("junk.bin");
  ASSERT_TRUE(WriteFileAtomic(junk, std::string_view("definitely not a GGUF file, but hashed and verified all the same")));
  json put = CliJson(a, {"blob", "put", junk, "--json"});
  ASSERT_TRUE(put.contains("uri")) << put.dump();
  const std::string uri = put["uri"];
  const std::string hash = uri.substr(uri.rfind('/') + 1);
  for (const char* kind : {"load-expert", "load-gate"}) {
    std::vector<std::string> args = {"moe", kind, "--model", kModel, "--layer", "0"};
    if (std::string(kind) == "load-expert") args.insert(args.end(), {"--expert", "1"});
    args.insert(args.end(), {"--file", uri, "--from", a.http_url()});
    RunResult r = Cli(b, args);
    EXPECT_NE(r.exit_code, 0) << kind;
    EXPECT_NE(r.err.find("was deleted again"), std::string::npos) << kind << ": " << r.err;
    RunResult ls = RunTenzro({"--data-dir", b.dir, "blob", "ls"});
    EXPECT_EQ(ls.exit_code, 0) << ls.err;
    EXPECT_EQ(ls.out.find(hash), std::string::npos) << kind << ": still in B's store:\n" << ls.out;
  }
  // The provider keeps its own copy (it never validated it as an expert).
  RunResult ls_a = RunTenzro({"--data-dir", a.dir, "blob", "ls"});
  EXPECT_NE(ls_a.out.find(hash), std::string::npos) << ls_a.out;
}

}  // namespace
}  // namespace tenzro::node
