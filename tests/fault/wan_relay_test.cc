// The WAN impairment relay (tests/testutil/wan_relay.h) adds what it is asked
// for: one-way delay (TCP and UDP round trips), a rate cap, UDP loss within
// binomial bounds, TCP bytes intact and in order under jitter, a bounded
// queue, and Stop() with live flows. Loopback only (127.0.0.2 -> 127.0.0.1);
// tolerances allow for a loaded 2-core machine.
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "testutil/wan_relay.h"

namespace tenzro::testing {
namespace {

using Clock = std::chrono::steady_clock;
double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

sockaddr_in Addr(const char* host, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, host, &a.sin_addr);
  return a;
}

// A socket bound to 127.0.0.1:0 (listening if TCP); its port in *port.
int Bound(int type, uint16_t* port) {
  int fd = socket(AF_INET, type, 0);
  sockaddr_in a = Addr("127.0.0.1", 0);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  if (type == SOCK_STREAM) listen(fd, 16);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

int Connect(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = Addr("127.0.0.2", port);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}

bool ReadFull(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t r = recv(fd, p, n, 0);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// Echoes every byte of one accepted connection until EOF.
std::thread TcpEcho(int lfd) {
  return std::thread([lfd] {
    int c = accept(lfd, nullptr, nullptr);
    char buf[65536];
    ssize_t n;
    while ((n = recv(c, buf, sizeof buf, 0)) > 0) send(c, buf, static_cast<size_t>(n), MSG_NOSIGNAL);
    close(c);
  });
}

std::unique_ptr<WanRelay> StartRelay(WanProto proto, uint16_t target, WanLink to_target, WanLink to_client,
                                     size_t max_queue = 8u << 20) {
  WanRelayOptions o;
  o.forwards = {{proto, 0, target}};
  o.to_target = to_target;
  o.to_client = to_client;
  o.max_queue_bytes = max_queue;
  auto r = WanRelay::Start(o);
  EXPECT_TRUE(r) << r.error().ToString();
  return r ? std::move(*r) : nullptr;
}

WanLink Delay(double ms) {
  WanLink l;
  l.latency_ms = ms;
  return l;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int OpenFds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d)) ++n;
    closedir(d);
  }
  return n;
}

TEST(WanRelayTest, TcpRoundTripIsTwiceTheOneWayDelay) {
  uint16_t port;
  int lfd = Bound(SOCK_STREAM, &port);
  std::thread echo = TcpEcho(lfd);
  auto relay = StartRelay(WanProto::kTcp, port, Delay(20), Delay(20));
  ASSERT_TRUE(relay);
  int c = Connect(relay->port(0));
  std::vector<double> rtt;
  char msg[64] = "ping", back[64];
  for (int i = 0; i < 8; ++i) {
    const auto t0 = Clock::now();
    ASSERT_EQ(send(c, msg, sizeof msg, 0), static_cast<ssize_t>(sizeof msg));
    ASSERT_TRUE(ReadFull(c, back, sizeof back));
    rtt.push_back(Ms(Clock::now() - t0));
  }
  close(c);
  echo.join();
  close(lfd);
  const double m = Median(rtt);
  EXPECT_GE(m, 39.5);
  EXPECT_LE(m, 70.0);
  const WanRelayStats s = relay->Stats();
  EXPECT_EQ(s.tcp_accepted, 1u);
  EXPECT_EQ(s.to_target.bytes, 8 * sizeof msg);
  EXPECT_NEAR(s.to_target.mean_delay_ms(), 20, 10);
  EXPECT_NEAR(s.to_client.mean_delay_ms(), 20, 10);
}

TEST(WanRelayTest, UdpRoundTripIsTwiceTheOneWayDelay) {
  uint16_t port;
  int sfd = Bound(SOCK_DGRAM, &port);
  std::atomic<bool> stop{false};
  std::thread echo([&] {
    char buf[2048];
    while (!stop) {
      pollfd p{sfd, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      sockaddr_in from{};
      socklen_t len = sizeof from;
      ssize_t n = recvfrom(sfd, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
      if (n > 0) sendto(sfd, buf, static_cast<size_t>(n), 0, reinterpret_cast<sockaddr*>(&from), len);
    }
  });
  auto relay = StartRelay(WanProto::kUdp, port, Delay(20), Delay(20));
  ASSERT_TRUE(relay);
  int c = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in to = Addr("127.0.0.2", relay->port(0));
  ASSERT_EQ(connect(c, reinterpret_cast<sockaddr*>(&to), sizeof to), 0);
  std::vector<double> rtt;
  char msg[100] = "ping", back[100];
  for (int i = 0; i < 8; ++i) {
    const auto t0 = Clock::now();
    ASSERT_EQ(send(c, msg, sizeof msg, 0), static_cast<ssize_t>(sizeof msg));
    pollfd p{c, POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, 2000), 1);
    ASSERT_EQ(recv(c, back, sizeof back, 0), static_cast<ssize_t>(sizeof back));
    rtt.push_back(Ms(Clock::now() - t0));
  }
  stop = true;
  echo.join();
  close(c);
  close(sfd);
  const double m = Median(rtt);
  EXPECT_GE(m, 39.5);
  EXPECT_LE(m, 70.0);
  const WanRelayStats s = relay->Stats();
  EXPECT_EQ(s.udp_sessions, 1u);
  EXPECT_EQ(s.to_target.datagrams, 8u);
  EXPECT_EQ(s.to_client.datagrams, 8u);
}

// 4 MB at 8 MB/s: about 0.5 s, with at most max_queue_bytes held.
TEST(WanRelayTest, RateCapSetsTheTransferTimeWithABoundedQueue) {
  uint16_t port;
  int lfd = Bound(SOCK_STREAM, &port);
  size_t got = 0;
  Clock::time_point last;
  std::thread sink([&] {
    int c = accept(lfd, nullptr, nullptr);
    char buf[65536];
    ssize_t n;
    while ((n = recv(c, buf, sizeof buf, 0)) > 0) {
      got += static_cast<size_t>(n);
      last = Clock::now();
    }
    close(c);
  });
  WanLink capped;
  capped.rate_bytes_per_s = 8e6;
  constexpr size_t kQueue = 1u << 20;
  auto relay = StartRelay(WanProto::kTcp, port, capped, WanLink{}, kQueue);
  ASSERT_TRUE(relay);
  int c = Connect(relay->port(0));
  constexpr size_t kTotal = 4'000'000;
  std::string block(64 * 1024, 'x');
  const auto t0 = Clock::now();
  for (size_t sent = 0; sent < kTotal;) {
    ssize_t n = send(c, block.data(), std::min(block.size(), kTotal - sent), 0);
    ASSERT_GT(n, 0);
    sent += static_cast<size_t>(n);
  }
  shutdown(c, SHUT_WR);
  sink.join();
  close(c);
  close(lfd);
  const double s = Ms(last - t0) / 1000;
  EXPECT_EQ(got, kTotal);
  EXPECT_GE(s, 0.45);
  EXPECT_LE(s, 1.5);
  const WanRelayStats st = relay->Stats();
  EXPECT_LE(st.to_target.max_queue_bytes, kQueue + 16 * 1024);  // one read past the check
  EXPECT_GT(st.to_target.max_queue_bytes, 0u);
}

// 10 % loss over 2,000 datagrams: the loss count within 5 sd of 200.
TEST(WanRelayTest, UdpLossMatchesTheProbability) {
  uint16_t port;
  int sfd = Bound(SOCK_DGRAM, &port);
  int big = 4 << 20;
  setsockopt(sfd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
  std::atomic<int> got{0};
  std::atomic<bool> stop{false};
  std::thread sink([&] {
    char buf[256];
    while (!stop) {
      pollfd p{sfd, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      while (recv(sfd, buf, sizeof buf, MSG_DONTWAIT) > 0) ++got;
    }
  });
  WanLink lossy;
  lossy.loss = 0.10;
  auto relay = StartRelay(WanProto::kUdp, port, lossy, WanLink{});
  ASSERT_TRUE(relay);
  int c = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in to = Addr("127.0.0.2", relay->port(0));
  ASSERT_EQ(connect(c, reinterpret_cast<sockaddr*>(&to), sizeof to), 0);
  constexpr int kSent = 2000;
  char msg[64] = {};
  for (int i = 0; i < kSent; ++i) {
    ASSERT_EQ(send(c, msg, sizeof msg, 0), static_cast<ssize_t>(sizeof msg));
    // Paced (about 200 ms in all) so that no socket buffer drops any: the
    // count below is the relay's loss only.
    if (i % 10 == 9) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // Wait until the relay has seen every datagram and the sink has read them.
  for (int i = 0; i < 200; ++i) {
    const WanRelayStats s = relay->Stats();
    if (s.to_target.datagrams + s.to_target.lost == kSent && got == static_cast<int>(s.to_target.datagrams)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop = true;
  sink.join();
  close(c);
  close(sfd);
  const WanRelayStats s = relay->Stats();
  const double sd = std::sqrt(kSent * 0.1 * 0.9);
  EXPECT_EQ(s.to_target.datagrams + s.to_target.lost, static_cast<uint64_t>(kSent));
  EXPECT_NEAR(static_cast<double>(s.to_target.lost), kSent * 0.1, 5 * sd);
  EXPECT_EQ(got, static_cast<int>(s.to_target.datagrams));
  EXPECT_EQ(s.to_target.overflow, 0u);
}

// Jitter larger than the gap between writes, plus TCP "loss" (late
// chunks): every byte arrives, in order.
TEST(WanRelayTest, TcpBytesStayInOrderUnderJitterAndLoss) {
  uint16_t port;
  int lfd = Bound(SOCK_STREAM, &port);
  std::thread echo = TcpEcho(lfd);
  WanLink l;
  l.latency_ms = 3;
  l.jitter_ms = 3;
  l.normal_jitter = true;
  l.loss = 0.05;
  auto relay = StartRelay(WanProto::kTcp, port, l, l);
  ASSERT_TRUE(relay);
  int c = Connect(relay->port(0));
  std::mt19937 rng(7);
  std::string data(256 * 1024, '\0');
  for (char& ch : data) ch = static_cast<char>(rng());
  std::string back(data.size(), '\0');
  std::thread reader([&] { EXPECT_TRUE(ReadFull(c, back.data(), back.size())); });
  for (size_t off = 0; off < data.size(); off += 4096) {
    ASSERT_EQ(send(c, data.data() + off, 4096, 0), 4096);
    if (off % (32 * 4096) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  reader.join();
  close(c);
  echo.join();
  close(lfd);
  EXPECT_TRUE(back == data);
  EXPECT_GT(relay->Stats().to_target.retransmits + relay->Stats().to_client.retransmits, 0u);
}

// Stop() with a connection open and bytes held for a second: it returns at
// once, the client sees the connection end, and every socket is closed.
TEST(WanRelayTest, StopEndsLiveFlowsAndClosesEverySocket) {
  uint16_t port;
  int lfd = Bound(SOCK_STREAM, &port);
  std::thread echo = TcpEcho(lfd);
  const int fds_before = OpenFds();
  auto relay = StartRelay(WanProto::kTcp, port, Delay(1000), Delay(1000));
  ASSERT_TRUE(relay);
  int c = Connect(relay->port(0));
  char msg[32] = "held";
  ASSERT_EQ(send(c, msg, sizeof msg, 0), static_cast<ssize_t>(sizeof msg));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto t0 = Clock::now();
  relay->Stop();
  EXPECT_LT(Ms(Clock::now() - t0), 500);
  char b;
  EXPECT_LE(recv(c, &b, 1, 0), 0);  // EOF or reset, not the echo
  close(c);
  echo.join();
  relay.reset();
  EXPECT_EQ(OpenFds(), fds_before);
  close(lfd);
}

TEST(WanRelayTest, BadAddressIsAnError) {
  WanRelayOptions o;
  o.listen_host = "not-an-ip";
  o.forwards = {{WanProto::kTcp, 0, 1}};
  auto r = WanRelay::Start(o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace tenzro::testing
