#include "net/rate_limit.h"

#include <algorithm>

namespace tenzro::net {

PeerRateLimiter::PeerRateLimiter(RateLimitOptions options) : options_(options) {
  if (options_.rate > 0 && options_.burst < 1) options_.burst = 1;
  if (options_.max_peers < 1) options_.max_peers = 1;
}

bool PeerRateLimiter::Allow(std::string_view peer, TimePoint now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!enabled()) {
    ++allowed_;
    return true;
  }
  // Forget peers idle long enough that their bucket is full again.
  while (!lru_.empty() && now - lru_.back().last >= options_.idle_evict) {
    by_peer_.erase(lru_.back().peer);
    lru_.pop_back();
  }
  auto it = by_peer_.find(peer);
  if (it == by_peer_.end()) {
    while (lru_.size() >= options_.max_peers) {
      by_peer_.erase(lru_.back().peer);
      lru_.pop_back();
    }
    lru_.push_front(Bucket{std::string(peer), options_.burst, now});
    it = by_peer_.emplace(lru_.front().peer, lru_.begin()).first;
  } else {
    lru_.splice(lru_.begin(), lru_, it->second);  // iterators stay valid
  }
  Bucket& b = *it->second;
  const double elapsed = std::chrono::duration<double>(now - b.last).count();
  if (elapsed > 0) b.tokens = std::min(options_.burst, b.tokens + elapsed * options_.rate);
  b.last = std::max(b.last, now);
  if (b.tokens >= 1) {
    b.tokens -= 1;
    ++allowed_;
    return true;
  }
  ++rejected_;
  return false;
}

uint64_t PeerRateLimiter::allowed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return allowed_;
}

uint64_t PeerRateLimiter::rejected() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rejected_;
}

size_t PeerRateLimiter::peers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.size();
}

std::string_view RemoteHost(std::string_view remote) {
  const size_t colon = remote.rfind(':');
  if (colon == std::string_view::npos) return remote;
  std::string_view host = remote.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return host;
}

}  // namespace tenzro::net
