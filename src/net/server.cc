#include "net/server.h"

#include <algorithm>
#include <cctype>
#include <mutex>
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

  mutable std::mutex mu;                  // guards sessions (a session may die on any thread)
  std::unordered_set<Session*> sessions;  // live connections
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
  Session(tcp::socket socket, std::shared_ptr<HttpServer::State> state)
      : stream_(std::move(socket)), state_(std::move(state)) {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->sessions.insert(this);
  }
  ~Session() {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->sessions.erase(this);
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
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.socket().close(ec);
  }

  beast::tcp_stream stream_;
  std::shared_ptr<HttpServer::State> state_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string remote_;
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
    std::make_shared<Session>(std::move(socket), st)->Start();
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

}  // namespace tenzro::net
