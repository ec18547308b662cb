// tenzro serve: the recent rates the dashboard shows (generated tokens/s and
// mean batch size over the last ~10 s; node/dashboard.h).
//
// Fed by the scheduler's step observer (ObserveStep) and read when the
// dashboard state is asked for (Read). Memory is bounded: a ring of
// kSamples cumulative samples, a new one at most every kSpacing (steps in
// between update the newest), so the ring always reaches at least
// kSamples * kSpacing (12.8 s) back, or to the start.
// Rates over the window [now - kWindow, now]: the counts at the window's
// start are those of the youngest sample at or before it (within kSpacing of
// the truth); a window younger than kWindow (just started) is the time since
// the start. A window with no step has mean batch 0.
// Time is passed in, so tests need no clock. Thread-safety: any thread.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>

#include "serve/scheduler.h"

namespace tenzro::serve {

class LiveStats {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kSamples = 64;
  static constexpr Clock::duration kSpacing = std::chrono::milliseconds(200);
  static constexpr Clock::duration kWindow = std::chrono::seconds(10);

  explicit LiveStats(Clock::time_point start);

  void ObserveStep(Clock::time_point now, const StepInfo& step);

  struct Rates {
    double generated_per_s = 0;
    double mean_batch = 0;  // sequences per step
    uint64_t steps = 0;     // in the window
    double window_s = 0;
  };
  Rates Read(Clock::time_point now) const;

 private:
  struct Sample {
    Clock::time_point t;
    uint64_t generated = 0, steps = 0, sequences = 0;  // cumulative
  };
  mutable std::mutex mu_;
  std::array<Sample, kSamples> ring_;  // guarded by mu_
  size_t head_ = 0;                    // index of the newest sample
  size_t size_ = 1;
  Sample total_;                       // the latest counts (t = last step)
};

}  // namespace tenzro::serve
