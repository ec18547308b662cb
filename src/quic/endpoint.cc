#include "quic/endpoint.h"

#include <gnutls/crypto.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>

#include <array>
#include <boost/asio/post.hpp>
#include <cstring>
#include <deque>
#include <spdlog/spdlog.h>

namespace tenzro::quic {

namespace asio = boost::asio;
using udp = asio::ip::udp;

namespace {

constexpr size_t kRecvBatch = 16;
constexpr size_t kRecvBuf = 65536;
constexpr size_t kMaxPendingTx = 4096;
// One UDP_SEGMENT send: at most this many packets (the kernel's
// UDP_MAX_SEGMENTS is 64 on the oldest kernels with GSO) and bytes (an IP
// datagram's payload limit, with room for the headers).
constexpr size_t kGsoMaxSegments = 64;
constexpr size_t kGsoMaxBytes = 65000;

Result<udp::endpoint> Resolve(const net::Endpoint& ep) {
  std::string host = ep.host == "localhost" ? "127.0.0.1" : ep.host;
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(host, ec);
  if (ec) return Error::InvalidArgument("QUIC address '{}' is not an IP address", ep.HostPort());
  return udp::endpoint(addr, ep.port);
}

std::string PeerKey(const std::string& node_id, const std::string& alpn) { return node_id + "\n" + alpn; }

}  // namespace

struct Endpoint::Socket {
  explicit Socket(asio::io_context& io) : sock(io) {}
  udp::socket sock;
  ngtcp2_sockaddr_union local{};
  ngtcp2_socklen local_len = 0;
  // Receive batch.
  std::vector<uint8_t> rx;
  std::array<mmsghdr, kRecvBatch> rx_msgs{};
  std::array<iovec, kRecvBatch> rx_iov{};
  std::array<sockaddr_storage, kRecvBatch> rx_from{};
  struct alignas(cmsghdr) Control {
    char b[CMSG_SPACE(sizeof(int))];
  };
  std::array<Control, kRecvBatch> rx_ctl{};
  bool gso = false;  // UDP_SEGMENT sends (off for good after the kernel refuses one)
  // Packets that could not be sent at once (socket buffer full).
  std::deque<std::pair<udp::endpoint, Bytes>> pending;
  bool write_wait = false;
};

Endpoint::Endpoint(asio::io_context& io, EndpointOptions options)
    : io_(io), options_(std::move(options)), alive_(std::make_shared<bool>(true)) {
  if (!options_.now_ns) options_.now_ns = SteadyClockNs;
  budget_ = std::make_shared<RequestBudget>(options_.max_inflight_request_bytes,
                                            options_.max_inflight_request_bytes_per_ip);
}

EndpointStats Endpoint::stats() const {
  EndpointStats s = stats_;
  const RequestBudget::Stats b = budget_->stats();
  s.inflight_request_bytes = b.in_flight;
  s.inflight_request_peak = b.peak;
  s.requests_refused_budget = b.refused;
  s.requests_refused_budget_per_ip = b.refused_per_ip;
  s.gso = sock_ && sock_->gso;
  return s;
}

Result<std::unique_ptr<Endpoint>> Endpoint::Create(asio::io_context& io, const identity::Identity& identity,
                                                   const net::Endpoint& bind, EndpointOptions options) {
  TENZRO_TRY(udp::endpoint local, Resolve(bind));
  int sz = options.socket_buffer_bytes;
  std::unique_ptr<Endpoint> ep(new Endpoint(io, std::move(options)));
  ep->node_id_ = identity.node_id();
  TENZRO_TRY(ep->tls_, TlsContext::Create(identity));
  gnutls_rnd(GNUTLS_RND_KEY, ep->reset_secret_.data(), ep->reset_secret_.size());
  ep->sock_ = std::make_unique<Socket>(io);
  boost::system::error_code ec;
  auto& s = ep->sock_->sock;
  s.open(local.protocol(), ec);
  if (!ec) s.bind(local, ec);
  if (ec) return Error::Io("cannot bind QUIC UDP socket {}: {}", bind.HostPort(), ec.message());
  s.non_blocking(true, ec);
  ::setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
  ::setsockopt(s.native_handle(), SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
  // ICMP errors for datagrams we sent reach the error queue (DrainErrors).
  const int one = 1;
  if (local.protocol() == udp::v4()) ::setsockopt(s.native_handle(), IPPROTO_IP, IP_RECVERR, &one, sizeof one);
  else ::setsockopt(s.native_handle(), IPPROTO_IPV6, IPV6_RECVERR, &one, sizeof one);
  if (ep->options_.segmentation_offload) {
    // GRO: the kernel may hand over several packets of one flow as one
    // datagram, with their segment size in a UDP_GRO control message.
    ::setsockopt(s.native_handle(), IPPROTO_UDP, UDP_GRO, &one, sizeof one);
    int seg = 0;
    socklen_t len = sizeof seg;
    ep->sock_->gso = ::getsockopt(s.native_handle(), IPPROTO_UDP, UDP_SEGMENT, &seg, &len) == 0;
  }
  udp::endpoint bound = s.local_endpoint(ec);
  std::memcpy(&ep->sock_->local, bound.data(), bound.size());
  ep->sock_->local_len = static_cast<ngtcp2_socklen>(bound.size());
  ep->sock_->rx.resize(kRecvBatch * kRecvBuf);
  ep->StartRead();
  return ep;
}

Endpoint::~Endpoint() {
  Shutdown();
  for (auto& [raw, c] : conns_) c->ep_ = nullptr;
  *alive_ = false;
  boost::system::error_code ec;
  if (sock_) sock_->sock.close(ec);
}

void Endpoint::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  std::vector<std::shared_ptr<Connection>> all;
  for (auto& [raw, c] : conns_) all.push_back(c);
  for (auto& c : all) c->Close(0, "endpoint shutting down");
  boost::system::error_code ec;
  if (sock_) sock_->sock.cancel(ec);
}

void Endpoint::AddProtocol(const std::string& alpn, std::shared_ptr<Protocol> protocol) {
  protocols_[alpn] = std::move(protocol);
}

std::vector<std::string> Endpoint::alpns() const {
  std::vector<std::string> out;
  for (const auto& [a, p] : protocols_) out.push_back(a);
  return out;
}

Protocol* Endpoint::FindProtocol(const std::string& alpn) const {
  auto it = protocols_.find(alpn);
  return it == protocols_.end() ? nullptr : it->second.get();
}

net::Endpoint Endpoint::local_endpoint() const {
  boost::system::error_code ec;
  udp::endpoint e = sock_->sock.local_endpoint(ec);
  return net::Endpoint{e.address().to_string(), e.port()};
}

const ngtcp2_addr Endpoint::local_addr() const {
  return ngtcp2_addr{const_cast<ngtcp2_sockaddr*>(&sock_->local.sa), sock_->local_len};
}

nlohmann::json Endpoint::StatsJson() const {
  return {{"node_id", node_id_},
          {"address", local_endpoint().HostPort()},
          {"alpns", alpns()},
          {"connections", conns_.size()},
          {"datagrams_in", stats_.datagrams_in},
          {"datagrams_out", stats_.datagrams_out},
          {"bytes_in", stats_.bytes_in},
          {"bytes_out", stats_.bytes_out},
          {"send_calls", stats_.send_calls},
          {"gso", sock_ && sock_->gso},
          {"gso_sends", stats_.gso_sends},
          {"gro_receives", stats_.gro_receives},
          {"dropped", stats_.dropped},
          {"accepted", stats_.accepted},
          {"dialed", stats_.dialed},
          {"handshake_failures", stats_.handshake_failures},
          {"streams_refused", stats_.streams_refused},
          {"peers_unreachable", stats_.peers_unreachable},
          {"peers_silent", stats_.peers_silent},
          {"inflight_request_bytes", budget_->stats().in_flight},
          {"requests_refused_budget", budget_->stats().refused + budget_->stats().refused_per_ip},
          {"pending_tx", sock_->pending.size()},
          {"connection_state", [&] {
             nlohmann::json a = nlohmann::json::array();
             for (const auto& [raw, c] : conns_)
               if (a.size() < 16) a.push_back(c->DebugJson());
             return a;
           }()}};
}

void Endpoint::StartRead() {
  if (shut_down_) return;
  std::weak_ptr<bool> alive = alive_;
  sock_->sock.async_wait(udp::socket::wait_read, [this, alive](const boost::system::error_code& ec) {
    auto a = alive.lock();
    if (!a || !*a || ec || shut_down_) return;
    OnReadable();
    StartRead();
  });
}

void Endpoint::OnReadable() {
  Socket& s = *sock_;
  // Bounded: at most 64 batches per wake-up so timers and other sockets run.
  for (int round = 0; round < 64; ++round) {
    for (size_t i = 0; i < kRecvBatch; ++i) {
      s.rx_iov[i] = {s.rx.data() + i * kRecvBuf, kRecvBuf};
      s.rx_msgs[i].msg_hdr = {};
      s.rx_msgs[i].msg_hdr.msg_name = &s.rx_from[i];
      s.rx_msgs[i].msg_hdr.msg_namelen = sizeof(sockaddr_storage);
      s.rx_msgs[i].msg_hdr.msg_iov = &s.rx_iov[i];
      s.rx_msgs[i].msg_hdr.msg_iovlen = 1;
      s.rx_msgs[i].msg_hdr.msg_control = s.rx_ctl[i].b;
      s.rx_msgs[i].msg_hdr.msg_controllen = sizeof s.rx_ctl[i].b;
      s.rx_msgs[i].msg_len = 0;
    }
    int n = ::recvmmsg(s.sock.native_handle(), s.rx_msgs.data(), kRecvBatch, MSG_DONTWAIT, nullptr);
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      DrainErrors();  // a pending ICMP error (ECONNREFUSED, EHOSTUNREACH...), then read on
      if (shut_down_) return;
      continue;
    }
    if (n <= 0) {
      DrainErrors();
      return;
    }
    for (int i = 0; i < n; ++i) {
      const msghdr& h = s.rx_msgs[i].msg_hdr;
      if (h.msg_flags & MSG_TRUNC) {
        ++stats_.dropped;
        continue;
      }
      udp::endpoint from;
      std::memcpy(from.data(), h.msg_name, std::min<size_t>(h.msg_namelen, from.capacity()));
      from.resize(std::min<size_t>(h.msg_namelen, from.capacity()));
      // A coalesced datagram (UDP_GRO): packets of gso_size bytes, the last
      // one possibly shorter.
      size_t seg = 0;
      for (cmsghdr* c = CMSG_FIRSTHDR(&h); c != nullptr; c = CMSG_NXTHDR(const_cast<msghdr*>(&h), c))
        if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_GRO && c->cmsg_len >= CMSG_LEN(sizeof(int))) {
          int v = 0;
          std::memcpy(&v, CMSG_DATA(c), sizeof v);
          if (v > 0) seg = static_cast<size_t>(v);
        }
      const uint8_t* data = s.rx.data() + i * kRecvBuf;
      const size_t len = s.rx_msgs[i].msg_len;
      if (seg == 0 || seg >= len) {
        Dispatch(std::span<const uint8_t>(data, len), from);
      } else {
        ++stats_.gro_receives;
        for (size_t off = 0; off < len && !shut_down_; off += seg)
          Dispatch(std::span<const uint8_t>(data + off, std::min(seg, len - off)), from);
      }
      if (shut_down_) return;
    }
    if (static_cast<size_t>(n) < kRecvBatch) return;
  }
}

void Endpoint::DrainErrors() {
  if (!sock_) return;
  const int fd = sock_->sock.native_handle();
  for (int k = 0; k < 256; ++k) {  // bounded; the queue is small (the kernel caps it by the socket buffer)
    sockaddr_storage to{};
    alignas(cmsghdr) char control[512];
    uint8_t data[64];
    iovec iov{data, sizeof data};
    msghdr h{};
    h.msg_name = &to;
    h.msg_namelen = sizeof to;
    h.msg_iov = &iov;
    h.msg_iovlen = 1;
    h.msg_control = control;
    h.msg_controllen = sizeof control;
    if (::recvmsg(fd, &h, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) return;
    bool unreachable = false;
    for (cmsghdr* c = CMSG_FIRSTHDR(&h); c != nullptr; c = CMSG_NXTHDR(&h, c)) {
      const bool v4 = c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR;
      const bool v6 = c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR;
      if (!v4 && !v6) continue;
      sock_extended_err ee;
      std::memcpy(&ee, CMSG_DATA(c), sizeof ee);
      // ICMPv4 destination unreachable (type 3): net 0, host 1, protocol 2,
      // port 3 (not 4, "fragmentation needed": a path MTU signal).
      // ICMPv6 destination unreachable (type 1): address 3, port 4.
      if (ee.ee_origin == SO_EE_ORIGIN_ICMP && ee.ee_type == 3 && ee.ee_code <= 3) unreachable = true;
      if (ee.ee_origin == SO_EE_ORIGIN_ICMP6 && ee.ee_type == 1 && (ee.ee_code == 3 || ee.ee_code == 4))
        unreachable = true;
    }
    if (!unreachable || h.msg_namelen == 0) continue;
    udp::endpoint dest;
    std::memcpy(dest.data(), &to, std::min<size_t>(h.msg_namelen, dest.capacity()));
    dest.resize(std::min<size_t>(h.msg_namelen, dest.capacity()));
    std::vector<std::shared_ptr<Connection>> hit;
    for (auto& [raw, c] : conns_)
      if (c->remote() == dest && !c->is_closed()) hit.push_back(c);
    if (hit.empty()) continue;
    ++stats_.peers_unreachable;
    for (auto& c : hit)
      c->Terminate(Error::Unavailable("QUIC peer {} is unreachable (ICMP: nothing listens there any more)",
                                      dest.address().to_string() + ":" + std::to_string(dest.port())),
                   nullptr, /*silent=*/true);
  }
}

void Endpoint::Dispatch(std::span<const uint8_t> data, const udp::endpoint& from) {
  ++stats_.datagrams_in;
  stats_.bytes_in += data.size();
  if (data.empty()) {
    ++stats_.dropped;
    return;
  }
  ngtcp2_version_cid vc;
  int rv = ngtcp2_pkt_decode_version_cid(&vc, data.data(), data.size(), kCidBytes);
  if (rv == NGTCP2_ERR_VERSION_NEGOTIATION) {
    SendVersionNegotiation(vc, from);
    return;
  }
  if (rv != 0) {
    ++stats_.dropped;
    return;
  }
  std::string key(reinterpret_cast<const char*>(vc.dcid), vc.dcidlen);
  ngtcp2_path path{local_addr(), {const_cast<ngtcp2_sockaddr*>(reinterpret_cast<const ngtcp2_sockaddr*>(from.data())),
                                  static_cast<ngtcp2_socklen>(from.size())},
                   nullptr};
  if (auto it = cids_.find(key); it != cids_.end()) {
    auto ci = conns_.find(it->second);
    if (ci == conns_.end()) {
      ++stats_.dropped;
      return;
    }
    std::shared_ptr<Connection> c = ci->second;  // keep alive during the call
    c->Receive(path, data);
    return;
  }
  // A new connection: only a valid client Initial starts one.
  ngtcp2_pkt_hd hd;
  if (protocols_.empty() || ngtcp2_accept(&hd, data.data(), data.size()) != 0 || server_conns_ >= options_.max_connections) {
    ++stats_.dropped;
    return;
  }
  // One address may hold at most max_connections_per_ip of them: new keys
  // from the same host do not buy more.
  const std::string ip = from.address().to_string();
  if (auto pi = conns_per_ip_.find(ip); pi != conns_per_ip_.end() && pi->second >= options_.max_connections_per_ip) {
    ++stats_.dropped;
    ++stats_.refused_per_ip;
    return;
  }
  auto c = Connection::Accept(this, hd, from);
  if (!c) {
    spdlog::warn("quic: cannot accept a connection from {}: {}", from.address().to_string(), c.error().message());
    ++stats_.dropped;
    return;
  }
  ++stats_.accepted;
  ++server_conns_;
  ++conns_per_ip_[ip];
  accepted_ip_[c->get()] = ip;
  conns_[c->get()] = *c;
  (*c)->Receive(path, data);
}

void Endpoint::SendVersionNegotiation(const ngtcp2_version_cid& vc, const udp::endpoint& to) {
  ++stats_.version_negotiations;
  uint8_t buf[NGTCP2_MAX_UDP_PAYLOAD_SIZE];
  uint8_t unused = 0;
  gnutls_rnd(GNUTLS_RND_NONCE, &unused, 1);
  uint32_t versions[] = {NGTCP2_PROTO_VER_V1};
  ngtcp2_ssize n = ngtcp2_pkt_write_version_negotiation(buf, sizeof buf, unused, vc.scid, vc.scidlen, vc.dcid,
                                                        vc.dcidlen, versions, 1);
  if (n <= 0) return;
  std::span<const uint8_t> pkt(buf, static_cast<size_t>(n));
  Send(to, std::span<const std::span<const uint8_t>>(&pkt, 1));
}

void Endpoint::Connect(const std::string& node_id, const net::Endpoint& addr, const std::string& alpn,
                       ConnectFn done) {
  auto fail = [this, &done](Error e) { asio::post(io_, [done = std::move(done), e] { done(e); }); };
  if (shut_down_) return fail(Error::Unavailable("QUIC endpoint is shut down"));
  auto key = ParseNodeId(node_id);
  if (!key) return fail(key.error());
  auto remote = Resolve(addr);
  if (!remote) return fail(remote.error());
  if (remote->port() == 0) return fail(Error::InvalidArgument("QUIC address {} has no port", addr.HostPort()));
  std::shared_ptr<Connection> conn;
  if (auto it = dialed_.find(PeerKey(node_id, alpn)); it != dialed_.end()) {
    conn = it->second.lock();
    if (conn && (conn->is_closed() || conn->remote() != *remote)) conn.reset();
  }
  if (!conn) {
    auto c = Connection::Dial(this, *key, *remote, alpn);
    if (!c) return fail(c.error());
    conn = *c;
    ++stats_.dialed;
    conns_[conn.get()] = conn;
    dialed_[PeerKey(node_id, alpn)] = conn;
    conn->Flush();  // the first Initial
  }
  conn->WhenReady([conn, done = std::move(done)](Result<void> r) {
    if (!r) return done(r.error());
    done(conn);
  });
}

void Endpoint::Send(const udp::endpoint& to, std::span<const std::span<const uint8_t>> packets) {
  if (!sock_ || packets.empty()) return;
  Socket& s = *sock_;
  size_t i = 0;
  if (s.pending.empty()) {
    // Up to kMsgs sendmmsg entries per call; with GSO an entry carries a run
    // of packets of one size (the run's last one may be shorter) as iovecs,
    // with that size in a UDP_SEGMENT control message.
    constexpr size_t kMsgs = 32;
    std::array<mmsghdr, kMsgs> msgs{};
    std::array<iovec, kMsgs * 4> iov{};  // without GSO one per entry; with it runs share the rest
    std::array<Socket::Control, kMsgs> ctl{};
    std::array<size_t, kMsgs + 1> first{};  // first packet of each entry
    while (i < packets.size()) {
      size_t m = 0, k = i, v = 0;
      while (m < kMsgs && k < packets.size() && v < iov.size()) {
        first[m] = k;
        const size_t seg = packets[k].size();
        size_t cnt = 0, bytes = 0;
        do {
          const size_t len = packets[k].size();
          iov[v++] = {const_cast<uint8_t*>(packets[k].data()), len};
          bytes += len;
          ++cnt;
          ++k;
          if (len < seg) break;  // a shorter packet ends the run
        } while (s.gso && k < packets.size() && v < iov.size() && cnt < kGsoMaxSegments &&
                 packets[k].size() <= seg && bytes + packets[k].size() <= kGsoMaxBytes);
        msghdr& h = msgs[m].msg_hdr;
        h = {};
        h.msg_name = const_cast<void*>(static_cast<const void*>(to.data()));
        h.msg_namelen = static_cast<socklen_t>(to.size());
        h.msg_iov = &iov[v - cnt];
        h.msg_iovlen = cnt;
        if (cnt > 1) {
          h.msg_control = ctl[m].b;
          h.msg_controllen = sizeof ctl[m].b;
          cmsghdr* c = CMSG_FIRSTHDR(&h);
          c->cmsg_level = IPPROTO_UDP;
          c->cmsg_type = UDP_SEGMENT;
          c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
          const uint16_t seg16 = static_cast<uint16_t>(seg);
          std::memcpy(CMSG_DATA(c), &seg16, sizeof seg16);
          h.msg_controllen = CMSG_SPACE(sizeof(uint16_t));
        }
        ++m;
      }
      first[m] = k;
      ++stats_.send_calls;
      int sent = ::sendmmsg(s.sock.native_handle(), msgs.data(), static_cast<unsigned>(m), MSG_DONTWAIT);
      if (sent < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
        if (s.gso && msgs[0].msg_hdr.msg_iovlen > 1 && (errno == EIO || errno == EINVAL || errno == EOPNOTSUPP)) {
          // The kernel or the device cannot segment: one datagram per packet from now on.
          spdlog::info("QUIC: UDP segmentation offload refused ({}); sending one datagram per packet",
                       std::strerror(errno));
          s.gso = false;
          continue;
        }
        // Unreachable peer and the like: the packets are lost; QUIC recovers or times out.
        i = first[1];
        continue;
      }
      for (int q = 0; q < sent; ++q) {
        if (msgs[q].msg_hdr.msg_iovlen > 1) ++stats_.gso_sends;
        for (size_t p = first[q]; p < first[q + 1]; ++p) {
          ++stats_.datagrams_out;
          stats_.bytes_out += packets[p].size();
        }
      }
      i = first[static_cast<size_t>(sent)];
      if (static_cast<size_t>(sent) < m) break;
    }
  }
  if (i == packets.size()) return;
  ++stats_.send_blocked;
  for (; i < packets.size() && s.pending.size() < kMaxPendingTx; ++i)
    s.pending.emplace_back(to, Bytes(packets[i].begin(), packets[i].end()));
  if (!s.write_wait) {
    s.write_wait = true;
    std::weak_ptr<bool> alive = alive_;
    s.sock.async_wait(udp::socket::wait_write, [this, alive](const boost::system::error_code& ec) {
      auto a = alive.lock();
      if (!a || !*a) return;
      sock_->write_wait = false;
      if (!ec) FlushPendingTx();
    });
  }
}

void Endpoint::FlushPendingTx() {
  Socket& s = *sock_;
  while (!s.pending.empty()) {
    auto& [to, pkt] = s.pending.front();
    ++stats_.send_calls;
    ssize_t n = ::sendto(s.sock.native_handle(), pkt.data(), pkt.size(), MSG_DONTWAIT,
                         static_cast<const sockaddr*>(static_cast<const void*>(to.data())),
                         static_cast<socklen_t>(to.size()));
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    ++stats_.datagrams_out;
    stats_.bytes_out += pkt.size();
    s.pending.pop_front();
  }
  if (!s.pending.empty()) {
    s.write_wait = true;
    std::weak_ptr<bool> alive = alive_;
    s.sock.async_wait(udp::socket::wait_write, [this, alive](const boost::system::error_code& ec) {
      auto a = alive.lock();
      if (!a || !*a) return;
      sock_->write_wait = false;
      if (!ec) FlushPendingTx();
    });
    return;
  }
  // The socket drained: let every connection write what it held back.
  for (auto& [raw, c] : conns_) c->ScheduleFlush();
}

void Endpoint::Remove(Connection* c) {
  std::weak_ptr<bool> alive = alive_;
  asio::post(io_, [this, alive, c] {
    auto a = alive.lock();
    if (!a || !*a) return;
    auto it = conns_.find(c);
    if (it == conns_.end()) return;
    std::shared_ptr<Connection> keep = it->second;
    for (const std::string& cid : keep->cids_) {
      auto ci = cids_.find(cid);
      if (ci != cids_.end() && ci->second == c) cids_.erase(ci);
    }
    if (keep->is_server()) {
      --server_conns_;
      if (auto ai = accepted_ip_.find(c); ai != accepted_ip_.end()) {
        auto pi = conns_per_ip_.find(ai->second);
        if (pi != conns_per_ip_.end() && --pi->second == 0) conns_per_ip_.erase(pi);
        accepted_ip_.erase(ai);
      }
    }
    for (auto di = dialed_.begin(); di != dialed_.end();) {
      auto locked = di->second.lock();
      if (!locked || locked.get() == c) di = dialed_.erase(di);
      else ++di;
    }
    conns_.erase(it);
    keep->ep_ = nullptr;
  });
}

}  // namespace tenzro::quic
