// Serving throughput on a loopback swarm (issue 16; docs/serving.md
// "Throughput"): the OpenAI-compatible API of a node whose routed experts
// run on three holder processes, against an all-local node serving the same
// model, in the same run.
//
// Setup (once, bounded, loopback only, temp dir removed at exit):
//   * a Qwen3.5-122B-A10B-shape model with random weights (model/synthetic.h):
//     SERVE_BENCH_LAYERS layers (default 2: both gated delta net; 4 adds the
//     gated-attention layer), 16 experts, top-8, vocabulary 4,096, Q4_K
//     dense and experts, with a placeholder tokenizer (prompts are token ids);
//   * the reference: one node, `--serve ID --serve-experts local`;
//   * the swarm: node 0 `--serve ID` (experts on the swarm) prepares every
//     expert (q4_k, the stored type) and loads none; 3 holders load them by
//     blob URI, replication 2; node 0's GET /health = 200 means every expert
//     has a live holder.
// Each benchmark (manual time, one iteration) issues S concurrent streamed
// completions (`stream: true`, a prompt of SERVE_BENCH_PROMPT token ids,
// max_tokens SERVE_BENCH_TOKENS, greedy, ignore_eos), one thread per stream
// through net::HttpClient::SendStreaming. Counters:
//   ttft_ms            mean time to first token (request sent -> first token chunk)
//   tok_s_stream       mean decode tokens/s of one stream (tokens after the first)
//   tok_s_total        the sum over the streams (the aggregate decode rate)
//   step_ms, batch     mean tenzro_serve_step_seconds / tenzro_serve_batch_sequences
//                      over the run (node /metrics deltas; prefill steps included)
//   layer_ms           step_ms / layers (the output head is counted in it)
//   step_ms_48L        layer_ms x 48: a 48-layer model's step, extrapolated
// and, where the node records them, the dispatch stage shares of a step.
// The console table at the end puts swarm and local side by side.
// SERVE_BENCH_DEBUG=1 prints every body piece as it arrives, with its time.
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/synthetic.h"
#include "net/client.h"
#include "testutil/node_process.h"

namespace {

using nlohmann::json;
using tenzro::testing::NodeOptions;
using tenzro::testing::RunningNode;
using tenzro::testing::RunTenzro;
using tenzro::testing::StartNode;
using tenzro::testing::TempDir;
using tenzro::testing::WaitFor;
using Clock = std::chrono::steady_clock;
using std::chrono::seconds;

constexpr const char* kModel = "synthetic-qwen35-122b";
constexpr int kExperts = 16, kVocab = 4096, kHolders = 3, kMaxStreams = 16;

int EnvInt(const char* name, int def) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : def;
}
const int kLayers = EnvInt("SERVE_BENCH_LAYERS", 2);
const int kPrompt = EnvInt("SERVE_BENCH_PROMPT", 32);
const int kTokens = EnvInt("SERVE_BENCH_TOKENS", 16);

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "serve_bench: %s\n", what.c_str());
  std::exit(1);
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// The processes and files of the run; built on first use, torn down by Stop().
struct Swarm {
  TempDir tmp;
  RunningNode local;               // all-local reference
  std::vector<RunningNode> nodes;  // [0] serves, [1..3] hold experts
  double setup_s = 0;
};
std::unique_ptr<Swarm> g_swarm;

std::vector<std::string> ServeArgs(const char* experts) {
  return {"--serve", kModel, "--serve-experts", experts, "--serve-threads", "2", "--serve-max-active",
          std::to_string(kMaxStreams)};
}

bool WaitHealthy(const RunningNode& n, int timeout_s) {
  tenzro::net::HttpClient api(n.http);
  return WaitFor([&] {
    auto h = api.Send("GET", "/health");
    return h && h->status == 200;
  }, seconds(timeout_s));
}

void CatalogAdd(const std::string& dir, const std::string& gguf) {
  auto add = RunTenzro({"--data-dir", dir, "moe", "catalog-add", "--model", kModel, "--checkpoint", gguf});
  if (add.exit_code != 0) Die("catalog-add: " + add.err);
}

void LoadExperts(Swarm& s) {
  const RunningNode& n0 = s.nodes[0];
  for (int layer = 0; layer < kLayers; ++layer) {
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

Swarm& Setup() {
  if (g_swarm) return *g_swarm;
  const auto t0 = Clock::now();
  g_swarm = std::make_unique<Swarm>();
  Swarm& s = *g_swarm;
  const std::string gguf = s.tmp.Join("model.gguf");
  auto shape = tenzro::model::FindSyntheticShape("qwen3.5-122b-a10b");
  tenzro::model::SyntheticOptions so;
  so.layers = kLayers;
  so.experts = kExperts;
  so.n_vocab = kVocab;
  so.tokenizer = true;
  if (auto w = tenzro::model::WriteSyntheticModel(*shape, so, gguf); !w) Die("synthetic model: " + w.error().ToString());

  CatalogAdd(s.tmp.Join("ref"), gguf);
  CatalogAdd(s.tmp.Join("n0"), gguf);
  NodeOptions ro;
  ro.threads = kMaxStreams + 4;  // a streamed response holds a worker thread
  ro.run_args = ServeArgs("local");
  s.local = StartNode(s.tmp.Join("ref"), ro);
  if (!s.local.running()) Die("reference node did not start");

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
    o.run_args = swarm_flags({"--bootstrap", dht});
    s.nodes.push_back(StartNode(s.tmp.Join("n" + std::to_string(i)), o));
    if (!s.nodes[i].running()) Die("holder did not start");
  }
  LoadExperts(s);
  if (!WaitHealthy(s.nodes[0], 120)) Die("node 0 /health never 200: " + s.nodes[0].proc->Log());
  if (!WaitHealthy(s.local, 120)) Die("reference /health never 200: " + s.local.proc->Log());
  s.setup_s = Ms(Clock::now() - t0) / 1000;
  std::fprintf(stderr, "serve_bench: %d layers x %d experts, 4 nodes + reference up in %.1f s\n", kLayers, kExperts,
               s.setup_s);
  return s;
}

// Sums of a Prometheus histogram/counter family: "name_sum", "name_count",
// and per-label sums of "tenzro_forward_stage_seconds_sum{stage=...}".
std::map<std::string, double> Metrics(const RunningNode& n) {
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

// One streamed completion; counts chunks that carry text (one per token with
// the placeholder tokenizer).
StreamResult RunStream(const RunningNode& n, int seed) {
  StreamResult res;
  json prompt = json::array();
  for (int i = 0; i < kPrompt; ++i) prompt.push_back((seed * 131 + i * 17) % (kVocab - 1));
  json body = {{"model", kModel}, {"prompt", prompt}, {"max_tokens", kTokens}, {"temperature", 0},
               {"ignore_eos", true}, {"stream", true}};
  tenzro::net::ClientOptions o;
  o.timeout = seconds(600);
  tenzro::net::HttpClient c(n.http, o);
  std::string buf;
  Clock::time_point first, last;
  const auto t0 = Clock::now();
  auto sink = [&](tenzro::ByteSpan piece) -> tenzro::Result<void> {
    buf.append(reinterpret_cast<const char*>(piece.data()), piece.size());
    if (std::getenv("SERVE_BENCH_DEBUG"))
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

struct Row {
  double ttft_ms, tok_s_stream, tok_s_total, step_ms, batch, layer_ms;
  std::map<std::string, double> stage_ms;  // per step, where recorded
};
std::map<std::pair<std::string, int>, Row> g_rows;

void BM_Serve(benchmark::State& state, bool swarm) {
  Swarm& s = Setup();
  const RunningNode& n = swarm ? s.nodes[0] : s.local;
  const int streams = static_cast<int>(state.range(0));
  for (auto _ : state) {
    auto before = Metrics(n);
    std::vector<StreamResult> res(streams);
    const auto t0 = Clock::now();
    std::vector<std::thread> ts;
    for (int i = 0; i < streams; ++i) ts.emplace_back([&, i] { res[i] = RunStream(n, i); });
    for (auto& t : ts) t.join();
    state.SetIterationTime(Ms(Clock::now() - t0) / 1000);
    auto after = Metrics(n);
    Row row{};
    for (const auto& r : res) {
      if (!r.ok) {
        state.SkipWithError(r.error.c_str());
        return;
      }
      const double tps = r.tokens > 1 ? (r.tokens - 1) / (r.decode_ms / 1000) : 0;
      row.ttft_ms += r.ttft_ms / streams;
      row.tok_s_stream += tps / streams;
      row.tok_s_total += tps;
    }
    auto delta = [&](const std::string& k) { return after[k] - before[k]; };
    const double steps = delta("tenzro_serve_step_seconds_count");
    if (steps > 0) {
      row.step_ms = delta("tenzro_serve_step_seconds_sum") * 1000 / steps;
      row.batch = delta("tenzro_serve_batch_sequences_sum") / steps;
      const std::string pre = "tenzro_forward_stage_seconds_sum{stage=\"";
      for (const auto& [k, v] : after)
        if (k.rfind(pre, 0) == 0 && v - before[k] > 0)
          row.stage_ms[k.substr(pre.size(), k.size() - pre.size() - 2)] = (v - before[k]) * 1000 / steps;
    }
    row.layer_ms = row.step_ms / kLayers;
    state.counters["ttft_ms"] = row.ttft_ms;
    state.counters["tok_s_stream"] = row.tok_s_stream;
    state.counters["tok_s_total"] = row.tok_s_total;
    state.counters["step_ms"] = row.step_ms;
    state.counters["batch"] = row.batch;
    state.counters["layer_ms"] = row.layer_ms;
    state.counters["step_ms_48L"] = row.layer_ms * 48;
    for (const auto& [stage, ms] : row.stage_ms) state.counters["stage_" + stage + "_ms"] = ms;
    g_rows[{swarm ? "swarm" : "local", streams}] = row;
  }
  state.SetLabel(swarm ? "experts on 3 holders" : "all-local reference");
}

void Streams(benchmark::internal::Benchmark* b) {
  for (int s : {1, 4, kMaxStreams}) b->Arg(s);
  b->ArgName("streams")->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
}
BENCHMARK_CAPTURE(BM_Serve, swarm, true)->Apply(Streams);
BENCHMARK_CAPTURE(BM_Serve, local, false)->Apply(Streams);

void PrintTable() {
  if (g_rows.empty()) return;
  std::printf("\nserve_bench: %d layers, %d experts top-8, vocab %d, prompt %d, max_tokens %d (setup %.1f s)\n",
              kLayers, kExperts, kVocab, kPrompt, kTokens, g_swarm ? g_swarm->setup_s : 0.0);
  std::printf("%-6s %7s %9s %12s %11s %9s %6s %9s %11s\n", "mode", "streams", "ttft_ms", "tok/s/strm", "tok/s tot",
              "step_ms", "batch", "layer_ms", "48L step_ms");
  for (const auto& [key, r] : g_rows) {
    std::printf("%-6s %7d %9.1f %12.2f %11.2f %9.2f %6.2f %9.2f %11.1f\n", key.first.c_str(), key.second, r.ttft_ms,
                r.tok_s_stream, r.tok_s_total, r.step_ms, r.batch, r.layer_ms, r.layer_ms * 48);
    for (const auto& [stage, ms] : r.stage_ms)
      std::printf("         stage %-8s %8.2f ms/step (%.0f%%)\n", stage.c_str(), ms,
                  r.step_ms > 0 ? 100 * ms / r.step_ms : 0.0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  PrintTable();
  if (g_swarm) {
    for (auto& n : g_swarm->nodes) n.Stop(seconds(30));
    g_swarm->local.Stop(seconds(30));
    g_swarm.reset();  // removes the temp dir
  }
  benchmark::Shutdown();
  return 0;
}
