// tenzro core: a one-shot cancellation signal between threads.
//
// A CancelToken is cancelled at most once (Cancel); work that can stop early
// registers what stopping means with OnCancel — a callback run once, by the
// thread that cancels (or at once, by the registering thread, when the token
// is already cancelled). Callbacks must be quick and must not call back into
// the token; they usually set a flag under the waiter's own lock and notify
// its condition variable. Callbacks stay registered for the token's life: a
// token belongs to one piece of work (one call), not to a long-lived object.
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <vector>

namespace tenzro {

class CancelToken {
 public:
  void Cancel() {
    std::vector<std::function<void()>> run;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (cancelled_.exchange(true)) return;
      run.swap(callbacks_);
    }
    for (auto& fn : run) fn();
  }
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }
  void OnCancel(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!cancelled_) {
        callbacks_.push_back(std::move(fn));
        return;
      }
    }
    fn();
  }

 private:
  std::mutex mu_;
  std::atomic<bool> cancelled_{false};
  std::vector<std::function<void()>> callbacks_;  // guarded by mu_
};

}  // namespace tenzro
