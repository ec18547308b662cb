// Quantize / dequantize throughput per type, one thread and all threads,
// against memcpy of the same number of bytes measured in the same run.
//
// Bytes are f32 bytes: input for quantize, output for dequantize. Counters:
//   bytes_per_second  f32 MB/s (Google Benchmark's SetBytesProcessed)
//   vs_memcpy         throughput / memcpy throughput of the same byte count
// Run: quant_bench --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <random>
#include <vector>

#include "core/cpu.h"
#include "quant/quantize_kernels.h"
#include "quant/types.h"

namespace {

using tenzro::quant::GgmlType;

constexpr int64_t kRowLen = 4096;
constexpr int64_t kRows = 256;  // 4 MiB of f32
constexpr int64_t kValues = kRowLen * kRows;

const std::vector<float>& Input() {
  static const std::vector<float> v = [] {
    std::vector<float> v(kValues);
    std::mt19937 rng(7);
    std::normal_distribution<float> g(0.f, 0.02f);
    for (auto& x : v) x = g(rng);
    return v;
  }();
  return v;
}

// memcpy bandwidth (bytes/s) for `bytes`, measured now.
double MemcpyRate(size_t bytes) {
  static std::vector<uint8_t> a(kValues * 4, 1), b(kValues * 4);
  const size_t n = std::min(bytes, a.size());
  int iters = 0;
  const auto start = std::chrono::steady_clock::now();
  std::chrono::duration<double> el{};
  do {
    std::memcpy(b.data(), a.data(), n);
    benchmark::DoNotOptimize(b.data());
    benchmark::ClobberMemory();
    ++iters;
    el = std::chrono::steady_clock::now() - start;
  } while (el.count() < 0.05);
  return static_cast<double>(n) * iters / el.count();
}

void Finish(benchmark::State& st, double seconds) {
  const double bytes = static_cast<double>(kValues) * 4 * st.iterations();
  st.SetBytesProcessed(static_cast<int64_t>(bytes));
  st.counters["vs_memcpy"] = (bytes / seconds) / MemcpyRate(kValues * 4);
  st.counters["memcpy_GBps"] = MemcpyRate(kValues * 4) / 1e9;
}

void BM_Quantize(benchmark::State& st, GgmlType type, bool all_threads) {
  const auto& in = Input();
  std::vector<uint8_t> out(*tenzro::quant::RowBytes(type, kRowLen) * kRows);
  const int threads = all_threads ? tenzro::HardwareThreads() : 1;
  double secs = 0;
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = tenzro::quant::QuantizeRowsParallel(type, in.data(), out.data(), kRows, kRowLen, threads);
    benchmark::DoNotOptimize(out.data());
    secs += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r) st.SkipWithError(r.error().ToString().c_str());
  }
  st.counters["threads"] = threads;
  Finish(st, secs);
}

void BM_QuantizeScalar(benchmark::State& st, GgmlType type) {
  const auto& in = Input();
  std::vector<uint8_t> out(*tenzro::quant::RowBytes(type, kRowLen) * kRows);
  double secs = 0;
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = tenzro::quant::QuantizeRowsIsa(tenzro::quant::Isa::kScalar, type, in.data(), out.data(), kRows, kRowLen);
    benchmark::DoNotOptimize(out.data());
    secs += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r) st.SkipWithError(r.error().ToString().c_str());
  }
  Finish(st, secs);
}

void BM_Dequantize(benchmark::State& st, GgmlType type, bool all_threads) {
  const auto& in = Input();
  const uint64_t row_bytes = *tenzro::quant::RowBytes(type, kRowLen);
  std::vector<uint8_t> q(row_bytes * kRows);
  if (tenzro::quant::FindTraits(type)->from_float) {
    (void)tenzro::quant::QuantizeRows(type, in.data(), q.data(), kRows, kRowLen);
  } else {
    std::mt19937 rng(3);
    for (auto& b : q) b = static_cast<uint8_t>(rng());
  }
  std::vector<float> out(kValues);
  const int threads = all_threads ? tenzro::HardwareThreads() : 1;
  double secs = 0;
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = tenzro::quant::DequantizeRowsParallel(type, q.data(), out.data(), kRows, kRowLen, threads);
    benchmark::DoNotOptimize(out.data());
    secs += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r) st.SkipWithError(r.error().ToString().c_str());
  }
  st.counters["threads"] = threads;
  Finish(st, secs);
}

void BM_Memcpy(benchmark::State& st) {
  std::vector<uint8_t> a(kValues * 4, 1), b(kValues * 4);
  for (auto _ : st) {
    std::memcpy(b.data(), a.data(), a.size());
    benchmark::DoNotOptimize(b.data());
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(a.size()) * st.iterations());
  st.counters["vs_memcpy"] = 1.0;
}

void Register() {
  struct T {
    const char* name;
    GgmlType type;
    bool encode;
  } types[] = {{"f16", GgmlType::F16, true},   {"bf16", GgmlType::BF16, true}, {"q8_0", GgmlType::Q8_0, true},
               {"q4_K", GgmlType::Q4_K, true}, {"q5_K", GgmlType::Q5_K, true}, {"q6_K", GgmlType::Q6_K, true},
               {"q4_0", GgmlType::Q4_0, false}, {"mxfp4", GgmlType::MXFP4, false}};
  benchmark::RegisterBenchmark("memcpy", BM_Memcpy)->UseRealTime();
  for (const auto& t : types) {
    const std::string n = t.name;
    if (t.encode) {
      benchmark::RegisterBenchmark(("quantize/" + n + "/scalar_ref").c_str(), BM_QuantizeScalar, t.type)->UseRealTime();
      benchmark::RegisterBenchmark(("quantize/" + n + "/1thread").c_str(), BM_Quantize, t.type, false)->UseRealTime();
      benchmark::RegisterBenchmark(("quantize/" + n + "/all_threads").c_str(), BM_Quantize, t.type, true)->UseRealTime();
    }
    benchmark::RegisterBenchmark(("dequantize/" + n + "/1thread").c_str(), BM_Dequantize, t.type, false)->UseRealTime();
    benchmark::RegisterBenchmark(("dequantize/" + n + "/all_threads").c_str(), BM_Dequantize, t.type, true)->UseRealTime();
  }
}

}  // namespace

int main(int argc, char** argv) {
  Register();
  benchmark::Initialize(&argc, argv);
  benchmark::AddCustomContext("cpu_features", tenzro::GetCpuFeatures().ToString());
  benchmark::AddCustomContext("quant_isa", tenzro::quant::IsaName(tenzro::quant::BestIsa()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
