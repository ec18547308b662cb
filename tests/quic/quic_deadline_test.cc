// A QUIC peer that drips: it answers one byte every 50 ms and never finishes,
// so no single read ever waits long enough for the read timeout. The call's
// total deadline (CallOptions::total_timeout) ends it anyway, in about that
// time; without one the same call would run for as long as the peer likes
// (here: up to the test's bound, checked by reading well past the deadline).
#include <gtest/gtest.h>

#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <memory>

#include "identity/identity.h"
#include "quic/quic_client.h"

namespace tenzro::quic {
namespace {

using namespace std::chrono_literals;
constexpr const char* kDripAlpn = "tenzro/test-drip/1";

// Once the request is in, writes one byte per tick until the stream closes.
class DripStream : public StreamHandler {
 public:
  explicit DripStream(boost::asio::io_context& io) : state_(std::make_shared<State>(io)) {}
  size_t OnData(Stream& stream, ByteSpan data, bool fin) override {
    if (fin && !state_->stream) {
      state_->stream = &stream;
      Tick(state_);
    }
    return data.size();
  }
  void OnClose(Stream&, const std::optional<Error>&) override {
    state_->stream = nullptr;
    state_->timer.cancel();
  }

 private:
  struct State {
    explicit State(boost::asio::io_context& io) : timer(io) {}
    boost::asio::steady_timer timer;
    Stream* stream = nullptr;  // loop thread; null once closed
  };
  static void Tick(std::shared_ptr<State> st) {
    if (!st->stream) return;
    st->stream->Write(Bytes{0x2a});
    st->timer.expires_after(50ms);
    st->timer.async_wait([st](const boost::system::error_code& ec) {
      if (!ec) Tick(st);
    });
  }
  std::shared_ptr<State> state_;
};

class DripProtocol : public Protocol {
 public:
  explicit DripProtocol(boost::asio::io_context& io) : io_(io) {}
  std::unique_ptr<StreamHandler> Accept(const std::string&) override { return std::make_unique<DripStream>(io_); }

 private:
  boost::asio::io_context& io_;
};

TEST(QuicDeadlineTest, ADrippingPeerCostsTheTotalDeadlineNotForever) {
  identity::Identity server_id = identity::Identity::Generate();
  auto server = QuicClient::Start(server_id).value();
  server->RunOnLoop([&](Endpoint& ep) { ep.AddProtocol(kDripAlpn, std::make_shared<DripProtocol>(ep.io())); });
  const PeerAddr peer{server_id.node_id(), server->endpoint().local_endpoint()};
  auto client = QuicClient::Start(identity::Identity::Generate()).value();

  // Without a total deadline the reads never time out: after 1.5 s (three
  // times the deadline below) bytes are still coming.
  CallOptions open;
  open.read_timeout = 2s;
  {
    auto reader = client->OpenStream(peer, kDripAlpn, Bytes{1}, open);
    ASSERT_TRUE(reader) << reader.error().ToString();
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < 1500ms) {
      auto piece = (*reader)->Next();
      ASSERT_TRUE(piece) << piece.error().ToString();
      ASSERT_FALSE(piece->empty()) << "the drip finished";
    }
    EXPECT_GT((*reader)->bytes_read(), 10u);
  }

  CallOptions bounded = open;
  bounded.total_timeout = 500ms;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = client->Request(peer, kDripAlpn, Bytes{1}, bounded);
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kDeadlineExceeded) << r.error().ToString();
  EXPECT_NE(r.error().message().find("total deadline"), std::string::npos) << r.error().ToString();
  EXPECT_GE(took, 500ms);
  EXPECT_LT(took, 1500ms);
}

}  // namespace
}  // namespace tenzro::quic
