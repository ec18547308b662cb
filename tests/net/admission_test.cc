// HttpServer admission on loopback with raw sockets, as a hostile client
// would talk: connection caps (global and per host) answer a canned 503
// without reading the request; `admit` refuses (429) or lowers the body
// limit (413) from the request head alone, before one body byte is sent;
// the in-flight body budget answers 503 to a second large upload while the
// first is held; every reservation is released; honest requests still work.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "core/thread_pool.h"
#include "net/client.h"
#include "net/json_http.h"
#include "net/server.h"

namespace tenzro::net {
namespace {

// A blocking loopback socket with a 5 s receive timeout.
class RawConn {
 public:
  explicit RawConn(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~RawConn() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool connected() const { return connected_; }
  bool Send(std::string_view s) { return ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size()); }
  // Reads until the peer closes, the timeout, or `until` appears.
  std::string Read(std::string_view until = {}) {
    std::string got;
    char buf[4096];
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
      if (!until.empty() && got.find(until) != std::string::npos) break;
    }
    return got;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

class AdmissionTest : public ::testing::Test {
 protected:
  void Start(ServerOptions opts) {
    router_.Add("POST", "/echo", [](const Request& q) { return Response::Text(200, std::to_string(q.body.size())); });
    router_.Add("GET", "/hello", [](const Request&) { return Response::Text(200, "hi"); });
    // Holds its request (and so its body reservation) until released.
    router_.AddAsync("POST", "/hold", [this](std::shared_ptr<const Request> q, Responder r) {
      held_.set_value();
      pool_.Submit([this, q, r] {
        release_.get_future().wait();
        r.Send(Response::Text(200, std::to_string(q->body.size())));
      });
    });
    opts.producer_pool = &pool_;
    server_ = std::make_unique<HttpServer>(ioc_, &router_, std::move(opts));
    ASSERT_TRUE(server_->Listen({"127.0.0.1", 0}));
    loop_ = std::thread([this] { ioc_.run(); });
  }
  void TearDown() override {
    if (!server_) return;
    boost::asio::post(ioc_, [this] { server_->Stop(); });
    loop_.join();
    pool_.Shutdown();
  }
  uint16_t port() const { return server_->endpoint().port; }
  std::string Get(const std::string& path) {
    HttpClient c(server_->endpoint());
    auto r = c.Send("GET", path);
    return r ? std::to_string(r->status) + " " + r->body : r.error().ToString();
  }

  boost::asio::io_context ioc_;
  ThreadPool pool_{2, "adm"};
  Router router_;
  std::unique_ptr<HttpServer> server_;
  std::thread loop_;
  std::promise<void> held_, release_;
};

TEST_F(AdmissionTest, ConnectionsPastThePerHostCapGetA503UnreadAndTheCapFrees) {
  ServerOptions o;
  o.max_connections_per_host = 3;
  Start(o);
  std::vector<std::unique_ptr<RawConn>> open;
  for (int i = 0; i < 3; ++i) {
    open.push_back(std::make_unique<RawConn>(port()));
    ASSERT_TRUE(open.back()->connected());
  }
  // The server counts a connection once it has accepted it.
  for (int i = 0; i < 500 && server_->active_connections() < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_EQ(server_->active_connections(), 3u);
  RawConn extra(port());
  ASSERT_TRUE(extra.connected());
  const std::string answer = extra.Read();  // sent unasked, then closed
  EXPECT_EQ(answer.rfind("HTTP/1.1 503", 0), 0u) << answer;
  EXPECT_NE(answer.find("Retry-After: 1"), std::string::npos) << answer;
  EXPECT_NE(answer.find("too many connections"), std::string::npos) << answer;
  EXPECT_EQ(server_->refused_connections(), 1u);
  EXPECT_EQ(server_->active_connections(), 3u);
  // The kept connections still work, and closing one frees a slot.
  ASSERT_TRUE(open[0]->Send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_NE(open[0]->Read("hi").find("200 OK"), std::string::npos);
  open.pop_back();
  for (int i = 0; i < 500 && server_->active_connections() > 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(Get("/hello"), "200 hi");
}

TEST_F(AdmissionTest, TheGlobalCapCountsEveryHost) {
  ServerOptions o;
  o.max_connections = 2;
  Start(o);
  RawConn a(port()), b(port());
  ASSERT_TRUE(a.connected() && b.connected());
  for (int i = 0; i < 500 && server_->active_connections() < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  RawConn c(port());
  EXPECT_EQ(c.Read().rfind("HTTP/1.1 503", 0), 0u);
}

TEST_F(AdmissionTest, AdmitRefusesFromTheHeadBeforeTheBodyIsSent) {
  ServerOptions o;
  std::atomic<int> asked{0};
  o.admit = [&](const RequestHead& h) {
    ++asked;
    Admission a;
    EXPECT_EQ(h.path, "/echo");
    EXPECT_TRUE(h.content_length.has_value());
    if (h.content_length && *h.content_length == 60'000'000) {
      Response r = ErrorResponse(Error::ResourceExhausted("slow down"), 429);
      r.headers.emplace_back("Retry-After", "1");
      a.refuse = std::move(r);
    }
    return a;
  };
  Start(o);
  RawConn c(port());
  ASSERT_TRUE(c.connected());
  // A 60 MB body is announced; not one byte of it is sent. The answer comes
  // anyway: the server did not wait for the body.
  ASSERT_TRUE(c.Send("POST /echo?x=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 60000000\r\n\r\n"));
  const std::string answer = c.Read("slow down");
  EXPECT_EQ(answer.rfind("HTTP/1.1 429", 0), 0u) << answer;
  EXPECT_NE(answer.find("Retry-After: 1"), std::string::npos);
  EXPECT_EQ(server_->refused_requests(), 1u);
  EXPECT_EQ(server_->inflight_body_bytes(), 0u);
  HttpClient ok(server_->endpoint());
  auto r = ok.Send("POST", "/echo", "12345", "text/plain");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->body, "5");
  EXPECT_EQ(asked.load(), 2);
}

TEST_F(AdmissionTest, ARouteLimitAnswers413FromTheDeclaredLengthAndBoundsChunkedBodies) {
  ServerOptions o;
  o.admit = [](const RequestHead&) {
    Admission a;
    a.max_body_bytes = 100;
    return a;
  };
  Start(o);
  {
    RawConn c(port());
    ASSERT_TRUE(c.Send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\n\r\n"));
    const std::string answer = c.Read("limit of 100");
    EXPECT_EQ(answer.rfind("HTTP/1.1 413", 0), 0u) << answer;
  }
  {
    // Chunked: refused once the chunks pass the limit.
    RawConn c(port());
    ASSERT_TRUE(c.Send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n50\r\n" +
                       std::string(0x50, 'a') + "\r\n50\r\n" + std::string(0x50, 'b') + "\r\n0\r\n\r\n"));
    const std::string answer = c.Read("}");
    EXPECT_EQ(answer.rfind("HTTP/1.1 413", 0), 0u) << answer;
  }
  HttpClient ok(server_->endpoint());
  auto r = ok.Send("POST", "/echo", std::string(100, 'x'), "text/plain");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->body, "100");
  // Released when the server's write completes, just after the client read it.
  for (int i = 0; i < 500 && server_->inflight_body_bytes() != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(server_->inflight_body_bytes(), 0u);
}

TEST_F(AdmissionTest, InFlightBodyBudgetRefusesASecondUploadWhileTheFirstIsHeld) {
  ServerOptions o;
  o.max_inflight_body_bytes = 1500;
  Start(o);
  std::thread first([&] {
    HttpClient c(server_->endpoint());
    auto r = c.Send("POST", "/hold", std::string(1000, 'h'), "text/plain");
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_EQ(r->body, "1000");
  });
  held_.get_future().wait();
  EXPECT_EQ(server_->inflight_body_bytes(), 1000u);
  {
    RawConn c(port());
    ASSERT_TRUE(c.Send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 600\r\n\r\n"));
    const std::string answer = c.Read("}");
    EXPECT_EQ(answer.rfind("HTTP/1.1 503", 0), 0u) << answer;
    EXPECT_NE(answer.find("Retry-After: 1"), std::string::npos) << answer;
  }
  // Within the budget, and bodiless requests, still go through meanwhile.
  HttpClient small(server_->endpoint());
  auto r = small.Send("POST", "/echo", std::string(400, 's'), "text/plain");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->body, "400");
  EXPECT_EQ(Get("/hello"), "200 hi");
  release_.set_value();
  first.join();
  for (int i = 0; i < 500 && server_->inflight_body_bytes() != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(server_->inflight_body_bytes(), 0u);
}

}  // namespace
}  // namespace tenzro::net
