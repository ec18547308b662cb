// The connection's timers run on the endpoint's injected clock
// (EndpointOptions::now_ns): with a fake clock moved past the handshake
// timeout, a dial to a peer that never answers fails at the connection's
// next timer (milliseconds of real time), not after the configured minute.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>

#include <boost/asio/ip/udp.hpp>

#include "identity/identity.h"
#include "quic/quic_client.h"

namespace tenzro::quic {
namespace {

TEST(QuicConnectionClock, HandshakeTimeoutIsComputedFromTheInjectedClock) {
  // A UDP port that swallows the client's Initials and never answers.
  boost::asio::io_context io;
  boost::asio::ip::udp::socket silent(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  const net::Endpoint silent_addr{"127.0.0.1", silent.local_endpoint().port()};

  auto fake_ns = std::make_shared<std::atomic<uint64_t>>(uint64_t{1000} * 1000 * 1000 * 1000);
  EndpointOptions opts;
  opts.handshake_timeout = std::chrono::seconds(60);
  opts.idle_timeout = std::chrono::seconds(600);  // not the one that fires
  opts.now_ns = [fake_ns] { return fake_ns->load(); };
  auto client = QuicClient::Start(identity::Identity::Generate(), {"127.0.0.1", 0}, opts).value();

  std::promise<Result<std::shared_ptr<Connection>>> dialed;
  auto result = dialed.get_future();
  auto t0 = std::chrono::steady_clock::now();
  // Connect dials at once on the loop: the connection's initial_ts is the
  // fake "now" before the clock moves.
  client->RunOnLoop([&](Endpoint& ep) {
    ep.Connect(identity::Identity::Generate().node_id(), silent_addr, "tenzro/test/1",
               [&dialed](Result<std::shared_ptr<Connection>> c) { dialed.set_value(std::move(c)); });
  });
  fake_ns->fetch_add(uint64_t{61} * 1000 * 1000 * 1000);  // past the 60 s handshake timeout

  ASSERT_EQ(result.wait_for(std::chrono::seconds(15)), std::future_status::ready)
      << "the handshake timeout did not follow the injected clock";
  auto c = result.get();
  auto real = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(c.error().message().find("handshake"), std::string::npos) << c.error().message();
  EXPECT_NE(c.error().message().find("timed out"), std::string::npos) << c.error().message();
  EXPECT_LT(real, std::chrono::seconds(15));  // the real clock alone would have taken 60 s
}

}  // namespace
}  // namespace tenzro::quic
