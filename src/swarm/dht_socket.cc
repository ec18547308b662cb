#include "swarm/dht_socket.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace tenzro::swarm {

Result<std::unique_ptr<CountingUdpSocket>> CountingUdpSocket::Open(const dht::SockAddr& bind_addr,
                                                                   int receive_buffer) {
  const sa_family_t family = bind_addr.getFamily();
  if (family != AF_INET && family != AF_INET6) return Error::InvalidArgument("DHT socket: no address to bind");
  const int fd = ::socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error::Unavailable("DHT socket: {}", std::strerror(errno));
  if (receive_buffer > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
  if (family == AF_INET6) {
    const int one = 1;
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  }
  if (::bind(fd, bind_addr.get(), bind_addr.getLength()) != 0) {
    const int err = errno;
    ::close(fd);
    return Error::Unavailable("DHT socket: cannot bind {}: {}", bind_addr.toString(), std::strerror(err));
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    const int err = errno;
    ::close(fd);
    return Error::Unavailable("DHT socket: pipe: {}", std::strerror(err));
  }
  return std::unique_ptr<CountingUdpSocket>(
      new CountingUdpSocket(fd, pipe_fds[0], pipe_fds[1], dht::SockAddr(ss, len)));
}

CountingUdpSocket::CountingUdpSocket(int fd, int stop_read, int stop_write, dht::SockAddr bound)
    : fd_(fd), stop_read_(stop_read), stop_write_(stop_write), bound_(std::move(bound)) {
  thread_ = std::thread([this] { ReceiveLoop(); });
}

CountingUdpSocket::~CountingUdpSocket() {
  stop();
  if (thread_.joinable()) thread_.join();
  ::close(fd_);
  ::close(stop_read_);
  ::close(stop_write_);
}

void CountingUdpSocket::stop() {
  if (running_.exchange(false)) {
    const char b = 0;
    (void)!::write(stop_write_, &b, 1);
  }
}

const dht::SockAddr& CountingUdpSocket::getBoundRef(sa_family_t family) const {
  return family == AF_UNSPEC || family == bound_.getFamily() ? bound_ : none_;
}

int CountingUdpSocket::sendTo(const dht::SockAddr& dest, const uint8_t* data, size_t size, bool replied) {
  if (!dest) return EFAULT;
  if (dest.getFamily() != bound_.getFamily()) return EAFNOSUPPORT;
  int flags = MSG_NOSIGNAL;
  if (replied) flags |= MSG_CONFIRM;
  if (::sendto(fd_, data, size, flags, dest.get(), dest.getLength()) < 0) return errno;
  counters_->datagrams_out.fetch_add(1, std::memory_order_relaxed);
  counters_->bytes_out.fetch_add(size, std::memory_order_relaxed);
  return 0;
}

void CountingUdpSocket::ReceiveLoop() {
  std::array<uint8_t, 64 * 1024> buf;
  pollfd fds[2] = {{stop_read_, POLLIN, 0}, {fd_, POLLIN, 0}};
  while (running_) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (!running_ || (fds[0].revents & POLLIN)) return;
    if (!(fds[1].revents & POLLIN)) continue;
    // Drain what is queued, one datagram per packet handed to the runner.
    for (int i = 0; i < 64 && running_; ++i) {
      sockaddr_storage from{};
      socklen_t from_len = sizeof(from);
      const ssize_t n = ::recvfrom(fd_, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &from_len);
      if (n <= 0) break;  // EAGAIN: drained (errors of a UDP socket are per datagram)
      counters_->datagrams_in.fetch_add(1, std::memory_order_relaxed);
      counters_->bytes_in.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
      dht::net::PacketList pkts = getNewPacket();
      dht::net::ReceivedPacket& pkt = pkts.front();
      pkt.data.assign(buf.begin(), buf.begin() + n);
      pkt.from = dht::SockAddr(from, from_len);
      pkt.received = dht::clock::now();
      onReceived(std::move(pkts));
    }
  }
}

}  // namespace tenzro::swarm
