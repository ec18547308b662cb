// BLAKE3 / bao throughput on a 64 MiB buffer, single thread, against the
// machine's own references measured in the same run: memcpy bandwidth and
// `b3sum --num-threads 1` on the same bytes in a file (timed as a subprocess,
// so its process start-up and page-cache read are included).
//
// Counters: GBps = this benchmark's throughput; vs_memcpy / vs_b3sum = ratio
// to the reference (1.0 = as fast as the reference).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "blob/bao_tree.h"
#include "blob/blake3.h"
#include "blob/decoder.h"
#include "blob/encoder.h"

namespace {

using tenzro::Bytes;
using tenzro::ByteSpan;
namespace blob = tenzro::blob;

constexpr size_t kSize = 64ull << 20;

const Bytes& Buffer() {
  static Bytes b = [] {
    Bytes v(kSize);
    std::mt19937_64 rng(42);
    for (size_t i = 0; i < kSize; i += 8) {
      uint64_t x = rng();
      std::memcpy(&v[i], &x, 8);
    }
    return v;
  }();
  return b;
}

double g_memcpy_gbps = 0, g_b3sum_gbps = 0;

double Gbps(double bytes, double seconds) { return bytes / seconds / 1e9; }

void MeasureReferences() {
  if (g_memcpy_gbps > 0) return;
  const Bytes& src = Buffer();
  Bytes dst(kSize);
  std::memcpy(dst.data(), src.data(), kSize);  // fault pages in
  double best = 1e9;
  for (int i = 0; i < 5; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    std::memcpy(dst.data(), src.data(), kSize);
    benchmark::DoNotOptimize(dst.data());
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  g_memcpy_gbps = Gbps(kSize, best);

  char path[] = "/tmp/tenzro_b3bench_XXXXXX";
  int fd = mkstemp(path);
  if (fd >= 0) {
    FILE* f = fdopen(fd, "wb");
    fwrite(src.data(), 1, kSize, f);
    fclose(f);
    std::string cmd = std::string("b3sum --num-threads 1 --no-names ") + path + " > /dev/null";
    best = 1e9;
    for (int i = 0; i < 4; ++i) {  // the first run also warms the page cache
      auto t0 = std::chrono::steady_clock::now();
      if (std::system(cmd.c_str()) != 0) { best = 0; break; }
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    if (best > 0) g_b3sum_gbps = Gbps(kSize, best);
    std::remove(path);
  }
}

void Report(benchmark::State& state, double bytes_per_iter) {
  MeasureReferences();
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes_per_iter));
  state.counters["memcpy_GBps"] = g_memcpy_gbps;
  state.counters["b3sum_1t_GBps"] = g_b3sum_gbps;
}

void SetRatios(benchmark::State& state, double gbps) {
  state.counters["GBps"] = gbps;
  state.counters["vs_memcpy"] = g_memcpy_gbps > 0 ? gbps / g_memcpy_gbps : 0;
  state.counters["vs_b3sum"] = g_b3sum_gbps > 0 ? gbps / g_b3sum_gbps : 0;
}

template <typename F>
void Timed(benchmark::State& state, F&& body) {
  MeasureReferences();
  double total = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    body();
    total += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  Report(state, kSize);
  SetRatios(state, Gbps(static_cast<double>(kSize) * state.iterations(), total));
}

void BM_Memcpy(benchmark::State& state) {
  Bytes dst(kSize);
  Timed(state, [&] {
    std::memcpy(dst.data(), Buffer().data(), kSize);
    benchmark::DoNotOptimize(dst.data());
  });
}

void BM_Blake3Hash(benchmark::State& state) {
  Timed(state, [&] { benchmark::DoNotOptimize(blob::Blake3(Buffer())); });
}

void BM_Blake3SubtreeCv(benchmark::State& state) {
  Timed(state, [&] { benchmark::DoNotOptimize(blob::SubtreeCv(Buffer(), 0, true)); });
}

void BM_Outboard(benchmark::State& state) {
  Bytes ob;
  Timed(state, [&] { benchmark::DoNotOptimize(blob::ComputeOutboard(Buffer(), &ob)); });
}

void BM_Encode(benchmark::State& state) {
  Bytes ob;
  blob::Blake3Hash root = blob::ComputeOutboard(Buffer(), &ob);
  Bytes out(1 << 16);
  Timed(state, [&] {
    auto enc = *blob::StreamEncoder::Create(Buffer(), ob, root, blob::ChunkRanges::All());
    while (*enc->Read(out) > 0) {
    }
  });
}

void BM_VerifiedDecode(benchmark::State& state) {
  Bytes ob;
  blob::Blake3Hash root = blob::ComputeOutboard(Buffer(), &ob);
  Bytes stream = *blob::EncodeStream(Buffer(), ob, root, blob::ChunkRanges::All());
  uint64_t sum = 0;
  Timed(state, [&] {
    blob::StreamDecoder dec(root, blob::ChunkRanges::All(), [&](uint64_t off, ByteSpan b) {
      sum += b.size();
      return tenzro::Ok();
    });
    // Fed in 64 KiB pieces, as from a socket.
    for (size_t off = 0; off < stream.size(); off += 65536) {
      auto r = dec.Feed(ByteSpan(stream).subspan(off, std::min<size_t>(65536, stream.size() - off)));
      if (!r) state.SkipWithError(r.error().ToString().c_str());
    }
    if (!dec.Finish()) state.SkipWithError("decode failed");
  });
  benchmark::DoNotOptimize(sum);
}

BENCHMARK(BM_Memcpy)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Blake3Hash)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Blake3SubtreeCv)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Outboard)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Encode)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_VerifiedDecode)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
