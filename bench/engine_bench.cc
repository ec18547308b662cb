// The model engine's spine at the Qwen3.5-122B-A10B shape (random weights,
// synthetic.h): 4 layers (3 gated delta net + 1 gated attention, the model's
// own 3:1 pattern), dense matrices Q4_K, vocabulary cut to 32,768 (the
// output head is then 1/7.6 of the real one's bytes). The MoE blocks are
// replaced by a no-op executor so that only the spine is timed (the experts
// have their own benchmark, expert_bench).
//
//   BM_SpineDecode   one token per step after a 64-token prompt; counters:
//                    ms per token, dense bytes read per token, weight GB/s
//                    and bw_ratio = that / this machine's read bandwidth
//                    with the same thread count (same run). Target >= 0.7
//                    on one thread.
//   BM_Prefill       a 512-token prompt in one step: tokens/s.
//   BM_SpineVerify   speculative decoding's step: the last token plus
//                    `draft` drafted ones with rollback on, then
//                    Engine::Rollback to 1 (every draft rejected, the worst
//                    case): ms per step, against BM_SpineDecode's.
//   BM_DeltaRule     one recurrent delta-rule step of one value head
//                    (d_k = d_v = 128), scalar and the dispatched ISA:
//                    GFLOP/s against the measured one-thread FMA peak
//                    (7 d_k d_v FLOPs per step).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <vector>

#include <unistd.h>

#include "machine_limits.h"
#include "model/engine.h"
#include "model/delta_rule.h"
#include "model/layers.h"
#include "runtime/matmul.h"
#include "model/synthetic.h"

namespace {

using namespace tenzro::model;
namespace runtime = tenzro::runtime;
using tenzro::bench::Bandwidth;

constexpr int kLayers = 4, kVocab = 32768;

class NullMoe : public MoeExecutor {
 public:
  explicit NullMoe(int64_t n_embd) : n_embd_(n_embd) {}
  tenzro::Result<void> Run(int, const float*, int n_tok, float* out) override {
    std::fill_n(out, n_tok * n_embd_, 0.0f);
    return tenzro::Ok();
  }

 private:
  int64_t n_embd_;
};

bool g_model_written = false;

const std::string& ModelPath() {
  static std::string path = [] {
    std::string p = (std::filesystem::temp_directory_path() / ("engine-bench-" + std::to_string(::getpid()) + ".gguf")).string();
    auto shape = FindSyntheticShape("qwen3.5-122b-a10b");
    SyntheticOptions o;
    o.layers = kLayers;
    o.experts = 2;
    o.n_vocab = kVocab;
    o.dense_type = tenzro::quant::GgmlType::Q4_K;
    auto w = WriteSyntheticModel(*shape, o, p);
    if (!w) std::fprintf(stderr, "synthetic model: %s\n", w.error().ToString().c_str()), std::exit(1);
    g_model_written = true;
    return p;
  }();
  return path;
}

std::unique_ptr<Engine> OpenEngine(int threads) {
  EngineOptions o;
  o.threads = threads;
  o.session_budget = 8ull << 30;
  auto e = Engine::Open(ModelPath(), o, std::make_unique<NullMoe>(3072));
  if (!e) std::fprintf(stderr, "engine: %s\n", e.error().ToString().c_str()), std::exit(1);
  return std::move(*e);
}

void BM_ReadBandwidth(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  double bw = 0;
  for (auto _ : state) bw = tenzro::bench::MeasureReadBandwidth(threads);
  Bandwidth()[threads] = bw;
  state.counters["GB/s"] = bw / 1e9;
}
BENCHMARK(BM_ReadBandwidth)->Arg(1)->Arg(2)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_FmaPeak(benchmark::State& state) {
  for (auto _ : state) tenzro::bench::FmaPeak() = tenzro::bench::MeasureFmaPeak();
  state.counters["GFLOP/s"] = tenzro::bench::FmaPeak() / 1e9;
}
BENCHMARK(BM_FmaPeak)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_SpineDecode(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  auto e = OpenEngine(threads);
  auto s = e->NewSession(4096);
  std::vector<int32_t> prompt(64);
  for (int i = 0; i < 64; ++i) prompt[i] = (i * 131) % kVocab;
  std::vector<float> logits;
  Engine::SeqInput in{s->get(), prompt, false};
  if (!e->Step({&in, 1}, logits)) return state.SkipWithError("prefill failed");
  int32_t tok = 7;
  for (auto _ : state) {
    Engine::SeqInput st{s->get(), {&tok, 1}, false};
    if (!e->Step({&st, 1}, logits)) return state.SkipWithError("step failed");
    tok = (tok * 31 + 1) % kVocab;
    if ((*s)->n_past() >= 4000) state.SkipWithError("session full");
  }
  const double bytes = static_cast<double>(e->weights().bytes_per_token());
  const double calls = static_cast<double>(state.iterations());
  state.counters["ms"] = benchmark::Counter(calls * 1e-3, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["MB_per_tok"] = bytes / 1e6;
  state.counters["weight_GB/s"] = benchmark::Counter(calls * bytes / 1e9, benchmark::Counter::kIsRate);
  auto bw = Bandwidth().find(threads);
  if (bw != Bandwidth().end())
    state.counters["bw_ratio"] = benchmark::Counter(calls * bytes / bw->second, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SpineDecode)->ArgName("thr")->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_Prefill(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  auto e = OpenEngine(threads);
  std::vector<int32_t> prompt(512);
  for (int i = 0; i < 512; ++i) prompt[i] = (i * 131) % kVocab;
  std::vector<float> logits;
  for (auto _ : state) {
    auto s = e->NewSession(512);
    Engine::SeqInput in{s->get(), prompt, false};
    if (!e->Step({&in, 1}, logits)) return state.SkipWithError("prefill failed");
  }
  state.counters["tok/s"] = benchmark::Counter(state.iterations() * 512.0, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Prefill)->ArgName("thr")->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_SpineVerify(benchmark::State& state) {
  const int draft = static_cast<int>(state.range(0));
  auto e = OpenEngine(1);
  auto s = e->NewSession(4096, draft + 1);
  std::vector<int32_t> prompt(64);
  for (int i = 0; i < 64; ++i) prompt[i] = (i * 131) % kVocab;
  std::vector<float> logits;
  Engine::SeqInput in{s->get(), prompt, false};
  if (!e->Step({&in, 1}, logits)) return state.SkipWithError("prefill failed");
  std::vector<int32_t> feed(draft + 1);
  int32_t tok = 7;
  for (auto _ : state) {
    for (int32_t& t : feed) t = tok = (tok * 31 + 1) % kVocab;
    Engine::SeqInput st{s->get(), feed, true, true};
    if (!e->Step({&st, 1}, logits)) return state.SkipWithError("step failed");
    if (!e->Rollback(s->get(), 1)) return state.SkipWithError("rollback failed");
    if ((*s)->n_past() >= 4000) state.SkipWithError("session full");
  }
  state.counters["ms"] =
      benchmark::Counter(state.iterations() * 1e-3, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_SpineVerify)->ArgName("draft")->Arg(4)->Arg(8)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_DeltaRule(benchmark::State& state) {
  const int dk = 128, dv = 128;
  const bool scalar = state.range(0) == 0;
  std::vector<float> S(dk * dv, 0.01f), q(dk, 0.1f), k(dk, 0.088f), v(dv, 0.5f), o(dv);
  for (auto _ : state) {
    if (scalar)
      DeltaRuleStepScalar(S.data(), q.data(), k.data(), v.data(), 0.97f, 0.5f, dk, dv, o.data());
    else
      DeltaRuleStep(S.data(), q.data(), k.data(), v.data(), 0.97f, 0.5f, dk, dv, o.data());
    benchmark::DoNotOptimize(o.data());
  }
  state.SetLabel(scalar ? "scalar" : runtime::KernelIsaName(DeltaRuleIsa(dv)));
  const double flops = 7.0 * dk * dv;
  state.counters["GFLOP/s"] = benchmark::Counter(state.iterations() * flops / 1e9, benchmark::Counter::kIsRate);
  if (tenzro::bench::FmaPeak() > 0)
    state.counters["peak_ratio"] =
        benchmark::Counter(state.iterations() * flops / tenzro::bench::FmaPeak(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_DeltaRule)->ArgName("dispatch")->Arg(0)->Arg(1)->UseRealTime()->MinTime(0.5);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (g_model_written) std::filesystem::remove(ModelPath());
  return 0;
}
