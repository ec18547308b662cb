#include "net/client.h"

#include <cctype>
#include <limits>
#include <strings.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace tenzro::net {

namespace {
constexpr size_t kReadBufferBytes = 64 * 1024;
}  // namespace

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

std::optional<std::string_view> ClientResponse::Header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (k.size() == name.size() && strncasecmp(k.data(), name.data(), k.size()) == 0) return v;
  return std::nullopt;
}

struct HttpClient::Impl {
  Endpoint server;
  ClientOptions opts;
  std::string token;
  asio::io_context ioc;
  std::optional<beast::tcp_stream> stream;
  beast::flat_buffer buffer;
  bool connected = false;

  // Runs the private io_context until the started operation completes.
  void Run() {
    ioc.restart();
    ioc.run();
  }

  void Disconnect() {
    if (stream) {
      beast::error_code ec;
      stream->socket().shutdown(tcp::socket::shutdown_both, ec);
      stream->socket().close(ec);
    }
    stream.reset();
    buffer.clear();
    connected = false;
  }

  Error NetError(const char* what, beast::error_code ec) {
    if (ec == beast::error::timeout)
      return Error::DeadlineExceeded("{} {}: timed out", what, server.Url());
    return Error::Unavailable("{} {}: {}", what, server.Url(), ec.message());
  }

  Result<void> Connect() {
    Disconnect();
    beast::error_code ec;
    tcp::resolver resolver(ioc);
    auto results = resolver.resolve(server.host == "localhost" ? "127.0.0.1" : server.host,
                                    std::to_string(server.port), ec);
    if (ec) return Error::Unavailable("cannot resolve {}: {}", server.Url(), ec.message());
    stream.emplace(ioc);
    stream->expires_after(opts.connect_timeout);
    stream->async_connect(results, [&](beast::error_code e, const tcp::endpoint&) { ec = e; });
    Run();
    if (ec) {
      Disconnect();
      return NetError("cannot connect to", ec);
    }
    connected = true;
    return Ok();
  }

  // One attempt. `reused` tells whether a failure before any response byte
  // may be retried on a fresh connection (*retry set).
  Result<ClientResponse> Attempt(const http::request<http::string_body>& req, const BodySink* sink,
                                 uint64_t max_stream, bool reused, bool* retry) {
    *retry = false;
    Clock::time_point deadline = Clock::now() + opts.timeout;
    auto arm = [&] {
      if (sink) stream->expires_after(opts.timeout);
      else stream->expires_at(deadline);
    };
    beast::error_code ec;
    arm();
    http::async_write(*stream, req, [&](beast::error_code e, size_t) { ec = e; });
    Run();
    if (ec) {
      Disconnect();
      *retry = reused && ec != beast::error::timeout;
      return NetError("cannot send request to", ec);
    }
    http::response_parser<http::buffer_body> parser;
    // Beast sizes each socket read by the buffer's free capacity (min 512
    // bytes): without room, a large body arrives in 512-byte syscalls.
    if (buffer.capacity() < kReadBufferBytes) buffer.reserve(kReadBufferBytes);
    parser.header_limit(opts.max_header_bytes);
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    arm();
    http::async_read_header(*stream, buffer, parser, [&](beast::error_code e, size_t) { ec = e; });
    Run();
    if (ec) {
      Disconnect();
      bool closed = ec == http::error::end_of_stream || ec == asio::error::connection_reset ||
                    ec == asio::error::eof;
      *retry = reused && closed;
      if (ec == http::error::header_limit)
        return Error::ResourceExhausted("response header from {} exceeds {} bytes", server.Url(), opts.max_header_bytes);
      if (ec.category() == http::make_error_code(http::error::end_of_stream).category() && !closed)
        return Error::Corruption("malformed HTTP response from {}: {}", server.Url(), ec.message());
      return NetError("no response from", ec);
    }
    ClientResponse out;
    const auto& h = parser.get();
    out.status = static_cast<int>(h.result_int());
    for (const auto& f : h) {
      std::string name(f.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      out.headers.emplace_back(std::move(name), std::string(f.value()));
    }
    out.content_type = std::string(h[http::field::content_type]);
    bool stream_body = sink && out.ok();
    uint64_t limit = stream_body ? max_stream : opts.max_response_bytes;
    uint64_t total = 0;
    char buf[64 * 1024];
    while (!parser.is_done()) {
      parser.get().body().data = buf;
      parser.get().body().size = sizeof buf;
      arm();
      http::async_read(*stream, buffer, parser, [&](beast::error_code e, size_t) { ec = e; });
      Run();
      if (ec == http::error::need_buffer) ec = {};
      if (ec) {
        Disconnect();
        if (ec.category() == http::make_error_code(http::error::end_of_stream).category() &&
            ec != http::error::end_of_stream && ec != http::error::partial_message)
          return Error::Corruption("malformed HTTP response body from {}: {}", server.Url(), ec.message());
        return NetError("response body truncated from", ec);
      }
      size_t n = sizeof buf - parser.get().body().size;
      if (n == 0) continue;
      total += n;
      if (total > limit) {
        Disconnect();
        return Error::ResourceExhausted("response body from {} exceeds the limit of {} bytes", server.Url(), limit);
      }
      if (stream_body) {
        Result<void> r = (*sink)(ByteSpan(reinterpret_cast<const uint8_t*>(buf), n));
        if (!r) {
          Disconnect();
          return r.error();
        }
      } else {
        out.body.append(buf, n);
      }
    }
    if (!parser.get().keep_alive()) Disconnect();
    return out;
  }

  Result<ClientResponse> Exchange(std::string_view method, std::string_view target, std::string_view body,
                                  std::string_view content_type, const Headers& extra, const BodySink* sink,
                                  uint64_t max_stream) {
    http::verb verb = http::string_to_verb(beast::string_view(method.data(), method.size()));
    if (verb == http::verb::unknown) return Error::InvalidArgument("unknown HTTP method '{}'", method);
    http::request<http::string_body> req{verb, std::string(target), 11};
    req.set(http::field::host, server.HostPort());
    req.set(http::field::user_agent, "tenzro");
    if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
    for (const auto& [k, v] : extra) req.set(k, v);
    if (!body.empty()) {
      req.set(http::field::content_type, beast::string_view(content_type.data(), content_type.size()));
      req.body() = std::string(body);
    }
    req.keep_alive(true);
    req.prepare_payload();
    for (int attempt = 0; attempt < 2; ++attempt) {
      bool reused = connected;
      if (!connected) TENZRO_CHECK_OK(Connect());
      bool retry = false;
      Result<ClientResponse> r = Attempt(req, sink, max_stream, reused, &retry);
      if (r || !retry) return r;
    }
    return Error::Unavailable("{} closed the connection twice", server.Url());
  }
};

HttpClient::HttpClient(Endpoint server, ClientOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->server = std::move(server);
  impl_->opts = options;
}
HttpClient::~HttpClient() {
  if (impl_) impl_->Disconnect();
}
HttpClient::HttpClient(HttpClient&&) noexcept = default;
HttpClient& HttpClient::operator=(HttpClient&&) noexcept = default;

void HttpClient::SetBearerToken(std::string token) { impl_->token = std::move(token); }
const Endpoint& HttpClient::server() const { return impl_->server; }
void HttpClient::Abort() {
  // Posting to the private io_context is thread-safe; the handler runs on
  // the owning thread inside its Run(), where the socket lives.
  Impl* impl = impl_.get();
  asio::post(impl->ioc, [impl] {
    if (!impl->stream) return;
    beast::error_code ec;
    impl->stream->socket().cancel(ec);
    impl->stream->socket().close(ec);
  });
}

void HttpClient::Close() { impl_->Disconnect(); }

Result<ClientResponse> HttpClient::Send(std::string_view method, std::string_view target, std::string_view body,
                                        std::string_view content_type, const Headers& extra) {
  return impl_->Exchange(method, target, body, content_type, extra, nullptr, 0);
}

Result<ClientResponse> HttpClient::SendStreaming(std::string_view method, std::string_view target,
                                                 std::string_view body, std::string_view content_type,
                                                 const Headers& extra, const BodySink& sink,
                                                 uint64_t max_stream_bytes) {
  return impl_->Exchange(method, target, body, content_type, extra, &sink, max_stream_bytes);
}

}  // namespace tenzro::net
