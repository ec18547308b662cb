// tenzro swarm: the DHT runner's UDP socket, with byte and datagram counts.
//
// OpenDHT's DhtRunner takes its socket through DhtRunner::Context::sock (a
// dht::net::DatagramSocket); DhtTransport hands it this one so that the
// bytes a node's DHT sends and receives are counted (DhtStats). It does what
// OpenDHT's own net::UdpSocket does for one address family: one non-blocking
// UDP socket bound to `bind`, one receive thread that hands each datagram to
// the runner (recycling the packets the runner gives back), sendTo with
// MSG_NOSIGNAL. Counted: datagrams and UDP payload bytes, in and out (sends
// the kernel refused are not counted). Internal to dht_transport.cc.
//
// Thread-safety: the counters are atomics, read from any thread; the rest
// follows DatagramSocket's contract (the runner calls it from its thread).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

#include <opendht/network_utils.h>

#include "core/result.h"

namespace tenzro::swarm {

struct DhtSocketCounters {
  std::atomic<uint64_t> datagrams_in{0}, datagrams_out{0};
  std::atomic<uint64_t> bytes_in{0}, bytes_out{0};
};

class CountingUdpSocket final : public dht::net::DatagramSocket {
 public:
  // Binds `bind` (IPv4 or IPv6, port 0 = any) and starts the receive thread.
  // receive_buffer > 0 asks for that SO_RCVBUF (the kernel caps it at
  // net.core.rmem_max); 0 keeps the kernel's default. kUnavailable when the
  // socket cannot be opened or bound.
  static Result<std::unique_ptr<CountingUdpSocket>> Open(const dht::SockAddr& bind, int receive_buffer = 0);
  ~CountingUdpSocket() override;  // stop() + join

  int sendTo(const dht::SockAddr& dest, const uint8_t* data, size_t size, bool replied) override;
  bool hasIPv4() const override { return bound_.getFamily() == AF_INET; }
  bool hasIPv6() const override { return bound_.getFamily() == AF_INET6; }
  const dht::SockAddr& getBoundRef(sa_family_t family = AF_UNSPEC) const override;
  void stop() override;

  // The counts so far. Shared so that they outlive the socket, which the
  // runner owns and destroys (DhtTransport keeps this pointer).
  std::shared_ptr<const DhtSocketCounters> counters() const { return counters_; }

 private:
  CountingUdpSocket(int fd, int stop_read, int stop_write, dht::SockAddr bound);
  void ReceiveLoop();

  int fd_ = -1;
  int stop_read_ = -1, stop_write_ = -1;
  dht::SockAddr bound_;
  dht::SockAddr none_;  // the bound address of the family this socket lacks
  std::atomic<bool> running_{true};
  std::shared_ptr<DhtSocketCounters> counters_ = std::make_shared<DhtSocketCounters>();
  std::thread thread_;
};

}  // namespace tenzro::swarm
