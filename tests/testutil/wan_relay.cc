// The relay thread: one ppoll() loop over the listening sockets, the TCP
// connection pairs and the UDP session sockets; every chunk read gets a
// release time (serialisation on the direction's link, then latency +
// jitter [+ one round trip for a "lost" TCP chunk]) and is written out when
// it is due. See wan_relay.h for the model.
#include "testutil/wan_relay.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <queue>
#include <random>
#include <thread>

namespace tenzro::testing {
namespace {

using Clock = std::chrono::steady_clock;
using Time = Clock::time_point;
constexpr size_t kChunk = 16 * 1024;
constexpr int kToTarget = 0, kToClient = 1;

Time After(Time t, double ms) {
  return t + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(ms));
}
double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

void SetNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Room for a burst (QUIC sends flights of datagrams); the kernel caps it at
// net.core.rmem_max / wmem_max.
void SetUdpBuffers(int fd) {
  int size = 4 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
}

struct Chunk {
  Time arrive, release;
  std::string data;
  size_t off = 0;
};

// One direction of a TCP connection pair: bytes read from `src` wait in `q`
// until due, then go to `dst`.
struct TcpPipe {
  std::deque<Chunk> q;
  Time last_release{};
  bool eof = false;       // src said EOF
  bool shut = false;      // dst shut down for writing after the queue drained
};

struct TcpConn {
  int fd[2] = {-1, -1};  // [kToTarget] = upstream socket, [kToClient] = client socket
  TcpPipe pipe[2];       // pipe[d]: bytes travelling in direction d, written to fd[d]
  bool dead = false;
  // Direction d reads from the other socket.
  int src(int d) const { return fd[1 - d]; }
};

struct UdpSession {
  int fd = -1;  // connected to the target
  size_t listener = 0;
  sockaddr_in client{};
  Time last_used{};
};

struct UdpItem {
  Time release, arrive;
  int dir = 0;
  uint64_t session = 0;
  std::string data;
  bool operator>(const UdpItem& o) const { return release > o.release; }
};

struct Listener {
  int fd = -1;
  WanProto proto = WanProto::kTcp;
  uint16_t port = 0;
  sockaddr_in target{};
};

Result<sockaddr_in> Addr(const std::string& host, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1)
    return Error::InvalidArgument("wan relay: '{}' is not an IPv4 address", host);
  return a;
}

uint64_t AddrKey(const sockaddr_in& a) {
  return (static_cast<uint64_t>(a.sin_addr.s_addr) << 16) | a.sin_port;
}

}  // namespace

class WanRelay::Impl {
 public:
  explicit Impl(WanRelayOptions o) : opt_(std::move(o)), rng_(opt_.seed) {
    link_[kToTarget] = opt_.to_target;
    link_[kToClient] = opt_.to_client;
  }
  ~Impl() {
    Stop();
    for (auto& l : listeners_)
      if (l.fd >= 0) close(l.fd);
    if (wake_ >= 0) close(wake_);
  }

  Result<void> Open() {
    if (opt_.forwards.empty()) return Error::InvalidArgument("wan relay: no forwards");
    wake_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_ < 0) return Error::FromErrno(errno, "wan relay: eventfd");
    for (const WanForward& f : opt_.forwards) {
      Listener l;
      l.proto = f.proto;
      TENZRO_TRY(l.target, Addr(opt_.target_host, f.target_port));
      TENZRO_TRY(sockaddr_in a, Addr(opt_.listen_host, f.listen_port));
      const bool tcp = f.proto == WanProto::kTcp;
      l.fd = socket(AF_INET, (tcp ? SOCK_STREAM : SOCK_DGRAM) | SOCK_CLOEXEC, 0);
      if (l.fd < 0) return Error::FromErrno(errno, "wan relay: socket");
      listeners_.push_back(l);
      int one = 1;
      if (tcp) setsockopt(l.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      if (bind(l.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
        return Error::FromErrno(errno, "wan relay: bind " + opt_.listen_host + ":" + std::to_string(f.listen_port));
      if (tcp && listen(l.fd, 128) != 0) return Error::FromErrno(errno, "wan relay: listen");
      SetNonBlocking(l.fd);
      if (!tcp) SetUdpBuffers(l.fd);
      socklen_t len = sizeof a;
      getsockname(l.fd, reinterpret_cast<sockaddr*>(&a), &len);
      listeners_.back().port = ntohs(a.sin_port);
    }
    thread_ = std::thread([this] { Loop(); });
    return Ok();
  }

  void Stop() {
    if (stop_.exchange(true)) return;
    uint64_t one = 1;
    if (wake_ >= 0) (void)!write(wake_, &one, sizeof one);
    if (thread_.joinable()) thread_.join();
  }

  void SetLinks(const WanLink& to_target, const WanLink& to_client) {
    std::lock_guard<std::mutex> lock(mu_);
    link_[kToTarget] = to_target;
    link_[kToClient] = to_client;
  }
  uint16_t port(size_t i) const { return i < listeners_.size() ? listeners_[i].port : 0; }
  WanRelayStats Stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

 private:
  WanDirectionStats& Dir(int d) { return d == kToTarget ? stats_.to_target : stats_.to_client; }

  // Release time of `bytes` arriving now in direction d; nullopt-like false
  // when a UDP datagram is lost.
  bool Schedule(int d, size_t bytes, bool udp, Time now, Time* release) {
    WanLink l, back;
    {
      std::lock_guard<std::mutex> lock(mu_);
      l = link_[d];
      back = link_[1 - d];
    }
    std::uniform_real_distribution<double> u01(0, 1);
    const bool lost = l.loss > 0 && u01(rng_) < l.loss;
    if (lost && udp) {
      std::lock_guard<std::mutex> lock(mu_);
      ++Dir(d).lost;
      return false;
    }
    Time sent = now;
    if (l.rate_bytes_per_s > 0) {
      link_free_[d] = std::max(link_free_[d], now);
      link_free_[d] = After(link_free_[d], 1000.0 * static_cast<double>(bytes) / l.rate_bytes_per_s);
      sent = link_free_[d];
    }
    double delay = l.latency_ms;
    if (l.jitter_ms > 0) {
      if (l.normal_jitter) {
        std::normal_distribution<double> n(0, l.jitter_ms);
        delay += n(rng_);
      } else {
        std::uniform_real_distribution<double> u(-l.jitter_ms, l.jitter_ms);
        delay += u(rng_);
      }
    }
    if (lost) {  // TCP: a fast retransmit, one round trip later
      delay += std::max(0.0, l.latency_ms + back.latency_ms);
      std::lock_guard<std::mutex> lock(mu_);
      ++Dir(d).retransmits;
    }
    *release = After(sent, std::max(0.0, delay));
    return true;
  }

  void Queued(int d, ptrdiff_t delta) {
    queued_[d] = static_cast<size_t>(static_cast<ptrdiff_t>(queued_[d]) + delta);
    if (delta > 0) {
      std::lock_guard<std::mutex> lock(mu_);
      Dir(d).max_queue_bytes = std::max<uint64_t>(Dir(d).max_queue_bytes, queued_[d]);
    }
  }

  void Delivered(int d, size_t bytes, Time arrive, Time now, bool udp) {
    std::lock_guard<std::mutex> lock(mu_);
    WanDirectionStats& s = Dir(d);
    s.bytes += bytes;
    (udp ? s.datagrams : s.chunks) += 1;
    s.delay_ms_sum += Ms(now - arrive);
  }

  size_t Flows() const { return conns_.size() + sessions_.size(); }

  // ---- TCP ----
  void Accept(const Listener& l) {
    for (;;) {
      int c = accept4(l.fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      int u = Flows() < opt_.max_flows ? socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0) : -1;
      // Loopback target: a blocking connect completes (or is refused) at once.
      if (u < 0 || connect(u, reinterpret_cast<const sockaddr*>(&l.target), sizeof l.target) != 0) {
        if (u >= 0) close(u);
        close(c);
        std::lock_guard<std::mutex> lock(mu_);
        ++stats_.tcp_refused;
        continue;
      }
      int one = 1;
      for (int fd : {c, u}) {
        SetNonBlocking(fd);
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      }
      auto conn = std::make_unique<TcpConn>();
      conn->fd[kToTarget] = u;
      conn->fd[kToClient] = c;
      conns_.push_back(std::move(conn));
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.tcp_accepted;
    }
  }

  void TcpRead(TcpConn& c, int d, Time now) {
    TcpPipe& p = c.pipe[d];
    while (!p.eof && queued_[d] < opt_.max_queue_bytes) {
      ssize_t n = recv(c.src(d), rbuf_, kChunk, 0);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
      if (n < 0) {
        c.dead = true;
        return;
      }
      if (n == 0) {
        p.eof = true;
        return;
      }
      std::string buf(rbuf_, static_cast<size_t>(n));
      Chunk ch;
      ch.arrive = now;
      Schedule(d, buf.size(), false, now, &ch.release);
      ch.release = std::max(ch.release, p.last_release);  // no reordering
      p.last_release = ch.release;
      ch.data = std::move(buf);
      Queued(d, static_cast<ptrdiff_t>(ch.data.size()));
      p.q.push_back(std::move(ch));
    }
  }

  // Writes the due chunks of direction d; true if it is blocked on POLLOUT.
  bool TcpWrite(TcpConn& c, int d, Time now) {
    TcpPipe& p = c.pipe[d];
    while (!p.q.empty() && p.q.front().release <= now) {
      Chunk& ch = p.q.front();
      ssize_t n = send(c.fd[d], ch.data.data() + ch.off, ch.data.size() - ch.off, MSG_NOSIGNAL);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
      if (n < 0) {
        c.dead = true;
        return false;
      }
      ch.off += static_cast<size_t>(n);
      if (ch.off < ch.data.size()) return true;
      Delivered(d, ch.data.size(), ch.arrive, now, false);
      Queued(d, -static_cast<ptrdiff_t>(ch.data.size()));
      p.q.pop_front();
    }
    if (p.q.empty() && p.eof && !p.shut) {
      shutdown(c.fd[d], SHUT_WR);
      p.shut = true;
    }
    return false;
  }

  void CloseConn(TcpConn& c) {
    for (int d : {kToTarget, kToClient}) {
      for (const Chunk& ch : c.pipe[d].q) Queued(d, -static_cast<ptrdiff_t>(ch.data.size()));
      c.pipe[d].q.clear();
      if (c.fd[d] >= 0) close(c.fd[d]);
      c.fd[d] = -1;
    }
  }

  // ---- UDP ----
  void UdpEnqueue(int d, uint64_t session, std::string data, Time now) {
    if (queued_[d] + data.size() > opt_.max_queue_bytes) {
      std::lock_guard<std::mutex> lock(mu_);
      ++Dir(d).overflow;
      return;
    }
    UdpItem it;
    it.arrive = now;
    if (!Schedule(d, data.size(), true, now, &it.release)) return;
    it.dir = d;
    it.session = session;
    it.data = std::move(data);
    Queued(d, static_cast<ptrdiff_t>(it.data.size()));
    udp_q_.push(std::move(it));
  }

  void UdpFromClient(size_t li, Time now) {
    for (int i = 0; i < 256; ++i) {
      sockaddr_in from{};
      socklen_t len = sizeof from;
      ssize_t n = recvfrom(listeners_[li].fd, rbuf_, sizeof rbuf_, 0, reinterpret_cast<sockaddr*>(&from), &len);
      if (n < 0) return;
      std::string buf(rbuf_, static_cast<size_t>(n));
      const uint64_t key = (static_cast<uint64_t>(li) << 48) ^ AddrKey(from);
      auto it = by_addr_.find(key);
      if (it == by_addr_.end()) {
        int fd = Flows() < opt_.max_flows ? socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0) : -1;
        const sockaddr_in& t = listeners_[li].target;
        if (fd >= 0 && connect(fd, reinterpret_cast<const sockaddr*>(&t), sizeof t) != 0) {
          close(fd);
          fd = -1;
        }
        if (fd < 0) {
          std::lock_guard<std::mutex> lock(mu_);
          ++stats_.to_target.overflow;
          continue;
        }
        SetNonBlocking(fd);
        SetUdpBuffers(fd);
        const uint64_t id = ++next_session_;
        UdpSession s;
        s.fd = fd;
        s.listener = li;
        s.client = from;
        sessions_[id] = s;
        it = by_addr_.emplace(key, id).first;
        std::lock_guard<std::mutex> lock(mu_);
        ++stats_.udp_sessions;
      }
      sessions_[it->second].last_used = now;
      UdpEnqueue(kToTarget, it->second, std::move(buf), now);
    }
  }

  void UdpFromTarget(uint64_t id, UdpSession& s, Time now) {
    for (int i = 0; i < 256; ++i) {
      ssize_t n = recv(s.fd, rbuf_, sizeof rbuf_, 0);
      if (n < 0) return;
      std::string buf(rbuf_, static_cast<size_t>(n));
      s.last_used = now;
      UdpEnqueue(kToClient, id, std::move(buf), now);
    }
  }

  void UdpDeliver(Time now) {
    while (!udp_q_.empty() && udp_q_.top().release <= now) {
      const UdpItem& it = udp_q_.top();
      auto s = sessions_.find(it.session);
      if (s != sessions_.end()) {
        if (it.dir == kToTarget) {
          (void)send(s->second.fd, it.data.data(), it.data.size(), MSG_NOSIGNAL);
        } else {
          const sockaddr_in& to = s->second.client;
          (void)sendto(listeners_[s->second.listener].fd, it.data.data(), it.data.size(), 0,
                       reinterpret_cast<const sockaddr*>(&to), sizeof to);
        }
        Delivered(it.dir, it.data.size(), it.arrive, now, true);
      }
      Queued(it.dir, -static_cast<ptrdiff_t>(it.data.size()));
      udp_q_.pop();
    }
  }

  void ExpireSessions(Time now) {
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if (now - it->second.last_used > opt_.udp_idle) {
        by_addr_.erase((static_cast<uint64_t>(it->second.listener) << 48) ^ AddrKey(it->second.client));
        close(it->second.fd);
        it = sessions_.erase(it);
      } else {
        ++it;
      }
    }
  }

  // ---- the loop ----
  enum Kind : uint8_t { kWake, kListen, kConn, kSession };
  struct Ref {
    Kind kind;
    size_t index;
    uint64_t id;
  };

  // Writes every due byte, drops finished connections; the next release
  // time that no POLLOUT will announce (Time::max() if none). blocked_[2i+d]:
  // connection i's direction d waits for POLLOUT.
  Time DeliverDue(Time now) {
    UdpDeliver(now);
    Time next = Time::max();
    blocked_.assign(conns_.size() * 2, false);
    for (size_t i = 0; i < conns_.size(); ++i) {
      TcpConn& c = *conns_[i];
      for (int d : {kToTarget, kToClient}) {
        if (!c.dead) blocked_[2 * i + d] = TcpWrite(c, d, now);
        if (!c.pipe[d].q.empty() && !blocked_[2 * i + d]) next = std::min(next, c.pipe[d].q.front().release);
      }
    }
    for (size_t i = conns_.size(); i-- > 0;) {
      TcpConn& c = *conns_[i];
      if (c.dead || (c.pipe[0].shut && c.pipe[1].shut)) {
        CloseConn(c);
        conns_.erase(conns_.begin() + static_cast<ptrdiff_t>(i));
        const auto b = blocked_.begin() + static_cast<ptrdiff_t>(2 * i);
        blocked_.erase(b, b + 2);
      }
    }
    if (!udp_q_.empty()) next = std::min(next, udp_q_.top().release);
    return next;
  }

  void BuildPollSet() {
    pfds_.clear();
    refs_.clear();
    pfds_.push_back({wake_, POLLIN, 0});
    refs_.push_back({kWake, 0, 0});
    for (size_t i = 0; i < listeners_.size(); ++i) {
      pfds_.push_back({listeners_[i].fd, POLLIN, 0});
      refs_.push_back({kListen, i, 0});
    }
    for (size_t i = 0; i < conns_.size(); ++i) {
      TcpConn& c = *conns_[i];
      for (int d : {kToTarget, kToClient}) {
        // Socket fd[d] is read for direction 1-d and written for direction d.
        short ev = 0;
        if (!c.pipe[1 - d].eof && queued_[1 - d] < opt_.max_queue_bytes) ev |= POLLIN;
        if (blocked_[2 * i + d]) ev |= POLLOUT;
        // Nothing to wait for: fd -1, so a hung-up socket does not spin.
        pfds_.push_back({ev ? c.fd[d] : -1, ev, 0});
        refs_.push_back({kConn, i, static_cast<uint64_t>(d)});
      }
    }
    for (auto& [id, s] : sessions_) {
      pfds_.push_back({s.fd, POLLIN, 0});
      refs_.push_back({kSession, 0, id});
    }
  }

  void HandleEvents(Time now) {
    for (size_t k = 0; k < pfds_.size(); ++k) {
      const short re = pfds_[k].revents;
      if (!re) continue;
      const Ref& r = refs_[k];
      switch (r.kind) {
        case kWake: {
          uint64_t v;
          (void)!read(wake_, &v, sizeof v);
          break;
        }
        case kListen:
          if (listeners_[r.index].proto == WanProto::kTcp) Accept(listeners_[r.index]);
          else UdpFromClient(r.index, now);
          break;
        case kConn:
          // POLLOUT needs nothing here: the next DeliverDue writes.
          if (re & (POLLIN | POLLHUP | POLLERR)) TcpRead(*conns_[r.index], 1 - static_cast<int>(r.id), now);
          break;
        case kSession:
          if (auto it = sessions_.find(r.id); it != sessions_.end()) UdpFromTarget(r.id, it->second, now);
          break;
      }
    }
  }

  void Loop() {
    Time last_expire = Clock::now();
    while (!stop_.load()) {
      Time now = Clock::now();
      const Time next = DeliverDue(now);
      if (now - last_expire > std::chrono::seconds(1)) {
        ExpireSessions(now);
        last_expire = now;
      }
      BuildPollSet();
      timespec ts{1, 0};  // at most 1 s, for the idle-session sweep
      if (next != Time::max()) {
        const auto wait = std::max(Clock::duration::zero(), next - Clock::now());
        const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wait).count();
        if (ns < 1000000000) ts = {0, static_cast<long>(ns)};
      }
      if (ppoll(pfds_.data(), pfds_.size(), &ts, nullptr) > 0) HandleEvents(Clock::now());
    }
    for (auto& c : conns_) CloseConn(*c);
    conns_.clear();
    for (auto& [id, s] : sessions_) close(s.fd);
    sessions_.clear();
    by_addr_.clear();
    while (!udp_q_.empty()) udp_q_.pop();
  }

  WanRelayOptions opt_;
  std::vector<Listener> listeners_;  // fixed after Open()
  int wake_ = -1;
  std::thread thread_;
  std::atomic<bool> stop_{false};

  // Loop thread only.
  std::mt19937_64 rng_;
  char rbuf_[65536];
  Time link_free_[2]{};
  size_t queued_[2] = {0, 0};
  std::vector<std::unique_ptr<TcpConn>> conns_;
  std::map<uint64_t, UdpSession> sessions_;
  std::map<uint64_t, uint64_t> by_addr_;
  uint64_t next_session_ = 0;
  std::priority_queue<UdpItem, std::vector<UdpItem>, std::greater<UdpItem>> udp_q_;
  std::vector<bool> blocked_;
  std::vector<pollfd> pfds_;
  std::vector<Ref> refs_;

  // Shared with the callers of SetLinks / Stats.
  mutable std::mutex mu_;
  WanLink link_[2];
  WanRelayStats stats_;
};

Result<std::unique_ptr<WanRelay>> WanRelay::Start(WanRelayOptions options) {
  auto impl = std::make_unique<Impl>(std::move(options));
  TENZRO_CHECK_OK(impl->Open());
  return std::unique_ptr<WanRelay>(new WanRelay(std::move(impl)));
}

WanRelay::WanRelay(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
WanRelay::~WanRelay() = default;
void WanRelay::Stop() { impl_->Stop(); }
void WanRelay::SetLinks(const WanLink& to_target, const WanLink& to_client) { impl_->SetLinks(to_target, to_client); }
uint16_t WanRelay::port(size_t i) const { return impl_->port(i); }
WanRelayStats WanRelay::Stats() const { return impl_->Stats(); }

}  // namespace tenzro::testing
