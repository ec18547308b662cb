#include "net/server.h"

#include <algorithm>
#include <cctype>
#include <atomic>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <spdlog/spdlog.h>

#include "net/json_http.h"

namespace tenzro::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

class Session;

struct HttpServer::State {
  State(asio::io_context& io, const Router* r, ServerOptions o)
      : ioc(io), acceptor(io), router(r), options(std::move(o)) {}
  asio::io_context& ioc;
  tcp::acceptor acceptor;
  const Router* router;
  ServerOptions options;
  Endpoint bound;
  bool stopping = false;  // loop thread only

  mutable std::mutex mu;                  // guards sessions and per_host (a session may die on any thread)
  std::unordered_set<Session*> sessions;  // live connections
  std::unordered_map<std::string, size_t> per_host;  // open connections per IP address
  std::atomic<uint64_t> inflight_body{0};
  std::atomic<uint64_t> refused_connections{0};
  std::atomic<uint64_t> refused_requests{0};
};

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

// One connection. Lives on the loop thread; kept alive by its pending
// operations and by an outstanding Responder.
class Session : public std::enable_shared_from_this<Session> {
 public:
  // REQUIRES: the caller counted this connection in state->per_host[host]
  // (under state->mu); the session uncounts it when it dies.
  Session(tcp::socket socket, std::shared_ptr<HttpServer::State> state, std::string host)
      : stream_(std::move(socket)), state_(std::move(state)), host_(std::move(host)) {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->sessions.insert(this);
  }
  ~Session() {
    ReleaseBody();
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->sessions.erase(this);
    auto it = state_->per_host.find(host_);
    if (it != state_->per_host.end() && --it->second == 0) state_->per_host.erase(it);
  }

  void Start() {
    beast::error_code ec;
    auto rep = stream_.socket().remote_endpoint(ec);
    if (!ec) remote_ = rep.address().to_string() + ":" + std::to_string(rep.port());
    DoReadHeader();
  }

  // Loop thread. Closes now if idle; a busy session closes after its response.
  void StopIfIdle() {
    if (!busy_) Close();
  }

 private:
  const ServerOptions& opts() const { return state_->options; }

  void DoReadHeader() {
    parser_.emplace();
    parser_->body_limit(opts().max_body_bytes);
    parser_->header_limit(opts().max_header_bytes);
    stream_.expires_after(opts().read_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (ec) return OnReadError(ec);
    busy_ = true;
    if (std::optional<Response> refused = Admit()) {
      state_->refused_requests.fetch_add(1, std::memory_order_relaxed);
      keep_alive_ = false;
      linger_ = true;
      return WriteResponse(std::move(*refused));
    }
    auto expect = parser_->get()[http::field::expect];
    if (beast::iequals(expect, "100-continue")) {
      static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      asio::async_write(stream_, asio::buffer(kContinue),
                        [self = shared_from_this()](beast::error_code ec, size_t) {
                          if (ec) return self->Close();
                          self->DoReadBody();
                        });
      return;
    }
    DoReadBody();
  }

  void DoReadBody() {
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRequest(ec); });
  }

  // Admission before the body (see server.h): nullopt admits the request and
  // reserves its body bytes; otherwise the answer to send instead.
  std::optional<Response> Admit() {
    const auto& head = parser_->get();
    const std::string_view target(head.target().data(), head.target().size());
    RequestHead rh;
    rh.method = std::string_view(head.method_string().data(), head.method_string().size());
    rh.path = target.substr(0, target.find('?'));
    rh.remote = remote_;
    if (parser_->content_length()) rh.content_length = *parser_->content_length();
    uint64_t limit = opts().max_body_bytes;
    if (opts().admit) {
      Admission a = opts().admit(rh);
      if (a.refuse) return std::move(a.refuse);
      if (a.max_body_bytes > 0) limit = std::min(limit, a.max_body_bytes);
    }
    if (rh.content_length && *rh.content_length > limit)
      return ErrorResponse(Error::ResourceExhausted("request body of {} bytes exceeds this route's limit of {} bytes",
                                                    *rh.content_length, limit),
                           413);
    parser_->body_limit(limit);
    const bool has_body = rh.content_length ? *rh.content_length > 0 : parser_->chunked();
    const uint64_t want = !has_body ? 0 : rh.content_length ? *rh.content_length : limit;
    if (want == 0) return std::nullopt;
    const uint64_t before = state_->inflight_body.fetch_add(want, std::memory_order_relaxed);
    if (before + want > opts().max_inflight_body_bytes) {
      state_->inflight_body.fetch_sub(want, std::memory_order_relaxed);
      Response r = ErrorResponse(
          Error::Unavailable("{}: {} bytes of request bodies are in flight (cap {}); retry later", opts().name, before,
                             opts().max_inflight_body_bytes),
          503);
      r.headers.emplace_back("Retry-After", "1");
      return r;
    }
    reserved_ = want;
    return std::nullopt;
  }

  void ReleaseBody() {
    if (reserved_ == 0) return;
    state_->inflight_body.fetch_sub(reserved_, std::memory_order_relaxed);
    reserved_ = 0;
  }

  void OnReadError(beast::error_code ec) {
    if (ec == http::error::body_limit) {
      keep_alive_ = false;
      linger_ = true;
      return WriteResponse(ErrorResponse(
          Error::ResourceExhausted("request body exceeds the limit of {} bytes", opts().max_body_bytes), 413));
    }
    if (ec == http::error::header_limit) {
      keep_alive_ = false;
      return WriteResponse(ErrorResponse(
          Error::ResourceExhausted("request header exceeds the limit of {} bytes", opts().max_header_bytes), 431));
    }
    if (ec.category() == http::make_error_code(http::error::end_of_stream).category() && ec != http::error::end_of_stream &&
        ec != http::error::partial_message) {
      keep_alive_ = false;
      return WriteResponse(ErrorResponse(Error::InvalidArgument("malformed HTTP request: {}", ec.message())));
    }
    // end of stream, timeout, reset, or Stop(): just close.
    if (ec != http::error::end_of_stream && ec != beast::error::timeout && ec != asio::error::operation_aborted)
      spdlog::debug("{}: connection {} read: {}", opts().name, remote_, ec.message());
    Close();
  }

  void OnRequest(beast::error_code ec) {
    if (ec) return OnReadError(ec);
    stream_.expires_never();
    http::request<http::string_body> msg = parser_->release();
    parser_.reset();
    keep_alive_ = msg.keep_alive();
    auto req = std::make_shared<Request>();
    req->method = std::string(msg.method_string());
    req->target = std::string(msg.target());
    size_t q = req->target.find('?');
    req->path = req->target.substr(0, q);
    if (q != std::string::npos) req->query = req->target.substr(q + 1);
    for (const auto& f : msg) req->headers.emplace_back(Lower(std::string(f.name_string())), std::string(f.value()));
    req->body = std::move(msg.body());
    req->remote = remote_;
    spdlog::debug("{}: {} {} from {} ({} body bytes)", opts().name, req->method, req->target, remote_, req->body.size());

    // Delivery posts to the loop; the session reference moves into the posted
    // handler so the session is released on the loop thread.
    Responder responder([self = shared_from_this()](Response r) mutable {
      auto ex = self->stream_.get_executor();
      asio::post(ex, [s = std::move(self), r = std::move(r)]() mutable { s->WriteResponse(std::move(r)); });
    });
    if (opts().filter) {
      if (std::optional<Response> early = opts().filter(*req)) return responder.Send(std::move(*early));
    }
    state_->router->Dispatch(std::move(req), std::move(responder));
  }

  template <typename Msg>
  void SetCommon(Msg& m, const Response& r) {
    m.version(11);
    m.result(static_cast<unsigned>(r.status));
    m.set(http::field::server, "tenzro");
    if (!r.content_type.empty()) m.set(http::field::content_type, r.content_type);
    for (const auto& [k, v] : r.headers) m.set(k, v);
    m.keep_alive(keep_alive_);
  }

  void WriteResponse(Response r) {
    busy_ = true;
    if (state_->stopping) keep_alive_ = false;
    if (r.producer) return StartStream(std::move(r));
    auto msg = std::make_shared<http::response<http::string_body>>();
    SetCommon(*msg, r);
    msg->body() = std::move(r.body);
    msg->prepare_payload();
    stream_.expires_after(opts().write_timeout);
    http::async_write(stream_, *msg, [self = shared_from_this(), msg](beast::error_code ec, size_t) {
      self->OnResponseDone(ec);
    });
  }

  void OnResponseDone(beast::error_code ec) {
    busy_ = false;
    ReleaseBody();
    stream_.expires_never();
    if (!ec && linger_) return LingerClose();
    if (ec || !keep_alive_ || state_->stopping) return Close();
    DoReadHeader();
  }

  // ---- streamed bodies ----
  void StartStream(Response r) {
    producer_ = std::move(r.producer);
    stream_total_ = r.content_length;
    stream_sent_ = 0;
    chunk_.resize(std::max<size_t>(opts().stream_chunk_bytes, 1024));
    header_ = std::make_unique<http::response<http::empty_body>>();
    SetCommon(*header_, r);
    if (stream_total_) header_->content_length(*stream_total_);
    else header_->chunked(true);
    serializer_ = std::make_unique<http::response_serializer<http::empty_body>>(*header_);
    stream_.expires_after(opts().write_timeout);
    http::async_write_header(stream_, *serializer_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->Close();
      self->ProduceNext();
    });
  }

  static Result<size_t> CallProducer(const BodyProducer& p, std::span<uint8_t> buf) {
    try {
      return p(buf);
    } catch (const std::exception& e) {
      return Error::Internal("body producer threw: {}", e.what());
    }
  }

  void ProduceNext() {
    ThreadPool* pool = opts().producer_pool;
    if (!pool) return OnProduced(CallProducer(producer_, chunk_));
    auto self = shared_from_this();
    auto ex = stream_.get_executor();
    bool queued = pool->Submit([self, ex]() mutable {
      Result<size_t> n = CallProducer(self->producer_, self->chunk_);
      asio::post(ex, [s = std::move(self), n = std::move(n)]() mutable { s->OnProduced(std::move(n)); });
    });
    if (!queued) Abort("worker pool is shut down");
  }

  void OnProduced(Result<size_t> n) {
    if (!n) return Abort(n.error().ToString());
    size_t got = std::min(*n, chunk_.size());
    if (stream_total_ && stream_sent_ + got > *stream_total_) return Abort("producer overran Content-Length");
    stream_.expires_after(opts().write_timeout);
    auto self = shared_from_this();
    if (got == 0) {
      if (stream_total_ && stream_sent_ != *stream_total_) return Abort("producer ended before Content-Length");
      FinishStream();
      if (stream_total_) return OnResponseDone({});
      asio::async_write(stream_, http::make_chunk_last(),
                        [self](beast::error_code ec, size_t) { self->OnResponseDone(ec); });
      return;
    }
    auto done = [self, got](beast::error_code ec, size_t) {
      if (ec) return self->Close();
      self->stream_sent_ += got;
      self->ProduceNext();
    };
    if (stream_total_) asio::async_write(stream_, asio::buffer(chunk_.data(), got), done);
    else asio::async_write(stream_, http::make_chunk(asio::buffer(chunk_.data(), got)), done);
  }

  void FinishStream() {
    producer_ = nullptr;
    serializer_.reset();
    header_.reset();
    chunk_.clear();
    chunk_.shrink_to_fit();
  }

  void Abort(const std::string& why) {
    spdlog::warn("{}: aborting streamed response to {} after {} bytes: {}", opts().name, remote_, stream_sent_, why);
    FinishStream();
    Close();
  }

  // After answering a request whose body we refused: stop sending, then
  // read and discard what the client still sends (bounded in bytes and time)
  // so that closing does not reset the connection before the client has
  // read our answer.
  void LingerClose() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return Close();
    linger_left_ = 8u << 20;
    stream_.expires_after(std::chrono::seconds(2));
    Drain();
  }

  void Drain() {
    drain_buf_.resize(64 * 1024);
    stream_.async_read_some(asio::buffer(drain_buf_), [self = shared_from_this()](beast::error_code ec, size_t n) {
      if (ec || n >= self->linger_left_) return self->Close();
      self->linger_left_ -= n;
      self->Drain();
    });
  }

  void Close() {
    busy_ = false;
    ReleaseBody();
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.socket().close(ec);
  }

  beast::tcp_stream stream_;
  std::shared_ptr<HttpServer::State> state_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string remote_;
  std::string host_;       // remote IP address (the per-host connection count's key)
  uint64_t reserved_ = 0;  // body bytes reserved in state_->inflight_body
  bool keep_alive_ = true;
  bool busy_ = false;  // between a complete request and its response being written
  bool linger_ = false;  // drain before closing (body refused)
  size_t linger_left_ = 0;
  std::vector<uint8_t> drain_buf_;

  BodyProducer producer_;
  std::optional<uint64_t> stream_total_;
  uint64_t stream_sent_ = 0;
  std::vector<uint8_t> chunk_;
  std::unique_ptr<http::response<http::empty_body>> header_;
  std::unique_ptr<http::response_serializer<http::empty_body>> serializer_;
};

namespace {

// A connection past the caps: a canned 503, then close after the peer has
// had a moment (at most 1 s, 64 KiB read and discarded) to read it, so that
// unread request bytes do not turn the close into a reset that loses the
// answer. Costs a socket for at most a second, never a Session.
void RefuseConnection(const std::shared_ptr<HttpServer::State>& st, tcp::socket socket) {
  struct Refusal {
    explicit Refusal(tcp::socket s) : sock(std::move(s)), timer(sock.get_executor()) {}
    tcp::socket sock;
    asio::steady_timer timer;
    std::string text;
    std::array<char, 4096> sink;
    size_t drained = 0;
    void Drain(std::shared_ptr<Refusal> self) {
      sock.async_read_some(asio::buffer(sink), [self](beast::error_code ec, size_t n) {
        self->drained += n;
        if (ec || self->drained > (64u << 10)) {
          beast::error_code ignored;
          self->timer.cancel();
          self->sock.close(ignored);
          return;
        }
        self->Drain(self);
      });
    }
  };
  auto r = std::make_shared<Refusal>(std::move(socket));
  const std::string body =
      ErrorResponse(Error::Unavailable("{}: too many connections; retry later", st->options.name), 503).body;
  r->text = fmt::format(
      "HTTP/1.1 503 Service Unavailable\r\nServer: tenzro\r\nContent-Type: application/json\r\n"
      "Retry-After: 1\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{}",
      body.size(), body);
  asio::async_write(r->sock, asio::buffer(r->text), [r](beast::error_code ec, size_t) {
    beast::error_code ignored;
    if (ec) {
      r->sock.close(ignored);
      return;
    }
    r->sock.shutdown(tcp::socket::shutdown_send, ignored);
    r->timer.expires_after(std::chrono::seconds(1));
    r->timer.async_wait([r](beast::error_code) {
      beast::error_code ignored2;
      r->sock.close(ignored2);
    });
    r->Drain(r);
  });
}

void DoAccept(std::shared_ptr<HttpServer::State> st) {
  st->acceptor.async_accept([st](beast::error_code ec, tcp::socket socket) {
    if (st->stopping || ec == asio::error::operation_aborted) return;
    if (ec) {
      // e.g. EMFILE: back off briefly instead of spinning.
      spdlog::warn("{}: accept failed: {}", st->options.name, ec.message());
      auto timer = std::make_shared<asio::steady_timer>(st->ioc, std::chrono::milliseconds(100));
      timer->async_wait([st, timer](beast::error_code) {
        if (!st->stopping) DoAccept(st);
      });
      return;
    }
    beast::error_code rec;
    const tcp::endpoint peer = socket.remote_endpoint(rec);
    std::string host = rec ? std::string() : peer.address().to_string();
    bool admitted = false;
    {
      std::lock_guard<std::mutex> lock(st->mu);
      size_t& n = st->per_host[host];
      if (st->sessions.size() < st->options.max_connections && n < st->options.max_connections_per_host) {
        ++n;
        admitted = true;
      } else if (n == 0) {
        st->per_host.erase(host);
      }
    }
    if (admitted) {
      std::make_shared<Session>(std::move(socket), st, std::move(host))->Start();
    } else {
      st->refused_connections.fetch_add(1, std::memory_order_relaxed);
      RefuseConnection(st, std::move(socket));
    }
    DoAccept(st);
  });
}

}  // namespace

HttpServer::HttpServer(asio::io_context& ioc, const Router* router, ServerOptions options)
    : state_(std::make_shared<State>(ioc, router, std::move(options))) {}

HttpServer::~HttpServer() {
  beast::error_code ec;
  state_->stopping = true;
  state_->acceptor.close(ec);
}

Result<void> HttpServer::Listen(const Endpoint& ep) {
  beast::error_code ec;
  asio::ip::address addr;
  if (ep.host == "localhost") {
    addr = asio::ip::make_address("127.0.0.1");
  } else {
    addr = asio::ip::make_address(ep.host, ec);
    if (ec) {
      tcp::resolver resolver(state_->ioc);
      auto results = resolver.resolve(ep.host, std::to_string(ep.port), ec);
      if (ec || results.empty())
        return Error::InvalidArgument("cannot resolve listen address '{}': {}", ep.host, ec.message());
      addr = results.begin()->endpoint().address();
    }
  }
  tcp::endpoint endpoint(addr, ep.port);
  tcp::acceptor& a = state_->acceptor;
  auto fail = [&](const char* what) {
    return Error::Io("{}: cannot {} {}: {}", state_->options.name, what, ep.HostPort(), ec.message());
  };
  a.open(endpoint.protocol(), ec);
  if (ec) return fail("open socket for");
  a.set_option(asio::socket_base::reuse_address(true), ec);
  a.bind(endpoint, ec);
  if (ec) return fail("bind");
  a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return fail("listen on");
  tcp::endpoint local = a.local_endpoint(ec);
  state_->bound = Endpoint{local.address().to_string(), local.port()};
  DoAccept(state_);
  return Ok();
}

Endpoint HttpServer::endpoint() const { return state_->bound; }

void HttpServer::Stop() {
  if (state_->stopping) return;
  state_->stopping = true;
  beast::error_code ec;
  state_->acceptor.close(ec);
  std::vector<std::shared_ptr<Session>> live;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    for (Session* s : state_->sessions) {
      // A session whose last reference is being dropped elsewhere is skipped.
      if (auto sp = s->weak_from_this().lock()) live.push_back(std::move(sp));
    }
  }
  for (auto& s : live) s->StopIfIdle();
}

size_t HttpServer::active_connections() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->sessions.size();
}

uint64_t HttpServer::inflight_body_bytes() const { return state_->inflight_body.load(std::memory_order_relaxed); }
uint64_t HttpServer::refused_connections() const {
  return state_->refused_connections.load(std::memory_order_relaxed);
}
uint64_t HttpServer::refused_requests() const { return state_->refused_requests.load(std::memory_order_relaxed); }

}  // namespace tenzro::net
