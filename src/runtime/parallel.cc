#include "runtime/parallel.h"

#include <atomic>
#include <memory>
#include <thread>

namespace tenzro::runtime {
namespace {

struct ForState {
  explicit ForState(int n, const std::function<void(int)>* f) : n(n), fn(f) {}
  const int n;
  const std::function<void(int)>* fn;  // valid until done == n
  std::atomic<int> next{0};
  std::atomic<int> done{0};

  void Drain() {
    for (;;) {
      const int i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= n) return;
      (*fn)(i);
      done.fetch_add(1, std::memory_order_release);
    }
  }
};

}  // namespace

int ParallelWidth(ThreadPool* pool) { return pool ? static_cast<int>(pool->size()) + 1 : 1; }

void ParallelFor(ThreadPool* pool, int n, const std::function<void(int)>& fn) {
  if (n <= 0) return;
  if (pool == nullptr || n == 1) {
    for (int i = 0; i < n; ++i) fn(i);
    return;
  }
  auto state = std::make_shared<ForState>(n, &fn);
  const int helpers = std::min<int>(static_cast<int>(pool->size()), n - 1);
  // A helper that starts after all chunks were claimed returns at once without
  // touching fn (next >= n), so fn may go out of scope before it runs.
  for (int h = 0; h < helpers; ++h) pool->Submit([state] { state->Drain(); });
  state->Drain();
  int spins = 0;
  while (state->done.load(std::memory_order_acquire) < n) {
    if (++spins < 4096) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#elif defined(__aarch64__)
      asm volatile("yield" ::: "memory");
#endif
    } else {
      std::this_thread::yield();
    }
  }
}

}  // namespace tenzro::runtime
