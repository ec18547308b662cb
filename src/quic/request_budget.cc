#include "quic/request_budget.h"

#include <algorithm>

namespace tenzro::quic {

RequestBudget::RequestBudget(uint64_t max_bytes, uint64_t max_bytes_per_ip)
    : max_bytes_(max_bytes), max_bytes_per_ip_(max_bytes_per_ip) {}

bool RequestBudget::TryCharge(const std::string& ip, uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  if (max_bytes_ && (n > max_bytes_ || stats_.in_flight > max_bytes_ - n)) {
    ++stats_.refused;
    return false;
  }
  auto it = by_ip_.find(ip);
  const uint64_t mine = it == by_ip_.end() ? 0 : it->second;
  if (max_bytes_per_ip_ && (n > max_bytes_per_ip_ || mine > max_bytes_per_ip_ - n)) {
    ++stats_.refused_per_ip;
    return false;
  }
  if (n == 0) return true;
  if (it == by_ip_.end()) it = by_ip_.emplace(ip, 0).first;
  it->second += n;
  stats_.in_flight += n;
  stats_.peak = std::max(stats_.peak, stats_.in_flight);
  return true;
}

void RequestBudget::Release(const std::string& ip, uint64_t n) {
  if (n == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  stats_.in_flight -= std::min(n, stats_.in_flight);
  auto it = by_ip_.find(ip);
  if (it == by_ip_.end()) return;
  it->second -= std::min(n, it->second);
  if (it->second == 0) by_ip_.erase(it);
}

RequestBudget::Stats RequestBudget::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s = stats_;
  s.ips = by_ip_.size();
  return s;
}

RequestCharge& RequestCharge::operator=(RequestCharge&& o) noexcept {
  if (this == &o) return *this;
  Reset();
  budget_ = std::move(o.budget_);
  ip_ = std::move(o.ip_);
  bytes_ = o.bytes_;
  o.bytes_ = 0;
  o.budget_.reset();
  return *this;
}

bool RequestCharge::Grow(uint64_t n) {
  if (!budget_) return true;
  if (!budget_->TryCharge(ip_, n)) return false;
  bytes_ += n;
  return true;
}

void RequestCharge::Reset() {
  if (budget_ && bytes_) budget_->Release(ip_, bytes_);
  bytes_ = 0;
}

}  // namespace tenzro::quic
