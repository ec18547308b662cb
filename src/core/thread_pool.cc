#include "core/thread_pool.h"

#include <pthread.h>

#include <algorithm>

namespace tenzro {

ThreadPool::ThreadPool(size_t threads, std::string name, std::chrono::microseconds spin)
    : spin_(spin), name_(std::move(name)) {
  threads = std::max<size_t>(threads, 1);
  threads_.reserve(threads);
  for (size_t i = 0; i < threads; ++i) {
    threads_.emplace_back([this] { WorkerLoop(); });
    std::string tname = (name_ + "-" + std::to_string(i)).substr(0, 15);
    pthread_setname_np(threads_.back().native_handle(), tname.c_str());
  }
}

ThreadPool::~ThreadPool() { Shutdown(); }

bool ThreadPool::Submit(Task task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return false;
    queue_.push_back(std::move(task));
    queued_.fetch_add(1, std::memory_order_release);
  }
  cv_.notify_one();
  return true;
}

void ThreadPool::Shutdown() {
  std::deque<Task> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    stopping_flag_.store(true, std::memory_order_release);
    dropped.swap(queue_);
    queued_.store(0, std::memory_order_relaxed);
  }
  cv_.notify_all();
  dropped.clear();  // outside the lock: closures may run destructors that Submit
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
}

size_t ThreadPool::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

bool ThreadPool::SpinForWork() const {
  const auto deadline = std::chrono::steady_clock::now() + spin_;
  for (int i = 1;; ++i) {
    if (queued_.load(std::memory_order_acquire) > 0 || stopping_flag_.load(std::memory_order_relaxed)) return true;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
    if (i % 64 == 0 && std::chrono::steady_clock::now() >= deadline) return false;
  }
}

void ThreadPool::WorkerLoop() {
  for (;;) {
    if (spin_.count() > 0 && queued_.load(std::memory_order_relaxed) == 0) SpinForWork();
    Task task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      task = std::move(queue_.front());
      queue_.pop_front();
      queued_.fetch_sub(1, std::memory_order_relaxed);
    }
    task();
  }
}

}  // namespace tenzro
