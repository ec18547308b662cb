#include "net/rate_limit.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace tenzro::net {

PeerRateLimiter::PeerRateLimiter(RateLimitOptions options) : options_(options) {
  if (options_.rate > 0 && options_.burst < 1) options_.burst = 1;
  // Two buckets are touched per prefixed request: neither may evict the other.
  if (options_.max_peers < 2) options_.max_peers = 2;
}

PeerRateLimiter::Bucket& PeerRateLimiter::Touch(std::string_view key, double scale, TimePoint now) {
  // Forget peers idle long enough that their bucket is full again.
  while (!lru_.empty() && now - lru_.back().last >= options_.idle_evict) {
    by_peer_.erase(lru_.back().peer);
    lru_.pop_back();
  }
  auto it = by_peer_.find(key);
  if (it == by_peer_.end()) {
    while (lru_.size() >= options_.max_peers) {
      by_peer_.erase(lru_.back().peer);
      lru_.pop_back();
    }
    lru_.push_front(Bucket{std::string(key), options_.burst * scale, now});
    it = by_peer_.emplace(lru_.front().peer, lru_.begin()).first;
  } else {
    lru_.splice(lru_.begin(), lru_, it->second);  // iterators stay valid
  }
  Bucket& b = *it->second;
  const double elapsed = std::chrono::duration<double>(now - b.last).count();
  if (elapsed > 0) b.tokens = std::min(options_.burst * scale, b.tokens + elapsed * options_.rate * scale);
  b.last = std::max(b.last, now);
  return b;
}

bool PeerRateLimiter::Allow(std::string_view peer, TimePoint now) { return AllowWithPrefix(peer, {}, now); }

bool PeerRateLimiter::AllowWithPrefix(std::string_view peer, std::string_view prefix, TimePoint now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!enabled()) {
    ++allowed_;
    return true;
  }
  Bucket& b = Touch(peer, 1, now);
  Bucket* p = nullptr;
  if (!prefix.empty() && options_.prefix_multiple > 0 && prefix != peer)
    p = &Touch(prefix, options_.prefix_multiple, now);  // b stays: it is the second most recent
  if (b.tokens >= 1 && (p == nullptr || p->tokens >= 1)) {
    b.tokens -= 1;
    if (p) p->tokens -= 1;
    ++allowed_;
    return true;
  }
  ++rejected_;
  if (b.tokens >= 1) ++rejected_prefix_;
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

uint64_t PeerRateLimiter::rejected_by_prefix() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rejected_prefix_;
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

std::string IpPrefix(std::string_view host, int v4_bits, int v6_bits) {
  const std::string h(host);
  unsigned char a[16];
  char out[INET6_ADDRSTRLEN];
  auto mask = [&](int bytes, int bits) {
    for (int i = 0; i < bytes; ++i) {
      const int keep = std::clamp(bits - 8 * i, 0, 8);
      a[i] &= static_cast<unsigned char>(0xff00u >> keep);
    }
  };
  if (::inet_pton(AF_INET, h.c_str(), a) == 1) {
    mask(4, v4_bits);
    ::inet_ntop(AF_INET, a, out, sizeof out);
    return std::string(out) + "/" + std::to_string(v4_bits);
  }
  if (::inet_pton(AF_INET6, h.c_str(), a) == 1) {
    mask(16, v6_bits);
    ::inet_ntop(AF_INET6, a, out, sizeof out);
    return std::string(out) + "/" + std::to_string(v6_bits);
  }
  return h;
}

}  // namespace tenzro::net
