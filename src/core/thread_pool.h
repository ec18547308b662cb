// tenzro core: a fixed-size worker pool for CPU work.
//
// The node's event loop (one thread running a boost::asio::io_context) owns
// sockets and timers and must never block; CPU-heavy or blocking work (quant
// kernels, hashing, disk-heavy jobs) is handed to a ThreadPool and its result
// posted back to the loop. Tasks run in FIFO order on `size()` threads.
//
// Thread-safety: every method may be called from any thread, except that
// Shutdown() and the destructor must not be called from a pool thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tenzro {

class ThreadPool {
 public:
  using Task = std::function<void()>;

  // Starts `threads` workers (at least 1). `name` prefixes the OS thread names
  // ("<name>-0", ...; at most 15 characters are kept) to help debugging.
  //
  // `spin`: how long a worker that found the queue empty polls it before it
  // sleeps on the condition variable (0: sleep at once). Compute pools that
  // run sub-millisecond fork-joins back to back (runtime::ParallelFor) set a
  // few tens of microseconds, as ggml's thread barrier does: a sleeping
  // thread takes 10-60 us to wake, a polling one well under 1 us. The cost is
  // at most `spin` of one core after each burst of work.
  explicit ThreadPool(size_t threads, std::string name = "pool",
                      std::chrono::microseconds spin = std::chrono::microseconds(0));
  // Shutdown().
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Queues `task`. Returns false (and drops the task) after Shutdown() began.
  // A task must not throw; an escaping exception terminates the process.
  bool Submit(Task task);

  // Stops accepting tasks, destroys the queued-but-unstarted ones, and waits
  // for the running ones to return. Idempotent.
  void Shutdown();

  size_t size() const { return threads_.size(); }
  // Tasks queued and not yet started.
  size_t pending() const;

 private:
  void WorkerLoop();
  // Polls queued_ for up to spin_; true when a task (or Shutdown) showed up.
  bool SpinForWork() const;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;   // guarded by mu_
  bool stopping_ = false;    // guarded by mu_
  std::atomic<size_t> queued_{0};      // queue_.size(), readable without mu_ (spinning workers)
  std::atomic<bool> stopping_flag_{false};
  const std::chrono::microseconds spin_;
  std::vector<std::thread> threads_;
  std::string name_;
};

}  // namespace tenzro
