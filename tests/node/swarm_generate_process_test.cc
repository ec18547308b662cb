// Generation with the experts on the swarm, through real node processes on
// loopback (docs/engine.md, node/generate_service.h):
//   * N0 (DHT bootstrap) has the bundled BF16 tiny model in its catalog and
//     prepares every expert of both layers (bf16: the checkpoint's own bytes)
//     but loads none; N1..N3 load them by blob URI, replication 2;
//   * `tenzro generate` on N0's data dir (no --local) goes through
//     POST /v1/model/generate: per wire dtype (f32, q8_0 and the default
//     bf16) the logits equal `tenzro generate --local --wire-dtype`'s bit for
//     bit (the local run rounds each routed expert's rows the same way); with
//     f32 the 16 greedy tokens for the reference ChatML prompt equal the
//     float64 reference's; every expert call went to a remote holder;
//     (also in text mode: the same text as the local run), and again with
//     the engine on the spine blob N0 publishes (prepare-dense) instead of
//     the checkpoint;
//   * after SIGKILL of one holder, the same generation fails over and gives
//     the same tokens and logits.
#include <signal.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "core/file.h"
#include "fault/fault_util.h"
#include "net/client.h"
#include "node/runtime_service.h"

namespace tenzro::node {
namespace {

using fault::AdminCall;
using fault::Call;
using fault::Converged;
using fault::DhtAddr;
using fault::SwarmFlags;
using nlohmann::json;
using std::chrono::seconds;
using tenzro::testing::DataPath;
using tenzro::testing::NodeOptions;
using tenzro::testing::RunningNode;
using tenzro::testing::RunTenzro;
using tenzro::testing::StartNode;
using tenzro::testing::TempDir;
using tenzro::testing::WaitFor;
using Clock = std::chrono::steady_clock;

constexpr const char* kModel = "tiny-qwen35moe";
constexpr int kExperts = 8;
constexpr int kHolders = 3;

std::string Join(const json& ids) {
  std::string s;
  for (const json& v : ids) s += (s.empty() ? "" : ",") + std::to_string(v.get<int>());
  return s;
}

double Secs(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Holder calls of a generation's per-layer totals: by node id, and whether
// any went to this node ("local").
struct Calls {
  std::map<std::string, int> by_holder;
  int total = 0, failed = 0, local = 0;
};
Calls CallsOf(const json& layers) {
  Calls c;
  for (const json& l : layers) {
    c.total += l.value("holder_calls", 0);
    c.failed += l.value("failed_calls", 0);
    c.local += l["transports"].value("local", 0);
    for (const auto& [id, n] : l["holders"].items()) c.by_holder[id] += n.get<int>();
  }
  return c;
}

TEST(SwarmGenerateProcess, GreedyTokensAndLogitsEqualLocalAndSurviveAHolderKill) {
  const auto t0 = Clock::now();
  const json ref = json::parse(*ReadTextFile(DataPath("model/ref/chat-hi.json")));
  const std::string prompt = Join(ref["prompt_ids"]);
  TempDir tmp;

  std::vector<RunningNode> n;
  // N0 also serves the model with the OpenAI-compatible API, routed experts
  // on the swarm (serve_experts defaults to swarm): the model must be in its
  // catalog before it starts.
  auto add = RunTenzro({"--data-dir", tmp.Join("n0"), "moe", "catalog-add", "--model", kModel, "--checkpoint",
                        DataPath("model/tiny-qwen35moe-tok-BF16.gguf")});
  ASSERT_EQ(add.exit_code, 0) << add.err;
  NodeOptions o0;
  o0.run_args = SwarmFlags();
  o0.run_args.insert(o0.run_args.end(), {"--serve", kModel, "--serve-threads", "2"});
  n.push_back(StartNode(tmp.Join("n0"), o0));
  ASSERT_TRUE(n[0].running());
  for (int i = 1; i <= kHolders; ++i) {
    NodeOptions o;
    o.run_args = SwarmFlags(30, {"--bootstrap", DhtAddr(n[0])});
    n.push_back(StartNode(tmp.Join("n" + std::to_string(i)), o));
    ASSERT_TRUE(n[i].running());
  }

  // Served with experts on the swarm, N0 is not healthy while no holder has
  // them: /health names what is missing.
  {
    net::HttpClient api(n[0].http);
    std::string body;
    EXPECT_TRUE(WaitFor([&] {
      auto h = api.Send("GET", "/health");
      if (h) body = h->body;
      return h && h->status == 503 && h->body.find("have no live holder") != std::string::npos;
    }, seconds(60))) << body;
  }

  // N0 prepares (publishes) every expert; the holders load them, two each.
  for (int layer = 0; layer < 2; ++layer) {
    json job = n[0].CliJson({"moe", "prepare-experts", "--model-id", kModel, "--layer", std::to_string(layer),
                             "--experts", "all", "--quant", "bf16", "--wait", "--json"});
    ASSERT_EQ(job["state"], "done") << job.dump();
    for (const json& e : job["result"]["experts"]) {
      const int g = layer * kExperts + e["expert"].get<int>();
      for (int k : {g % kHolders, (g + 1) % kHolders}) {
        Call c = fault::AdminCall(n[1 + k], "POST", "/v1/moe/load-expert",
                                  {{"model", kModel}, {"layer", layer}, {"expert", e["expert"]},
                                   {"file", e["uri"]}, {"from", n[0].http_url()}},
                                  seconds(60));
        ASSERT_TRUE(c.ok()) << c.message();
      }
    }
  }
  ASSERT_TRUE(WaitFor([&] { return Converged(n[0], {0, 1}, kHolders); }, seconds(60)));
  std::set<std::string> holder_ids;
  for (int i = 1; i <= kHolders; ++i) holder_ids.insert(n[i].node_json["node_id"].get<std::string>());
  const std::string n0_id = n[0].node_json["node_id"].get<std::string>();
  std::printf("[setup] 4 nodes, 32 expert loads, converged in %.2f s\n", Secs(t0));

  // All-local reference (the same data dir; --local keeps it in-process) and
  // the same generation through the node (the CLI finds N0 and sends the
  // request there), per wire dtype: the local run rounds each routed
  // expert's rows as the exec frames do, so the logits are equal bit for bit.
  // f32 (exact) also gives the float64 reference's greedy tokens; bf16 is
  // the default (no flag).
  const std::vector<std::string> gen = {"generate", "--model", kModel, "--prompt-tokens", prompt,
                                        "--max-tokens", "16", "--ignore-eos", "--json"};
  json local, swarm;
  std::string local_logits;
  for (const char* dtype : {"f32", "q8_0", "bf16"}) {
    SCOPED_TRACE(dtype);
    std::vector<std::string> flag;
    if (std::string(dtype) != "bf16") flag = {"--wire-dtype", dtype};
    auto args = gen;
    args.insert(args.end(), flag.begin(), flag.end());
    args.insert(args.end(), {"--local", "--logits-out", tmp.Join(std::string("local-") + dtype + ".f32")});
    local = n[0].CliJson(args);
    EXPECT_EQ(local.value("wire_dtype", ""), dtype);
    local_logits = *ReadTextFile(tmp.Join(std::string("local-") + dtype + ".f32"));
    ASSERT_EQ(local_logits.size() % 4, 0u);
    ASSERT_GT(local_logits.size(), 0u);
    if (std::string(dtype) == "f32") {
      ASSERT_EQ(local["tokens"], ref["greedy_ids"]) << local.dump();
    }

    args = gen;
    args.insert(args.end(), flag.begin(), flag.end());
    args.insert(args.end(), {"--logits-out", tmp.Join(std::string("swarm-") + dtype + ".f32")});
    swarm = n[0].CliJson(args);
    ASSERT_EQ(swarm.value("executor", ""), "swarm") << swarm.dump();
    EXPECT_EQ(swarm.value("wire_dtype", ""), dtype) << swarm.dump();
    EXPECT_EQ(swarm["tokens"], local["tokens"]) << swarm.dump();
    EXPECT_EQ(swarm["text"], local["text"]);
    EXPECT_TRUE(*ReadTextFile(tmp.Join(std::string("swarm-") + dtype + ".f32")) == local_logits)
        << "logits differ from the local generation";
    Calls calls = CallsOf(swarm["layers"]);
    EXPECT_EQ(calls.local, 0);
    EXPECT_GT(calls.total, 0);
    EXPECT_EQ(calls.by_holder.count(n0_id), 0u);
    for (const auto& [id, k] : calls.by_holder) EXPECT_TRUE(holder_ids.count(id)) << id;
    // 16 tokens = 1 prefill + 15 decode steps, each one forward per layer.
    for (const json& l : swarm["layers"]) EXPECT_EQ(l["forwards"], 16) << l.dump();
    std::printf("[swarm %s] at %.2f s: prefill %.1f ms, %.2f ms/token decode (%d holder calls); local prefill "
                "%.1f ms, %.2f ms/token decode; tokens %s\n",
                dtype, Secs(t0), swarm["prefill_ms"].get<double>(), swarm["decode_ms"].get<double>() / 15,
                calls.total, local["prefill_ms"].get<double>(), local["decode_ms"].get<double>() / 15,
                swarm["tokens"].dump().c_str());
  }
  // From here on: the default (bf16) runs.

  for (const json& l : swarm["layers"])
    std::printf("[swarm] layer %d: %d forwards, per forward gate+shared %.2f ms, plan %.2f ms, exec %.2f ms, "
                "combine %.3f ms, total %.2f ms\n",
                l["layer"].get<int>(), l["forwards"].get<int>(),
                (l["gate_ms"].get<double>() + l["shared_ms"].get<double>()) / 16, l["plan_ms"].get<double>() / 16,
                l["exec_ms"].get<double>() / 16, l["combine_ms"].get<double>() / 16, l["total_ms"].get<double>() / 16);

  // The OpenAI-compatible API on N0's public listener, experts on the swarm:
  // a greedy completion from the prompt ids gives the local text.
  {
    net::HttpClient api(n[0].http);
    ASSERT_TRUE(WaitFor([&] {
      auto h = api.Send("GET", "/health");
      return h && h->status == 200;
    }, seconds(60))) << n[0].proc->Log();
    json body = {{"model", kModel}, {"prompt", ref["prompt_ids"]}, {"max_tokens", 16},
                 {"temperature", 0}, {"ignore_eos", true}};
    auto r = api.Send("POST", "/v1/completions", body.dump());
    ASSERT_TRUE(r) << r.error().ToString();
    ASSERT_EQ(r->status, 200) << r->body;
    json c = json::parse(r->body);
    EXPECT_EQ(c["choices"][0]["text"], local["text"]) << r->body;
    EXPECT_EQ(c["usage"]["completion_tokens"], 16);
    std::printf("[serve] /v1/completions through the swarm at %.2f s: same text as local\n", Secs(t0));
  }

  // Human output: the same text as the local run prints, the swarm named on stderr.
  auto text_args = gen;
  text_args.pop_back();  // --json
  auto human = n[0].Cli(text_args);
  ASSERT_EQ(human.exit_code, 0) << human.err;
  EXPECT_EQ(human.out, local["text"].get<std::string>() + "\n");
  EXPECT_NE(human.err.find("experts on the swarm"), std::string::npos) << human.err;

  // From the spine blob instead of the checkpoint (prepare-dense on N0):
  // `--model tenzro://blob/<hash>` goes to the node too, same bits.
  json dense = n[0].CliJson({"moe", "prepare-dense", "--model-id", kModel, "--wait", "--json"});
  ASSERT_EQ(dense.value("state", ""), "done") << dense.dump();
  std::vector<std::string> args = {"generate", "--model", dense["result"]["uri"].get<std::string>(),
                                   "--prompt-tokens", prompt, "--max-tokens", "16", "--ignore-eos", "--json",
                                   "--logits-out", tmp.Join("spine.f32")};
  json from_spine = n[0].CliJson(args);
  EXPECT_EQ(from_spine.value("executor", ""), "swarm") << from_spine.dump();
  EXPECT_EQ(from_spine["tokens"], local["tokens"]);
  EXPECT_TRUE(*ReadTextFile(tmp.Join("spine.f32")) == local_logits) << "logits from the spine blob differ";
  EXPECT_EQ(CallsOf(from_spine["layers"]).local, 0);

  // SIGKILL the holder that served most calls of the last generation; a
  // generation that then calls it fails over. The planner spreads load by
  // measured speed, so the next generation may not call that holder at all:
  // generations are repeated (bounded) until one does, and every one of them
  // must give the local tokens and logits.
  Calls last = CallsOf(from_spine["layers"]);
  std::string busiest;
  for (const auto& [id, k] : last.by_holder)
    if (busiest.empty() || k > last.by_holder[busiest]) busiest = id;
  int victim = 0;
  for (int i = 1; i <= kHolders; ++i)
    if (n[i].node_json["node_id"] == busiest) victim = i;
  ASSERT_GT(victim, 0) << "the busiest holder " << busiest << " is not one of the test's nodes";
  n[victim].proc->Signal(SIGKILL);
  n[victim].proc->Wait(seconds(10));
  Call after;
  Calls failover;
  for (int attempt = 0; attempt < 4 && failover.failed == 0; ++attempt) {
    after = AdminCall(n[0], "POST", "/v1/model/generate",
                      {{"model", kModel}, {"prompt_ids", ref["prompt_ids"]}, {"max_tokens", 16},
                       {"ignore_eos", true}, {"logits", true}},
                      seconds(120));
    ASSERT_TRUE(after.ok()) << after.message();
    EXPECT_EQ(after.body["tokens"], local["tokens"]);
    EXPECT_EQ(after.body.value("wire_dtype", ""), "bf16");
    auto raw = Base64Decode(after.body.value("logits_f32_b64", ""));
    ASSERT_TRUE(raw);
    EXPECT_TRUE(std::string(raw->begin(), raw->end()) == local_logits) << "logits differ after the failover";
    failover = CallsOf(after.body["layers"]);
    EXPECT_EQ(failover.local, 0);
  }
  EXPECT_GT(failover.failed, 0) << "no generation called the killed holder: " << after.body["layers"].dump();
  std::printf("[failover] at %.2f s: holder %d killed: %d holder calls (%s), %d failed and re-planned; prefill %.1f ms, "
              "%.2f ms/token decode\n",
              Secs(t0), victim, failover.total, after.body["layers"][0]["transports"].dump().c_str(), failover.failed,
              after.body["prefill_ms"].get<double>(), after.body["decode_ms"].get<double>() / 15);

  // A clean stop drains and announces leaving: SIGTERM to all, then wait.
  for (int i = 0; i <= kHolders; ++i)
    if (i != victim) n[i].proc->Signal(SIGTERM);
  for (int i = 0; i <= kHolders; ++i) {
    if (i == victim) continue;
    EXPECT_EQ(n[i].proc->Wait(seconds(30)), 0) << n[i].proc->Log();
  }
  std::printf("[total] %.2f s\n", Secs(t0));
}

}  // namespace
}  // namespace tenzro::node
