// tenzro <-> tenzro QUIC on loopback: two endpoints, each on its own loop
// thread (QuicClient::Start), real UDP sockets, real TLS handshakes.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/asio/post.hpp>

#include "identity/identity.h"
#include "quic/quic_client.h"
#include "quic/rpc.h"

namespace tenzro::quic {
namespace {

constexpr const char* kEchoAlpn = "tenzro/test-echo/1";

Bytes Pattern(size_t n, uint8_t seed) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(i * 131 + seed);
  return b;
}

class QuicEndpointTest : public ::testing::Test {
 protected:
  void StartServer(EndpointOptions opts = {}, RpcOptions rpc = {}) {
    server_ = QuicClient::Start(server_id_, {"127.0.0.1", 0}, opts).value();
    server_->RunOnLoop([&](Endpoint& ep) {
      // Echo, with the caller's node id in front; "fail:" requests fail.
      ep.AddProtocol(kEchoAlpn, MakeRpcProtocol(ep.io(), [this](const std::string& peer, Bytes req, Reply reply) {
        last_peer_ = peer;
        ++calls_;
        std::string s(req.begin(), req.end());
        if (s.rfind("fail:", 0) == 0) return reply(Error::NotFound("no such thing: {}", s.substr(5)));
        reply(std::move(req));
      }, rpc));
    });
    addr_ = server_->endpoint().local_endpoint();
  }
  PeerAddr Server() const { return {server_id_.node_id(), addr_}; }
  EndpointStats ServerStats() {
    EndpointStats st;
    server_->RunOnLoop([&](Endpoint& ep) { st = ep.stats(); });
    return st;
  }
  size_t ServerConnections() {
    size_t n = 0;
    server_->RunOnLoop([&](Endpoint& ep) { n = ep.connection_count(); });
    return n;
  }
  Result<Bytes> Echo(QuicClient& c, ByteSpan req, CallOptions o = {}) { return CallRpc(c, Server(), kEchoAlpn, req, o); }

  identity::Identity server_id_ = identity::Identity::Generate();
  identity::Identity client_id_ = identity::Identity::Generate();
  std::unique_ptr<QuicClient> server_;
  net::Endpoint addr_;
  std::string last_peer_;
  std::atomic<int> calls_{0};
};

TEST_F(QuicEndpointTest, EchoAuthenticatesBothSidesAndReusesTheConnection) {
  StartServer();
  auto client = QuicClient::Start(client_id_).value();
  for (int i = 0; i < 5; ++i) {
    Bytes req = Pattern(100 + i, static_cast<uint8_t>(i));
    auto r = Echo(*client, req);
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_EQ(*r, req);
  }
  EXPECT_EQ(last_peer_, client_id_.node_id());  // the server learnt the client's id from its key
  EXPECT_EQ(ServerStats().accepted, 1u);         // one connection, five streams
  EXPECT_EQ(calls_.load(), 5);
}

TEST_F(QuicEndpointTest, ManyConcurrentStreamsOfAMegabyteEach) {
  StartServer();
  auto client = QuicClient::Start(client_id_).value();
  constexpr int kThreads = 16;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Bytes req = Pattern((1u << 20) + t, static_cast<uint8_t>(t));
      auto r = Echo(*client, req);
      if (r && *r == req) ++ok;
      else ADD_FAILURE() << (r ? "echo differs" : r.error().ToString());
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), kThreads);
  EXPECT_EQ(ServerStats().accepted, 1u);
}

// Bulk bytes leave in UDP_SEGMENT runs and arrive as UDP_GRO-coalesced
// datagrams, split back into packets; with segmentation_offload off, one
// datagram per packet. Both ways every byte arrives intact.
TEST_F(QuicEndpointTest, SegmentationOffloadCarriesBulkBytesAndCanBeTurnedOff) {
  for (bool offload : {true, false}) {
    SCOPED_TRACE(offload ? "offload on" : "offload off");
    EndpointOptions o;
    o.segmentation_offload = offload;
    StartServer(o);
    auto client = QuicClient::Start(client_id_, {"127.0.0.1", 0}, o).value();
    Bytes req = Pattern(4u << 20, 9);
    auto r = Echo(*client, req);
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_TRUE(*r == req);
    const EndpointStats s = ServerStats();
    EndpointStats c;
    client->RunOnLoop([&](Endpoint& ep) { c = ep.stats(); });
    EXPECT_GT(s.datagrams_out, 3000u);  // 4 MiB in ~1.2 KB packets
    if (!offload) {
      EXPECT_FALSE(s.gso);
      EXPECT_EQ(s.gso_sends + c.gso_sends + s.gro_receives + c.gro_receives, 0u);
    } else if (s.gso) {  // the kernel takes UDP_SEGMENT (Linux >= 4.18)
      EXPECT_GT(s.gso_sends, 0u);
      EXPECT_GT(c.gro_receives, 0u);  // loopback keeps the runs whole
      EXPECT_LT(s.send_calls * 4, s.datagrams_out);
    }
    client.reset();
    server_.reset();
  }
}

// More response bytes than the 16 MiB connection window on one connection:
// every byte a reader took (even after its stream closed) must be credited.
TEST_F(QuicEndpointTest, ConnectionWindowIsReturnedAcrossManyResponses) {
  StartServer();
  auto client = QuicClient::Start(client_id_).value();
  Bytes req = Pattern(300 * 1024, 3);
  for (int i = 0; i < 70; ++i) {  // 21 MiB each way
    CallOptions o;
    o.read_timeout = std::chrono::seconds(5);
    auto r = Echo(*client, req, o);
    ASSERT_TRUE(r) << "call " << i << ": " << r.error().ToString();
    ASSERT_EQ(r->size(), req.size());
  }
  EXPECT_EQ(ServerStats().accepted, 1u);
}

TEST_F(QuicEndpointTest, HandlerErrorsKeepTheirCode) {
  StartServer();
  auto client = QuicClient::Start(client_id_).value();
  std::string req = "fail:expert 7";
  auto r = Echo(*client, ByteSpan(reinterpret_cast<const uint8_t*>(req.data()), req.size()));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(r.error().message().find("no such thing: expert 7"), std::string::npos) << r.error().message();
}

TEST_F(QuicEndpointTest, WrongNodeIdIsRefusedInTheHandshakeAndTheServerKeepsServing) {
  StartServer();
  auto client = QuicClient::Start(client_id_).value();
  identity::Identity other = identity::Identity::Generate();
  Bytes req = Pattern(10, 1);
  auto r = CallRpc(*client, {other.node_id(), addr_}, kEchoAlpn, req);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kPermissionDenied) << r.error().ToString();
  EXPECT_NE(r.error().message().find(server_id_.node_id()), std::string::npos) << r.error().message();
  EXPECT_EQ(calls_.load(), 0);
  auto good = Echo(*client, req);
  ASSERT_TRUE(good) << good.error().ToString();
  EXPECT_EQ(*good, req);
}

TEST_F(QuicEndpointTest, WrongAlpnIsRefusedAndTheServerKeepsServing) {
  StartServer();
  auto client = QuicClient::Start(client_id_).value();
  Bytes req = Pattern(10, 2);
  auto r = client->Request(Server(), "not-served/1", req);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kUnavailable) << r.error().ToString();
  EXPECT_NE(r.error().message().find("handshake"), std::string::npos) << r.error().message();
  EXPECT_GE(ServerStats().handshake_failures, 1u);
  auto good = Echo(*client, req);
  ASSERT_TRUE(good) << good.error().ToString();
}

TEST_F(QuicEndpointTest, GarbageDatagramsAreDroppedAndTheServerKeepsServing) {
  StartServer();
  int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(addr_.port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // Empty, tiny, random short headers, long headers with a bogus version
  // (answered by version negotiation), Initial-looking junk of 1200 bytes.
  std::vector<Bytes> junk = {{}, {0x00}, Pattern(40, 3), Pattern(1500, 9)};
  Bytes long_bogus = Pattern(1200, 5);
  long_bogus[0] = 0xc0;
  long_bogus[1] = 0x1a, long_bogus[2] = 0x2a, long_bogus[3] = 0x3a, long_bogus[4] = 0x4a;
  junk.push_back(long_bogus);
  Bytes initial_junk = Pattern(1200, 6);
  initial_junk[0] = 0xc0;
  initial_junk[1] = 0, initial_junk[2] = 0, initial_junk[3] = 0, initial_junk[4] = 1;
  initial_junk[5] = 8;
  junk.push_back(initial_junk);
  for (int round = 0; round < 50; ++round)
    for (const Bytes& j : junk)
      ::sendto(fd, j.data(), j.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
  ::close(fd);
  auto client = QuicClient::Start(client_id_).value();
  Bytes req = Pattern(1000, 4);
  auto good = Echo(*client, req);
  ASSERT_TRUE(good) << good.error().ToString();
  EXPECT_EQ(*good, req);
  EndpointStats st = ServerStats();
  EXPECT_GE(st.dropped, 200u);
  EXPECT_GE(st.version_negotiations, 1u);
  EXPECT_EQ(ServerConnections(), 1u);  // only the real client
}

TEST_F(QuicEndpointTest, OversizedRequestIsResetAndTheConnectionKeepsServing) {
  RpcOptions rpc;
  rpc.max_request_bytes = 64 * 1024;
  StartServer({}, rpc);
  auto client = QuicClient::Start(client_id_).value();
  Bytes big = Pattern(1 << 20, 7);
  auto r = Echo(*client, big);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kUnavailable) << r.error().ToString();
  EXPECT_NE(r.error().message().find("code 2"), std::string::npos) << r.error().message();
  EXPECT_EQ(calls_.load(), 0);
  Bytes small = Pattern(60 * 1024, 8);
  auto good = Echo(*client, small);
  ASSERT_TRUE(good) << good.error().ToString();
  EXPECT_EQ(*good, small);
  EXPECT_EQ(ServerStats().accepted, 1u);  // same connection
}

TEST_F(QuicEndpointTest, IdleConnectionsCloseAndAreRedialed) {
  EndpointOptions opts;
  opts.idle_timeout = std::chrono::milliseconds(300);
  StartServer(opts);
  auto client = QuicClient::Start(client_id_, {"127.0.0.1", 0}, opts).value();
  Bytes req = Pattern(10, 1);
  ASSERT_TRUE(Echo(*client, req));
  EXPECT_EQ(ServerConnections(), 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(ServerConnections(), 0u);
  auto again = Echo(*client, req);
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_EQ(ServerStats().accepted, 2u);
}

TEST_F(QuicEndpointTest, BadPeersAndUnreachableAddressesFailCleanly) {
  auto client = QuicClient::Start(client_id_).value();
  Bytes req = Pattern(10, 1);
  auto bad_id = client->Request({"zz", {"127.0.0.1", 9}}, kEchoAlpn, req);
  ASSERT_FALSE(bad_id);
  EXPECT_EQ(bad_id.error().code(), ErrorCode::kInvalidArgument);
  auto bad_host = client->Request({server_id_.node_id(), {"example.org", 9}}, kEchoAlpn, req);
  ASSERT_FALSE(bad_host);
  EXPECT_EQ(bad_host.error().code(), ErrorCode::kInvalidArgument);
  // Nothing listens there: the connect deadline ends the wait.
  CallOptions o;
  o.connect_timeout = std::chrono::milliseconds(500);
  auto nobody = client->Request({server_id_.node_id(), {"127.0.0.1", 9}}, kEchoAlpn, req, o);
  ASSERT_FALSE(nobody);
  EXPECT_TRUE(nobody.error().code() == ErrorCode::kDeadlineExceeded ||
              nobody.error().code() == ErrorCode::kUnavailable)
      << nobody.error().ToString();
}

// Admission: one IP address holds at most max_connections_per_ip accepted
// connections. Here 3: three clients on 127.0.0.1 (each its own socket and
// key) connect, the fourth's Initials are dropped (its dial times out, the
// server keeps serving the others), and once a connection is gone the
// address may connect again.
TEST_F(QuicEndpointTest, ConnectionsPerIpAreCapped) {
  EndpointOptions opts;
  opts.max_connections_per_ip = 3;
  opts.idle_timeout = std::chrono::milliseconds(1500);
  StartServer(opts);
  std::vector<std::unique_ptr<QuicClient>> clients;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(QuicClient::Start(identity::Identity::Generate()).value());
    auto r = Echo(*clients.back(), Pattern(100, static_cast<uint8_t>(i)));
    ASSERT_TRUE(r) << "client " << i << ": " << r.error().ToString();
  }
  EXPECT_EQ(ServerConnections(), 3u);
  auto fourth = QuicClient::Start(identity::Identity::Generate()).value();
  CallOptions quick;
  quick.connect_timeout = std::chrono::milliseconds(500);
  auto refused = Echo(*fourth, Pattern(100, 4), quick);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), ErrorCode::kDeadlineExceeded) << refused.error().ToString();
  EXPECT_GE(ServerStats().refused_per_ip, 1u);
  EXPECT_EQ(ServerConnections(), 3u);
  EXPECT_TRUE(Echo(*clients[0], Pattern(100, 5)));  // the admitted ones keep working
  // Idle connections close (1.5 s): the address may connect again.
  clients.clear();
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (ServerConnections() > 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(ServerConnections(), 0u);
  auto again = Echo(*fourth, Pattern(100, 6));
  EXPECT_TRUE(again) << again.error().ToString();
}

}  // namespace
}  // namespace tenzro::quic

namespace tenzro::quic {
namespace {

// Keep-alive PINGs (EndpointOptions::keep_alive) keep a dialed connection
// open past the peers' idle timeout; without them the same pause costs a
// new handshake.
TEST_F(QuicEndpointTest, KeepAlivePingsKeepAnIdleConnectionToAHolderOpen) {
  EndpointOptions short_idle;
  short_idle.idle_timeout = std::chrono::milliseconds(300);
  StartServer(short_idle);
  const std::string req = "hello";
  const ByteSpan body(reinterpret_cast<const uint8_t*>(req.data()), req.size());
  for (bool keep_alive : {true, false}) {
    EndpointOptions o = short_idle;
    o.keep_alive = keep_alive ? std::chrono::milliseconds(80) : std::chrono::milliseconds(0);
    auto client = QuicClient::Start(client_id_, {"127.0.0.1", 0}, o).value();
    ASSERT_TRUE(Echo(*client, body));
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // > 3 idle timeouts
    ASSERT_TRUE(Echo(*client, body));
    EndpointStats st;
    client->RunOnLoop([&](Endpoint& ep) { st = ep.stats(); });
    EXPECT_EQ(st.dialed, keep_alive ? 1u : 2u) << (keep_alive ? "with" : "without") << " keep-alive";
    EXPECT_EQ(st.peers_silent, 0u);
  }
}

// A holder whose process stops answering (its loop frozen, as under SIGSTOP
// or a hung host: no ICMP, no CONNECTION_CLOSE) is noticed from unanswered
// probes (EndpointOptions::dead_after_ptos): a call with a 20 s read timeout
// fails as unavailable within a few probe timeouts, and an idle connection
// to it is ended from its keep-alive PINGs alone.
TEST_F(QuicEndpointTest, AFrozenPeerIsNoticedFromUnansweredProbesNotTheReadTimeout) {
  StartServer();
  const std::string req = "hello";
  const ByteSpan body(reinterpret_cast<const uint8_t*>(req.data()), req.size());
  EndpointOptions o;
  o.keep_alive = std::chrono::milliseconds(100);
  auto client = QuicClient::Start(client_id_, {"127.0.0.1", 0}, o).value();
  auto silent = [&] {
    uint64_t n = 0;
    client->RunOnLoop([&](Endpoint& ep) { n = ep.stats().peers_silent; });
    return n;
  };
  // Freezes the server's loop thread until released (bounded: 15 s).
  struct Freeze {
    std::mutex mu;
    std::condition_variable cv;
    bool released = false;
    void Release() {
      std::lock_guard<std::mutex> l(mu);
      released = true;
      cv.notify_all();
    }
  };
  auto freeze_server = [&] {
    auto f = std::make_shared<Freeze>();
    boost::asio::post(server_->endpoint().io(), [f] {
      std::unique_lock<std::mutex> l(f->mu);
      f->cv.wait_for(l, std::chrono::seconds(15), [&] { return f->released; });
    });
    return f;
  };

  // 1. A call in flight.
  ASSERT_TRUE(Echo(*client, body));
  auto f1 = freeze_server();
  CallOptions patient;
  patient.read_timeout = std::chrono::seconds(20);
  auto t0 = std::chrono::steady_clock::now();
  auto r = Echo(*client, body, patient);
  const auto took = std::chrono::steady_clock::now() - t0;
  f1->Release();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kUnavailable) << r.error().ToString();
  EXPECT_NE(r.error().ToString().find("stopped answering"), std::string::npos) << r.error().ToString();
  EXPECT_LT(took, std::chrono::seconds(8)) << "noticed from probes, not the 20 s read timeout";
  EXPECT_EQ(silent(), 1u);

  // 2. An idle connection: only keep-alive PINGs go out, and they end it.
  ASSERT_TRUE(Echo(*client, body));
  auto f2 = freeze_server();
  t0 = std::chrono::steady_clock::now();
  while (silent() < 2 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  f2->Release();
  EXPECT_EQ(silent(), 2u) << "the idle connection to the frozen peer was not ended";
  // And the peer, thawed, is reached again on a new connection.
  ASSERT_TRUE(Echo(*client, body));
}

}  // namespace
}  // namespace tenzro::quic
