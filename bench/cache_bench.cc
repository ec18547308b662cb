// Expert cache: cold -> warm promotion throughput against a plain read of the
// same file bytes, measured in the same run.
//
// 16 synthetic F32 experts (n_embd 512, n_ff 1024: 6 MiB each, 96 MiB in
// all) are written to the cold tier of a cache in a temp dir; the files are
// read once so both measurements see the page cache. Each iteration:
//   promote  DemoteAll, then Pin every expert (read + decode + accounting)
//   prefetch DemoteAll, then Prefetch all + WaitPrefetchIdle (2 workers)
//   read     ReadFile of the same 16 files (the reference)
// Counters: MBps = this benchmark's bytes / s; vs_read = MBps / the plain
// read's MBps (1.0 = promotion costs no more than reading the file).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/file.h"
#include "format/expert_gguf.h"
#include "runtime/expert_cache.h"

namespace {

namespace rt = tenzro::runtime;
using tenzro::Bytes;
using tenzro::ByteSpan;

constexpr int kExperts = 16;
constexpr int64_t kEmbd = 512, kFf = 1024;

struct Setup {
  std::string dir;
  std::unique_ptr<rt::ExpertCache> cache;
  std::vector<std::string> paths;
  uint64_t total = 0;

  Setup() {
    char tmpl[] = "/tmp/tenzro-cache-bench-XXXXXX";
    dir = ::mkdtemp(tmpl);
    rt::ExpertCacheOptions o;
    o.dir = dir + "/experts";
    o.prefetch_threads = 2;
    cache = std::move(*rt::ExpertCache::Open(o));
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.0f, 0.05f);
    std::vector<float> w(kEmbd * kFf);
    for (float& x : w) x = nd(rng);
    ByteSpan span(reinterpret_cast<const uint8_t*>(w.data()), w.size() * 4);
    tenzro::format::ExpertTensors t;
    t.proj[0] = {tenzro::quant::GgmlType::F32, kEmbd, kFf, span};
    t.proj[1] = {tenzro::quant::GgmlType::F32, kEmbd, kFf, span};
    t.proj[2] = {tenzro::quant::GgmlType::F32, kFf, kEmbd, span};
    for (int e = 0; e < kExperts; ++e) {
      Bytes img = *tenzro::format::EncodeExpertGguf({"bench", "bench", 0, e, "f32"}, t);
      auto info = cache->Put({"bench", 0, e}, ByteSpan(img));
      paths.push_back(info->path);
      total += info->bytes;
    }
    cache->DemoteAll();
  }
  ~Setup() {
    cache.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::vector<rt::ExpertKey> Keys() const {
    std::vector<rt::ExpertKey> k;
    for (int e = 0; e < kExperts; ++e) k.push_back({"bench", 0, e});
    return k;
  }
};

Setup& S() {
  static Setup s;
  return s;
}

double g_read_mbps = 0;

double ReadOnce() {
  auto t0 = std::chrono::steady_clock::now();
  for (const auto& p : S().paths) {
    auto b = tenzro::ReadFile(p);
    benchmark::DoNotOptimize(b->data());
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void MeasureRead() {
  if (g_read_mbps > 0) return;
  ReadOnce();  // page cache
  double best = 1e9;
  for (int i = 0; i < 5; ++i) best = std::min(best, ReadOnce());
  g_read_mbps = S().total / best / 1e6;
}

void Report(benchmark::State& state, double seconds) {
  const double mbps = S().total * static_cast<double>(state.iterations()) / seconds / 1e6;
  state.counters["MBps"] = mbps;
  state.counters["read_MBps"] = g_read_mbps;
  state.counters["vs_read"] = mbps / g_read_mbps;
  state.SetBytesProcessed(static_cast<int64_t>(S().total * state.iterations()));
}

void BM_PlainRead(benchmark::State& state) {
  MeasureRead();
  double secs = 0;
  for (auto _ : state) secs += ReadOnce();
  Report(state, secs);
}
BENCHMARK(BM_PlainRead)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_PromotePin(benchmark::State& state) {
  MeasureRead();
  auto keys = S().Keys();
  double secs = 0;
  for (auto _ : state) {
    S().cache->DemoteAll();
    auto t0 = std::chrono::steady_clock::now();
    for (const auto& k : keys) {
      auto p = S().cache->Pin(k);
      benchmark::DoNotOptimize(p->weights().gate.data.data());
    }
    secs += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  Report(state, secs);
}
BENCHMARK(BM_PromotePin)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_PromotePrefetch(benchmark::State& state) {
  MeasureRead();
  auto keys = S().Keys();
  double secs = 0;
  for (auto _ : state) {
    S().cache->DemoteAll();
    auto t0 = std::chrono::steady_clock::now();
    S().cache->Prefetch(keys);
    S().cache->WaitPrefetchIdle();
    secs += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  Report(state, secs);
}
BENCHMARK(BM_PromotePrefetch)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
