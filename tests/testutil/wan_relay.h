// A userspace WAN impairment relay for loopback tests and benchmarks (this
// machine's kernel has no netem; docs/dispatch.md "WAN conditions").
//
// One relay is one simulated link between a client side and a target host:
// it listens on LISTEN_HOST (e.g. 127.0.0.2) for each forward (TCP or UDP,
// its own port) and passes the bytes to TARGET_HOST:target_port (e.g.
// 127.0.0.1), adding per direction:
//   * latency    one-way delay of every byte / datagram;
//   * jitter     uniform in [-j, +j] or normal with sd j, total delay >= 0;
//                TCP bytes are never reordered (a chunk is released no
//                earlier than the one before it); UDP datagrams may be;
//   * loss       UDP: each datagram dropped with probability p. TCP cannot
//                drop in userspace (the kernel retransmits): each chunk (one
//                read, at most 16 KiB) is instead delayed by one extra round
//                trip (latency to the target + back) with probability p, the
//                cost of a fast retransmit; the bytes behind it wait too
//                (head-of-line blocking, as in TCP);
//   * rate       a bandwidth cap: serialisation delay size/rate on a link
//                shared by every flow of that direction (a token bucket with
//                no burst).
// Not modelled: TCP connection setup (the relay accepts locally, so the
// handshake costs no round trip; QUIC's does, it is UDP), TCP congestion
// windows (the relay buffers like an unlimited window).
//
// A holder started with `--advertise 127.0.0.2` advertises 127.0.0.2 with
// its own http and quic ports; a relay on 127.0.0.2 with the same ports (TCP
// http, UDP quic) forwarding to 127.0.0.1 puts every call to it across the
// link, with no change to the nodes.
//
// UDP: one session socket per client address toward the target, so replies
// go back to the right client; idle sessions close after udp_idle.
// Bounded: at most max_queue_bytes held per direction (TCP stops reading,
// UDP drops and counts `overflow`), at most max_flows TCP connections plus
// UDP sessions (over: the connection is closed / the datagram dropped).
//
// Thread-safety: one thread per relay owns every socket; SetLinks, Stats and
// Stop may be called from any thread. Stop() (and the destructor) ends the
// thread and closes every socket; idempotent.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"

namespace tenzro::testing {

// One direction of the simulated link.
struct WanLink {
  double latency_ms = 0;
  double jitter_ms = 0;
  bool normal_jitter = false;   // false: uniform in [-jitter, +jitter]
  double loss = 0;              // probability in [0, 1] (see above for TCP)
  double rate_bytes_per_s = 0;  // 0 = no cap
};

enum class WanProto : uint8_t { kTcp, kUdp };

struct WanForward {
  WanProto proto = WanProto::kTcp;
  uint16_t listen_port = 0;  // 0 = pick one (port(i) names it)
  uint16_t target_port = 0;
};

struct WanRelayOptions {
  std::string listen_host = "127.0.0.2";
  std::string target_host = "127.0.0.1";
  std::vector<WanForward> forwards;
  WanLink to_target;  // client -> target
  WanLink to_client;  // target -> client
  size_t max_queue_bytes = 8u << 20;  // per direction, all flows
  size_t max_flows = 256;
  std::chrono::milliseconds udp_idle{60000};
  uint64_t seed = 1;
};

struct WanDirectionStats {
  uint64_t bytes = 0;        // delivered
  uint64_t datagrams = 0;    // UDP datagrams delivered
  uint64_t chunks = 0;       // TCP chunks delivered
  uint64_t lost = 0;         // UDP datagrams dropped by `loss`
  uint64_t retransmits = 0;  // TCP chunks given the extra round trip
  uint64_t overflow = 0;     // UDP datagrams dropped: queue full or no session slot
  uint64_t max_queue_bytes = 0;
  double delay_ms_sum = 0;   // arrival -> delivery, over delivered chunks/datagrams
  double mean_delay_ms() const {
    const uint64_t n = datagrams + chunks;
    return n ? delay_ms_sum / static_cast<double>(n) : 0;
  }
};

struct WanRelayStats {
  WanDirectionStats to_target, to_client;
  uint64_t tcp_accepted = 0, tcp_refused = 0, udp_sessions = 0;
};

class WanRelay {
 public:
  // Binds every forward's listening socket and starts the relay thread.
  // Errors: kInvalidArgument (a host that is not an IPv4 literal, no
  // forwards), kIo (bind/listen failed, e.g. the port is taken).
  static Result<std::unique_ptr<WanRelay>> Start(WanRelayOptions options);
  ~WanRelay();
  WanRelay(const WanRelay&) = delete;
  WanRelay& operator=(const WanRelay&) = delete;

  void Stop();
  // New link conditions for what arrives from now on (queued bytes keep
  // their release times).
  void SetLinks(const WanLink& to_target, const WanLink& to_client);
  // The listening port of forwards[i].
  uint16_t port(size_t i) const;
  WanRelayStats Stats() const;

  class Impl;

 private:
  explicit WanRelay(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tenzro::testing
