// tenzro net: per-peer request rate limits (token buckets), so one peer
// cannot monopolise a holder's exec or blob service (docs/security.md).
//
// Each peer key (an IP address for HTTP, a node id for QUIC) owns a bucket
// of `burst` tokens refilled at `rate` tokens per second; a request takes
// one token or is refused. The table is bounded: a peer unseen for
// `idle_evict` (by then its bucket is full again, so forgetting it changes
// nothing) is dropped, and past `max_peers` the least recently seen peer is
// dropped (it then starts again with a full bucket: a sender with more
// addresses than max_peers gains at most `burst` requests per address).
// Times are passed in (steady clock), so tests can drive them.
// Thread-safety: every method may be called from any thread (one mutex;
// O(1) per call).
#pragma once

#include <chrono>
#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace tenzro::net {

struct RateLimitOptions {
  double rate = 0;    // tokens per second per peer; <= 0 = unlimited
  double burst = 0;   // bucket size; < 1 is raised to 1 (when rate > 0)
  size_t max_peers = 4096;
  std::chrono::milliseconds idle_evict{60000};
};

class PeerRateLimiter {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  explicit PeerRateLimiter(RateLimitOptions options);

  // Takes one token from `peer`'s bucket: true when the request may go on.
  // Always true when unlimited.
  bool Allow(std::string_view peer, TimePoint now = std::chrono::steady_clock::now());

  bool enabled() const { return options_.rate > 0; }
  const RateLimitOptions& options() const { return options_; }
  uint64_t allowed() const;
  uint64_t rejected() const;
  size_t peers() const;  // buckets held now

 private:
  struct Bucket {
    std::string peer;
    double tokens = 0;
    TimePoint last{};
  };
  using List = std::list<Bucket>;  // most recently seen first

  RateLimitOptions options_;
  mutable std::mutex mu_;
  List lru_;                                              // guarded by mu_
  std::unordered_map<std::string_view, List::iterator> by_peer_;  // keys view lru_ entries; mu_
  uint64_t allowed_ = 0, rejected_ = 0;                   // mu_
};

// The host part of "addr:port" (Request::remote; IPv6 addresses carry
// colons, so the port is what follows the last one).
std::string_view RemoteHost(std::string_view remote);

}  // namespace tenzro::net
