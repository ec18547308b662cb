// The loopback serving swarm that bench/serve_bench.cc and bench/wan_bench.cc
// measure, and the streamed completions they time (header-only: each
// *_bench.cc is its own program).
//
//   * a Qwen3.5-122B-A10B-shape model with random weights (model/synthetic.h):
//     `layers` layers (2: both gated delta net; 4 adds the gated-attention
//     layer), 16 experts, top-8, vocabulary 4,096, Q4_K dense and experts,
//     with a placeholder tokenizer (prompts are token ids);
//   * optionally the reference: one node, `--serve ID --serve-experts local`;
//   * the swarm: node 0 `--serve ID` (experts on the swarm) prepares every
//     expert (q4_k, the stored type) and loads none; 3 holders load them by
//     blob URI, replication 2; node 0's GET /health = 200 means every expert
//     has a live holder.
// StartSwarm exits the program (Die) on any setup failure: a benchmark
// without its swarm has nothing to measure. Loopback only; the temp dir is
// removed when the Swarm is destroyed, after StopSwarm.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/synthetic.h"
#include "net/client.h"
#include "testutil/node_process.h"

namespace tenzro::bench {

using nlohmann::json;
using tenzro::testing::NodeOptions;
using tenzro::testing::RunningNode;
using tenzro::testing::RunTenzro;
using tenzro::testing::StartNode;
using tenzro::testing::TempDir;
using tenzro::testing::WaitFor;
using Clock = std::chrono::steady_clock;
using std::chrono::seconds;

inline constexpr const char* kModel = "synthetic-qwen35-122b";
inline constexpr int kExperts = 16, kVocab = 4096, kHolders = 3, kMaxStreams = 16;

inline int EnvInt(const char* name, int def) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : def;
}

[[noreturn]] inline void Die(const std::string& what) {
  std::fprintf(stderr, "bench: %s\n", what.c_str());
  std::exit(1);
}

inline double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct SwarmOptions {
  int layers = 2;
  bool reference = true;  // also start the all-local reference node
  // Extra `node run` flags of holder i (1..kHolders).
  std::function<std::vector<std::string>(int)> holder_args;
  // Called as soon as holder i runs, before its experts load (e.g. to put a
  // relay in front of it).
  std::function<void(int, const RunningNode&)> holder_started;
};

// The processes and files of a run.
struct Swarm {
  TempDir tmp;
  RunningNode local;               // all-local reference (when asked for)
  std::vector<RunningNode> nodes;  // [0] serves, [1..kHolders] hold experts
  int layers = 0;
  double setup_s = 0;
};

inline std::vector<std::string> ServeArgs(const char* experts) {
  return {"--serve", kModel, "--serve-experts", experts, "--serve-threads", "2", "--serve-max-active",
          std::to_string(kMaxStreams)};
}

inline bool WaitHealthy(const RunningNode& n, int timeout_s) {
  tenzro::net::HttpClient api(n.http);
  return WaitFor([&] {
    auto h = api.Send("GET", "/health");
    return h && h->status == 200;
  }, seconds(timeout_s));
}

inline void CatalogAdd(const std::string& dir, const std::string& gguf) {
  auto add = RunTenzro({"--data-dir", dir, "moe", "catalog-add", "--model", kModel, "--checkpoint", gguf});
  if (add.exit_code != 0) Die("catalog-add: " + add.err);
}

inline void LoadExperts(Swarm& s) {
  const RunningNode& n0 = s.nodes[0];
  for (int layer = 0; layer < s.layers; ++layer) {
    json job = n0.CliJson({"moe", "prepare-experts", "--model-id", kModel, "--layer", std::to_string(layer),
                           "--experts", "all", "--quant", "q4_k", "--wait", "--json"});
    if (job.value("state", "") != "done") Die("prepare-experts: " + job.dump());
    for (const json& e : job["result"]["experts"]) {
      const int g = layer * kExperts + e["expert"].get<int>();
      for (int k : {g % kHolders, (g + 1) % kHolders}) {
        const RunningNode& h = s.nodes[1 + k];
        tenzro::net::ClientOptions o;
        o.timeout = seconds(120);
        tenzro::net::HttpClient c(h.admin, o);
        c.SetBearerToken(h.token);
        json body = {{"model", kModel}, {"layer", layer}, {"expert", e["expert"]}, {"file", e["uri"]},
                     {"from", n0.http_url()}};
        auto r = c.Send("POST", "/v1/moe/load-expert", body.dump());
        if (!r || r->status != 200) Die("load-expert: " + (r ? r->body : r.error().ToString()));
      }
    }
  }
}

inline std::unique_ptr<Swarm> StartSwarm(const SwarmOptions& opt) {
  const auto t0 = Clock::now();
  auto sp = std::make_unique<Swarm>();
  Swarm& s = *sp;
  s.layers = opt.layers;
  const std::string gguf = s.tmp.Join("model.gguf");
  auto shape = tenzro::model::FindSyntheticShape("qwen3.5-122b-a10b");
  tenzro::model::SyntheticOptions so;
  so.layers = opt.layers;
  so.experts = kExperts;
  so.n_vocab = kVocab;
  so.tokenizer = true;
  if (auto w = tenzro::model::WriteSyntheticModel(*shape, so, gguf); !w)
    Die("synthetic model: " + w.error().ToString());

  CatalogAdd(s.tmp.Join("n0"), gguf);
  if (opt.reference) {
    CatalogAdd(s.tmp.Join("ref"), gguf);
    NodeOptions ro;
    ro.threads = kMaxStreams + 4;  // a streamed response holds a worker thread
    ro.run_args = ServeArgs("local");
    s.local = StartNode(s.tmp.Join("ref"), ro);
    if (!s.local.running()) Die("reference node did not start");
  }

  auto swarm_flags = [](std::vector<std::string> extra) {
    std::vector<std::string> v = {"--swarm-refresh-ms", "500", "--swarm-ttl-s", "30", "--dht-port", "0"};
    v.insert(v.end(), extra.begin(), extra.end());
    return v;
  };
  NodeOptions o0;
  o0.threads = kMaxStreams + 4;
  o0.run_args = swarm_flags(ServeArgs("swarm"));
  s.nodes.push_back(StartNode(s.tmp.Join("n0"), o0));
  if (!s.nodes[0].running()) Die("node 0 did not start");
  const std::string dht = "127.0.0.1:" + std::to_string(s.nodes[0].node_json.value("dht_port", 0));
  for (int i = 1; i <= kHolders; ++i) {
    NodeOptions o;
    std::vector<std::string> extra = {"--bootstrap", dht};
    if (opt.holder_args) {
      auto more = opt.holder_args(i);
      extra.insert(extra.end(), more.begin(), more.end());
    }
    o.run_args = swarm_flags(extra);
    s.nodes.push_back(StartNode(s.tmp.Join("n" + std::to_string(i)), o));
    if (!s.nodes[i].running()) Die("holder did not start");
    if (opt.holder_started) opt.holder_started(i, s.nodes[i]);
  }
  LoadExperts(s);
  if (!WaitHealthy(s.nodes[0], 120)) Die("node 0 /health never 200: " + s.nodes[0].proc->Log());
  if (opt.reference && !WaitHealthy(s.local, 120)) Die("reference /health never 200: " + s.local.proc->Log());
  s.setup_s = Ms(Clock::now() - t0) / 1000;
  return sp;
}

inline void StopSwarm(Swarm& s) {
  for (auto& n : s.nodes) n.Stop(seconds(30));
  if (s.local.running()) s.local.Stop(seconds(30));
}

// Sums of a Prometheus histogram/counter family: "name_sum", "name_count",
// and per-label sums of "tenzro_forward_stage_seconds_sum{stage=...}".
inline std::map<std::string, double> Metrics(const RunningNode& n) {
  std::map<std::string, double> m;
  tenzro::net::HttpClient c(n.http);
  auto r = c.Send("GET", "/metrics");
  if (!r || r->status != 200) return m;
  size_t p = 0;
  while (p < r->body.size()) {
    size_t e = r->body.find('\n', p);
    if (e == std::string::npos) e = r->body.size();
    std::string line = r->body.substr(p, e - p);
    p = e + 1;
    if (line.empty() || line[0] == '#') continue;
    size_t sp = line.rfind(' ');
    if (sp == std::string::npos) continue;
    std::string key = line.substr(0, sp);
    if (key.find("_bucket") != std::string::npos) continue;
    m[key] = std::atof(line.c_str() + sp + 1);
  }
  return m;
}

struct StreamResult {
  bool ok = false;
  int tokens = 0;
  double ttft_ms = 0, decode_ms = 0;
  std::string error;
};

// One streamed completion (`stream: true`, a prompt of `prompt` token ids,
// max_tokens `tokens`, greedy, ignore_eos); counts chunks that carry text
// (one per token with the placeholder tokenizer). BENCH_DEBUG=1 prints every
// body piece as it arrives, with its time.
inline StreamResult RunStream(const RunningNode& n, int seed, int prompt, int tokens) {
  StreamResult res;
  json ids = json::array();
  for (int i = 0; i < prompt; ++i) ids.push_back((seed * 131 + i * 17) % (kVocab - 1));
  json body = {{"model", kModel}, {"prompt", ids}, {"max_tokens", tokens}, {"temperature", 0},
               {"ignore_eos", true}, {"stream", true}};
  tenzro::net::ClientOptions o;
  o.timeout = seconds(600);
  tenzro::net::HttpClient c(n.http, o);
  std::string buf;
  Clock::time_point first, last;
  const auto t0 = Clock::now();
  const bool debug = std::getenv("BENCH_DEBUG") != nullptr;
  auto sink = [&](tenzro::ByteSpan piece) -> tenzro::Result<void> {
    buf.append(reinterpret_cast<const char*>(piece.data()), piece.size());
    if (debug)
      std::fprintf(stderr, "[%d] +%.1f ms %zu bytes: %.*s\n", seed, Ms(Clock::now() - t0), piece.size(),
                   static_cast<int>(std::min<size_t>(piece.size(), 160)), reinterpret_cast<const char*>(piece.data()));
    size_t e;
    while ((e = buf.find("\n\n")) != std::string::npos) {
      std::string ev = buf.substr(0, e);
      buf.erase(0, e + 2);
      if (ev.rfind("data: ", 0) != 0 || ev == "data: [DONE]") continue;
      json j = json::parse(ev.substr(6), nullptr, false);
      if (!j.is_object() || !j.contains("choices") || j["choices"].empty()) continue;
      if (j["choices"][0].value("text", "").empty()) continue;
      last = Clock::now();
      if (res.tokens++ == 0) first = last;
    }
    return tenzro::Ok();
  };
  auto r = c.SendStreaming("POST", "/v1/completions", body.dump(), "application/json", {}, sink);
  if (!r) {
    res.error = r.error().ToString();
  } else if (r->status != 200) {
    res.error = "HTTP " + std::to_string(r->status) + ": " + r->body.substr(0, 300);
  } else if (res.tokens == 0) {
    res.error = "no token chunks";
  } else {
    res.ok = true;
    res.ttft_ms = Ms(first - t0);
    res.decode_ms = Ms(last - first);
  }
  return res;
}

// What a run of S concurrent streams measured:
//   ttft_ms            mean time to first token (request sent -> first token chunk)
//   tok_s_stream       mean decode tokens/s of one stream (tokens after the first)
//   tok_s_total        the sum over the streams (the aggregate decode rate)
//   step_ms, batch     mean tenzro_serve_step_seconds / tenzro_serve_batch_sequences
//                      over the run (node /metrics deltas; prefill steps included)
//   layer_ms           step_ms / layers (the output head is counted in it)
//   stage_ms           the dispatch stage shares of a step, where recorded
// and, from the serving node's own histograms (independent of how the HTTP
// client hands streamed pieces over):
//   itl_tok_s          1 / mean tenzro_serve_inter_token_seconds: decode
//                      tokens/s of one stream
//   server_ttft_ms     mean tenzro_serve_time_to_first_token_seconds
struct Row {
  double ttft_ms = 0, tok_s_stream = 0, tok_s_total = 0, step_ms = 0, batch = 0, layer_ms = 0, wall_ms = 0;
  double itl_tok_s = 0, server_ttft_ms = 0;
  std::map<std::string, double> stage_ms;
};

// Runs `streams` concurrent completions on `n` (one thread each); false and
// *error on the first failed stream.
inline bool RunStreams(const RunningNode& n, int layers, int streams, int prompt, int tokens, Row* row,
                       std::string* error) {
  auto before = Metrics(n);
  std::vector<StreamResult> res(streams);
  const auto t0 = Clock::now();
  std::vector<std::thread> ts;
  for (int i = 0; i < streams; ++i) ts.emplace_back([&, i] { res[i] = RunStream(n, i, prompt, tokens); });
  for (auto& t : ts) t.join();
  *row = Row{};
  row->wall_ms = Ms(Clock::now() - t0);
  auto after = Metrics(n);
  for (const auto& r : res) {
    if (!r.ok) {
      *error = r.error;
      return false;
    }
    const double tps = r.tokens > 1 ? (r.tokens - 1) / (r.decode_ms / 1000) : 0;
    row->ttft_ms += r.ttft_ms / streams;
    row->tok_s_stream += tps / streams;
    row->tok_s_total += tps;
  }
  auto delta = [&](const std::string& k) { return after[k] - before[k]; };
  const double steps = delta("tenzro_serve_step_seconds_count");
  if (steps > 0) {
    row->step_ms = delta("tenzro_serve_step_seconds_sum") * 1000 / steps;
    row->batch = delta("tenzro_serve_batch_sequences_sum") / steps;
    const std::string pre = "tenzro_forward_stage_seconds_sum{stage=\"";
    for (const auto& [k, v] : after)
      if (k.rfind(pre, 0) == 0 && v - before[k] > 0)
        row->stage_ms[k.substr(pre.size(), k.size() - pre.size() - 2)] = (v - before[k]) * 1000 / steps;
  }
  row->layer_ms = row->step_ms / layers;
  const double itl = delta("tenzro_serve_inter_token_seconds_sum");
  if (itl > 0) row->itl_tok_s = delta("tenzro_serve_inter_token_seconds_count") / itl;
  const double firsts = delta("tenzro_serve_time_to_first_token_seconds_count");
  if (firsts > 0) row->server_ttft_ms = delta("tenzro_serve_time_to_first_token_seconds_sum") * 1000 / firsts;
  return true;
}

}  // namespace tenzro::bench
