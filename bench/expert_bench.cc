// One routed expert at Qwen3.5-122B-A10B shape (n_embd 3072, expert FFN 1024)
// in q4_k_m (gate/up Q4_K, down Q6_K), q4_k, q8_0 and bf16, random weights;
// batch 1 / 8 / 64 tokens; 1 and 2 threads.
//
// Counters: ms per call; GB/s of weights streamed; GFLOP/s (2 * 3 * n_embd *
// n_ff * tokens); bw_ratio = weight GB/s / this machine's read bandwidth with
// the same thread count, measured in the same run (AVX2 sum over a 1 GiB
// buffer, BM_ReadBandwidth). Batch 1 is bandwidth-bound (aim: bw_ratio >=
// 0.7); batch 64 is compute-bound (watch GFLOP/s and thread scaling).
// Times are wall-clock (UseRealTime): run it on an otherwise idle machine.
// The kernel ISA (BestKernelIsa) and the CPU flags are printed and stored in
// the JSON context; TENZRO_RUNTIME_ISA=avx2 runs the AVX2 kernels on an
// AVX-512 machine for an A/B in the same binary.
//
// ggml CPU backend, same machine, one expert of this shape: run
// bench/ggml_ref/ggml_expert_ref.c back to back with this (the host drifts);
// docs/compute.md has the table. The older reference:
//   Q4_K gate/up/down: 1 tok 0.43 ms (2 thr 0.27), 8 tok 3.2 ms, 64 tok 37.7 ms (2 thr 18.3)
//   Q6_K down:         1 tok 0.64 ms (2 thr 0.38), 8 tok 5.1 ms, 64 tok 25.4 ms (2 thr 13.5)
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <memory>
#include <thread>
#include <vector>

#include "../tests/runtime/test_weights.h"
#include "machine_limits.h"
#include "core/cpu.h"
#include "core/thread_pool.h"
#include "runtime/act_quant.h"
#include "runtime/expert_ffn.h"
#include "runtime/matmul.h"
#include "runtime/parallel.h"

namespace {

using tenzro::quant::GgmlType;
using namespace tenzro::runtime;
using tenzro::bench::Bandwidth;
using tenzro::bench::MeasureReadBandwidth;

constexpr int64_t kEmbd = 3072, kFf = 1024;

void BM_ReadBandwidth(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  double bw = 0;
  for (auto _ : state) bw = MeasureReadBandwidth(threads);
  state.counters["GB/s"] = bw / 1e9;
}
BENCHMARK(BM_ReadBandwidth)->Arg(1)->Arg(2)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);

struct Format { const char* name; GgmlType gu, down; };
const Format kFormats[] = {{"q4_k_m", GgmlType::Q4_K, GgmlType::Q6_K},
                           {"q4_k", GgmlType::Q4_K, GgmlType::Q4_K},
                           {"q8_0", GgmlType::Q8_0, GgmlType::Q8_0},
                           {"bf16", GgmlType::BF16, GgmlType::BF16}};

const ExpertWeights& Expert(int f) {
  static std::map<int, ExpertWeights> cache;
  auto it = cache.find(f);
  if (it == cache.end()) {
    ExpertWeights e;
    e.gate = testing::RandomMatrix(kFormats[f].gu, kFf, kEmbd, 1);
    e.up = testing::RandomMatrix(kFormats[f].gu, kFf, kEmbd, 2);
    e.down = testing::RandomMatrix(kFormats[f].down, kEmbd, kFf, 3);
    it = cache.emplace(f, std::move(e)).first;
  }
  return it->second;
}

// The helpers' poll before sleeping: the compute pools' setting, or
// TENZRO_BENCH_SPIN_US (0: sleep at once) for a same-binary A/B.
std::chrono::microseconds PoolSpin() {
  if (const char* v = std::getenv("TENZRO_BENCH_SPIN_US")) return std::chrono::microseconds(std::atoi(v));
  return kComputePoolSpin;
}

void BM_ExpertFfn(benchmark::State& state) {
  const int f = static_cast<int>(state.range(0));
  const int n_tok = static_cast<int>(state.range(1));
  const int threads = static_cast<int>(state.range(2));
  const ExpertWeights& e = Expert(f);
  std::unique_ptr<tenzro::ThreadPool> pool;
  if (threads > 1) pool = std::make_unique<tenzro::ThreadPool>(threads - 1, "bench", PoolSpin());
  const auto x = testing::RandomActs(n_tok * kEmbd, 7);
  std::vector<float> y(n_tok * kEmbd);
  for (auto _ : state) {
    if (!ExpertFfn(e, x.data(), n_tok, y.data(), pool.get())) state.SkipWithError("ExpertFfn failed");
    benchmark::DoNotOptimize(y.data());
  }
  state.SetLabel(kFormats[f].name);
  const double calls = static_cast<double>(state.iterations());
  state.counters["ms"] = benchmark::Counter(calls * 1e-3, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["weight_GB/s"] = benchmark::Counter(calls * e.bytes() / 1e9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] =
      benchmark::Counter(calls * 2.0 * 3 * kEmbd * kFf * n_tok / 1e9, benchmark::Counter::kIsRate);
  auto bw = Bandwidth().find(threads);
  if (bw != Bandwidth().end())
    state.counters["bw_ratio"] = benchmark::Counter(calls * e.bytes() / bw->second, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ExpertFfn)
    ->ArgNames({"fmt", "tok", "thr"})
    ->ArgsProduct({{0, 1, 2, 3}, {1, 8, 64}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(0.3);

// The pieces of one expert at 1/8/64 tokens, 1 thread: activation
// quantization (the 3072-wide input), and the gate (3072 -> 1024) or down
// (1024 -> 3072) matrix alone.
void BM_QuantizeActs(benchmark::State& state) {
  const int n_tok = static_cast<int>(state.range(0));
  const auto x = testing::RandomActs(n_tok * kEmbd, 7);
  QuantizedActs q;
  for (auto _ : state) {
    QuantizeActs(x.data(), n_tok, kEmbd, &q);
    benchmark::DoNotOptimize(q.qs.data());
  }
}
BENCHMARK(BM_QuantizeActs)->ArgName("tok")->Arg(1)->Arg(8)->Arg(64)->Unit(benchmark::kMicrosecond);

void BM_MatMul(benchmark::State& state) {
  const int f = static_cast<int>(state.range(0));
  const bool down = state.range(1) != 0;
  const int n_tok = static_cast<int>(state.range(2));
  const ExpertWeights& e = Expert(f);
  const WeightMatrix& w = down ? e.down : e.gate;
  const auto x = testing::RandomActs(n_tok * w.row_len, 7);
  QuantizedActs q;
  if (UsesQuantizedActs(w.type)) QuantizeActs(x.data(), n_tok, w.row_len, &q, UsesTokenTiles(w.type));
  std::vector<float> y(n_tok * w.rows);
  const MatMulJob job{&w, x.data(), &q, y.data()};
  for (auto _ : state) {
    RunMatMuls(BestKernelIsa(), &job, 1, n_tok, nullptr);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetLabel(kFormats[f].name);
  state.counters["GFLOP/s"] = benchmark::Counter(state.iterations() * 2.0 * kEmbd * kFf * n_tok / 1e9,
                                                 benchmark::Counter::kIsRate);
}
BENCHMARK(BM_MatMul)
    ->ArgNames({"fmt", "down", "tok"})
    ->ArgsProduct({{0, 1, 2}, {0, 1}, {1, 8, 64}})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.2);

}  // namespace

int main(int argc, char** argv) {
  Bandwidth()[1] = MeasureReadBandwidth(1);
  Bandwidth()[2] = MeasureReadBandwidth(2);
  std::printf("read bandwidth: 1 thread %.1f GB/s, 2 threads %.1f GB/s\n", Bandwidth()[1] / 1e9,
              Bandwidth()[2] / 1e9);
  // Which kernels ran (TENZRO_RUNTIME_ISA=avx2 or =scalar forces a lower set
  // for a same-binary comparison) and what the CPU offers.
  const char* isa = KernelIsaName(BestKernelIsa());
  const std::string features = tenzro::GetCpuFeatures().ToString();
  std::printf("kernel isa: %s; cpu features: %s\n", isa, features.c_str());
  benchmark::AddCustomContext("kernel_isa", isa);
  benchmark::AddCustomContext("cpu_features", features);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
