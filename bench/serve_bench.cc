// Serving throughput on a loopback swarm (issue 16; docs/serving.md
// "Throughput"): the OpenAI-compatible API of a node whose routed experts
// run on three holder processes, against an all-local node serving the same
// model, in the same run.
//
// Setup (once, bounded, loopback only, temp dir removed at exit): the swarm
// and the all-local reference of bench/serve_swarm.h, SERVE_BENCH_LAYERS
// layers (default 2).
// Each benchmark (manual time, one iteration) issues S concurrent streamed
// completions (`stream: true`, a prompt of SERVE_BENCH_PROMPT token ids,
// max_tokens SERVE_BENCH_TOKENS, greedy, ignore_eos), one thread per stream
// through net::HttpClient::SendStreaming. Counters: those of
// serve_swarm.h's Row (ttft_ms, tok_s_stream, tok_s_total, step_ms, batch,
// layer_ms, the dispatch stage shares) and step_ms_48L = layer_ms x 48, a
// 48-layer model's step, extrapolated. The console table at the end puts
// swarm and local side by side. BENCH_DEBUG=1 prints every body piece as it
// arrives, with its time.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "serve_swarm.h"

namespace {

using namespace tenzro::bench;  // NOLINT: the bench's own helpers

const int kLayers = EnvInt("SERVE_BENCH_LAYERS", 2);
const int kPrompt = EnvInt("SERVE_BENCH_PROMPT", 32);
const int kTokens = EnvInt("SERVE_BENCH_TOKENS", 16);

std::unique_ptr<Swarm> g_swarm;

Swarm& Setup() {
  if (g_swarm) return *g_swarm;
  SwarmOptions o;
  o.layers = kLayers;
  g_swarm = StartSwarm(o);
  std::fprintf(stderr, "serve_bench: %d layers x %d experts, 4 nodes + reference up in %.1f s\n", kLayers, kExperts,
               g_swarm->setup_s);
  return *g_swarm;
}

std::map<std::pair<std::string, int>, Row> g_rows;

void BM_Serve(benchmark::State& state, bool swarm) {
  Swarm& s = Setup();
  const RunningNode& n = swarm ? s.nodes[0] : s.local;
  const int streams = static_cast<int>(state.range(0));
  for (auto _ : state) {
    Row row;
    std::string error;
    if (!RunStreams(n, kLayers, streams, kPrompt, kTokens, &row, &error)) {
      state.SkipWithError(error.c_str());
      return;
    }
    state.SetIterationTime(row.wall_ms / 1000);
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
    StopSwarm(*g_swarm);
    g_swarm.reset();  // removes the temp dir
  }
  benchmark::Shutdown();
  return 0;
}
