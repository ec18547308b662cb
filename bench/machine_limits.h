// The machine's own limits, measured in the same run as a benchmark so that
// its figures can be stated as fractions of them: read bandwidth (AVX2 sum
// over a 1 GiB buffer, `threads` threads each summing its share) and peak
// f32 FMA throughput (independent AVX2 FMA chains per thread).
#pragma once

#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <thread>
#include <vector>

namespace tenzro::bench {

inline constexpr size_t kBwBytes = size_t{1} << 30;

__attribute__((target("avx2"))) inline float SumAvx2(const float* p, size_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 32 <= n; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
    a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
  }
  alignas(32) float t[8];
  _mm256_store_ps(t, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}

inline float* BwBuffer() {
  static float* buf = [] {
    auto* p = static_cast<float*>(std::aligned_alloc(64, kBwBytes));
    for (size_t i = 0; i < kBwBytes / 4; ++i) p[i] = 1.0f;
    return p;
  }();
  return buf;
}

// Read bandwidth (bytes/s), best of 3.
inline double MeasureReadBandwidth(int threads) {
  float* buf = BwBuffer();
  const size_t n = kBwBytes / 4;
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    std::atomic<float> sink{0};
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> ts;
    for (int i = 0; i < threads; ++i)
      ts.emplace_back([&, i] { sink = sink + SumAvx2(buf + n / threads * i, n / threads); });
    for (auto& t : ts) t.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, kBwBytes / s);
    benchmark::DoNotOptimize(sink.load());
  }
  return best;
}

// Peak f32 FLOP/s of one thread: 10 independent AVX2 FMA chains held in
// registers (enough to cover FMA latency x ports on current x86 cores).
__attribute__((target("avx2,fma"))) inline double MeasureFmaPeak() {
  __m256 a0 = _mm256_set1_ps(1.0f), a1 = _mm256_set1_ps(1.1f), a2 = _mm256_set1_ps(1.2f), a3 = _mm256_set1_ps(1.3f),
         a4 = _mm256_set1_ps(1.4f), a5 = _mm256_set1_ps(1.5f), a6 = _mm256_set1_ps(1.6f), a7 = _mm256_set1_ps(1.7f),
         a8 = _mm256_set1_ps(1.8f), a9 = _mm256_set1_ps(1.9f);
  const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
  const long iters = 50'000'000;
  const auto t0 = std::chrono::steady_clock::now();
  for (long k = 0; k < iters; ++k) {
    a0 = _mm256_fmadd_ps(a0, m, c);
    a1 = _mm256_fmadd_ps(a1, m, c);
    a2 = _mm256_fmadd_ps(a2, m, c);
    a3 = _mm256_fmadd_ps(a3, m, c);
    a4 = _mm256_fmadd_ps(a4, m, c);
    a5 = _mm256_fmadd_ps(a5, m, c);
    a6 = _mm256_fmadd_ps(a6, m, c);
    a7 = _mm256_fmadd_ps(a7, m, c);
    a8 = _mm256_fmadd_ps(a8, m, c);
    a9 = _mm256_fmadd_ps(a9, m, c);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  __m256 sum = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(_mm256_add_ps(a6, a7), _mm256_add_ps(a8, a9))));
  benchmark::DoNotOptimize(sum);
  return iters * 10.0 * 8 * 2 / s;
}

// Measured values by thread count, filled by the BM_ReadBandwidth /
// BM_FmaPeak benchmarks that run first.
inline std::map<int, double>& Bandwidth() {
  static std::map<int, double> bw;
  return bw;
}
inline double& FmaPeak() {
  static double peak = 0;
  return peak;
}

}  // namespace tenzro::bench
