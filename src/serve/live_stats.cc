#include "serve/live_stats.h"

#include <algorithm>

namespace tenzro::serve {

LiveStats::LiveStats(Clock::time_point start) {
  ring_[0].t = start;
  total_.t = start;
}

void LiveStats::ObserveStep(Clock::time_point now, const StepInfo& step) {
  std::lock_guard lk(mu_);
  total_.t = now;
  total_.generated += static_cast<uint64_t>(std::max(step.generated, 0));
  total_.steps++;
  total_.sequences += static_cast<uint64_t>(std::max(step.sequences, 0));
  // The newest sample moves with each step until it is kSpacing past the
  // one before it; then the next step opens a new one.
  const Sample& prev = ring_[(head_ + kSamples - 1) % kSamples];
  if (size_ == 1 || ring_[head_].t - prev.t >= kSpacing) {
    head_ = (head_ + 1) % kSamples;
    size_ = std::min(size_ + 1, kSamples);
  }
  ring_[head_] = total_;
}

LiveStats::Rates LiveStats::Read(Clock::time_point now) const {
  std::lock_guard lk(mu_);
  const Clock::time_point from = now - kWindow;
  // Youngest sample at or before `from`; else the oldest one kept.
  const Sample* base = &ring_[(head_ + kSamples - (size_ - 1)) % kSamples];
  for (size_t i = 0; i < size_; ++i) {
    const Sample& s = ring_[(head_ + kSamples - i) % kSamples];
    if (s.t <= from) {
      base = &s;
      break;
    }
  }
  Rates r;
  const Clock::time_point begin = std::max(base->t, from);
  r.window_s = std::chrono::duration<double>(now - begin).count();
  r.steps = total_.steps - base->steps;
  if (r.window_s > 0) r.generated_per_s = static_cast<double>(total_.generated - base->generated) / r.window_s;
  if (r.steps > 0) r.mean_batch = static_cast<double>(total_.sequences - base->sequences) / static_cast<double>(r.steps);
  return r;
}

}  // namespace tenzro::serve
