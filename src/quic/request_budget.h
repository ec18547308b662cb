// tenzro quic: the endpoint-wide budget on request bytes held in memory.
//
// A server buffers each request (rpc.h: up to max_request_bytes; iroh-blobs:
// up to 64 KiB) until it has all of it, then hands it to a handler that holds
// it until it replies. Per stream that is bounded, but 1024 connections x
// 128 streams x a large request is not, so every such byte is charged here
// first: one budget per Endpoint (EndpointOptions::max_inflight_request_bytes,
// shared by every connection and protocol) and, within it, a cap per remote
// IP address (max_inflight_request_bytes_per_ip), so one host cannot take
// the whole budget with many keys or connections. A charge that would pass
// either limit is refused and charges nothing: the protocol then refuses the
// stream at once (reset, kStreamBusy) without buffering more of it.
//
// A request's bytes are charged as they arrive and released when it is
// answered (rpc.h: when the handler replies) or when its stream dies before
// the request was complete. A request already handed to a handler stays
// charged until the handler answers, even if the peer resets the stream:
// its bytes are still in memory. RequestCharge is the RAII holder.
// Thread-safety: every method may be called from any thread (one mutex).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace tenzro::quic {

class RequestBudget {
 public:
  // 0 = unlimited (for either).
  RequestBudget(uint64_t max_bytes, uint64_t max_bytes_per_ip);

  // Charges `n` more bytes to `ip`: false (nothing charged, counted as a
  // refusal) when the total would pass max_bytes or ip's share max_bytes_per_ip.
  bool TryCharge(const std::string& ip, uint64_t n);
  // Returns `n` bytes charged to `ip` earlier.
  void Release(const std::string& ip, uint64_t n);

  struct Stats {
    uint64_t in_flight = 0;        // bytes charged now
    uint64_t peak = 0;             // the most ever charged at once
    uint64_t refused = 0;          // charges refused by the total
    uint64_t refused_per_ip = 0;   // charges refused by an IP's share
    size_t ips = 0;                // addresses holding a charge now
  };
  Stats stats() const;
  uint64_t max_bytes() const { return max_bytes_; }
  uint64_t max_bytes_per_ip() const { return max_bytes_per_ip_; }

 private:
  const uint64_t max_bytes_, max_bytes_per_ip_;
  mutable std::mutex mu_;
  Stats stats_;                          // guarded by mu_
  std::map<std::string, uint64_t> by_ip_;  // mu_; entries > 0 only
};

// The bytes one request holds in a budget; released on destruction.
// Without a budget (null) every Grow succeeds. Not thread-safe itself (one
// owner at a time; it may move between threads).
class RequestCharge {
 public:
  RequestCharge() = default;
  RequestCharge(std::shared_ptr<RequestBudget> budget, std::string ip)
      : budget_(std::move(budget)), ip_(std::move(ip)) {}
  ~RequestCharge() { Reset(); }
  RequestCharge(RequestCharge&& o) noexcept { *this = std::move(o); }
  RequestCharge& operator=(RequestCharge&& o) noexcept;
  RequestCharge(const RequestCharge&) = delete;
  RequestCharge& operator=(const RequestCharge&) = delete;

  // Charges `n` more bytes; false when the budget refused them (the bytes
  // charged before stay charged until Reset).
  bool Grow(uint64_t n);
  // Releases everything charged.
  void Reset();
  uint64_t bytes() const { return bytes_; }

 private:
  std::shared_ptr<RequestBudget> budget_;
  std::string ip_;
  uint64_t bytes_ = 0;
};

}  // namespace tenzro::quic
