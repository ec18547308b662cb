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
//
// Prefix tier (AllowWithPrefix): new keys are free (a QUIC node id) and a
// host often has many addresses (an IPv6 /64, a /24 of cloud IPs), so a
// request also takes a token from the bucket of its network prefix (IpPrefix:
// IPv4 /24, IPv6 /56), which holds `prefix_multiple` times a peer's rate and
// burst. One peer is limited by its own bucket; a crowd of keys or addresses
// from one network by the prefix's, at a few peers' worth. A per-prefix
// bucket alone (no per-peer one) would let one peer take the whole network's
// share; a prefix bucket of the same size as a peer's would starve honest
// neighbours behind one NAT or in one datacentre /24 (and, in tests, every
// node on 127.0.0.1), hence the multiple (node flag --peer-prefix-multiple,
// default 4). The request passes only when both buckets have a token, and
// then takes one from each; otherwise neither is taken.
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
  double prefix_multiple = 0;  // prefix buckets: this multiple of rate and burst; 0 = no prefix tier
};

class PeerRateLimiter {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  explicit PeerRateLimiter(RateLimitOptions options);

  // Takes one token from `peer`'s bucket: true when the request may go on.
  // Always true when unlimited.
  bool Allow(std::string_view peer, TimePoint now = std::chrono::steady_clock::now());
  // The same, and a token from `prefix`'s bucket (a key distinct from every
  // peer key, e.g. "net:" + IpPrefix(ip)) when prefix_multiple > 0: true
  // only when both buckets had one. Refusals by the prefix alone are
  // counted in rejected_by_prefix() too.
  bool AllowWithPrefix(std::string_view peer, std::string_view prefix,
                       TimePoint now = std::chrono::steady_clock::now());

  bool enabled() const { return options_.rate > 0; }
  const RateLimitOptions& options() const { return options_; }
  uint64_t allowed() const;
  uint64_t rejected() const;
  uint64_t rejected_by_prefix() const;  // of rejected(): the peer had a token, its prefix none
  size_t peers() const;  // buckets held now

 private:
  struct Bucket {
    std::string peer;
    double tokens = 0;
    TimePoint last{};
  };
  using List = std::list<Bucket>;  // most recently seen first
  // The bucket of `key` refilled to `now` (created full; `scale` times the
  // rate and burst), moved to the front. REQUIRES: mu_ held.
  Bucket& Touch(std::string_view key, double scale, TimePoint now);

  RateLimitOptions options_;
  mutable std::mutex mu_;
  List lru_;                                              // guarded by mu_
  std::unordered_map<std::string_view, List::iterator> by_peer_;  // keys view lru_ entries; mu_
  uint64_t allowed_ = 0, rejected_ = 0, rejected_prefix_ = 0;  // mu_
};

// The host part of "addr:port" (Request::remote; IPv6 addresses carry
// colons, so the port is what follows the last one).
std::string_view RemoteHost(std::string_view remote);

// The network of an IP address: "a.b.c.0/24" for IPv4 with v4_bits 24,
// "2001:db8:0:ab00::/56" for IPv6 with v6_bits 56 (bits past the prefix
// zeroed, then printed canonically). A host that is not an IP literal is
// returned as it is. REQUIRES: 0 <= v4_bits <= 32, 0 <= v6_bits <= 128.
std::string IpPrefix(std::string_view host, int v4_bits = 24, int v6_bits = 56);

}  // namespace tenzro::net
