#include "quic/quic_client.h"

#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

namespace tenzro::quic {

namespace asio = boost::asio;

// Shared between the reader thread and the loop-side handler.
struct StreamChannel {
  asio::io_context* io = nullptr;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Bytes> chunks;           // received, not yet read
  bool fin = false;                   // the peer finished
  std::optional<Error> error;         // the stream failed
  bool closed = false;                // the loop-side stream is gone
  bool abandoned = false;             // the reader gave up
  bool cancelled = false;             // CallOptions::cancel fired
  std::weak_ptr<Connection> conn;     // set once the stream is open
  int64_t stream_id = -1;

  // Loop thread: run `fn` on the stream if it still exists.
  void WithStream(std::function<void(Stream&)> fn) {
    asio::post(*io, [weak = conn, id = stream_id, fn = std::move(fn)] {
      if (auto c = weak.lock())
        if (Stream* s = c->FindStream(id)) fn(*s);
    });
  }
  // Returns flow-control credit for `n` bytes taken by the reader. A stream
  // that already closed (all received, our side acknowledged) still owes
  // the connection its credit, or the connection window leaks shut.
  void Consume(size_t n) {
    if (n == 0) return;
    asio::post(*io, [weak = conn, id = stream_id, n] {
      auto c = weak.lock();
      if (!c) return;
      if (Stream* s = c->FindStream(id)) s->Consume(n);
      else c->ExtendConnectionWindow(n);
    });
  }
};

namespace {

// Loop side: queues what arrives for the reader; consumption (flow control)
// happens when the reader takes it.
class ChannelHandler : public StreamHandler {
 public:
  static constexpr size_t kPiece = 64 * 1024;
  explicit ChannelHandler(std::shared_ptr<StreamChannel> ch) : ch_(std::move(ch)) {}
  size_t OnData(Stream&, ByteSpan data, bool fin) override {
    std::lock_guard<std::mutex> lock(ch_->mu);
    // A reader waits only on an empty queue: wake it for the first piece
    // (and at the end), not for every packet it will find queued anyway.
    const bool wake = ch_->chunks.empty() || fin;
    // Packets arrive ~1.4 KB at a time: gather them into 64 KiB pieces.
    if (!data.empty()) {
      if (ch_->chunks.empty() || ch_->chunks.back().size() + data.size() > kPiece) {
        ch_->chunks.emplace_back();
        ch_->chunks.back().reserve(std::max(kPiece, data.size()));
      }
      ch_->chunks.back().insert(ch_->chunks.back().end(), data.begin(), data.end());
    }
    if (fin) ch_->fin = true;
    if (wake) ch_->cv.notify_all();
    return 0;
  }
  void OnClose(Stream&, const std::optional<Error>& error) override {
    std::lock_guard<std::mutex> lock(ch_->mu);
    ch_->closed = true;
    if (error && !ch_->fin && !ch_->error) ch_->error = *error;
    ch_->cv.notify_all();
  }

 private:
  std::shared_ptr<StreamChannel> ch_;
};

bool OnLoopThread(asio::io_context& io) { return io.get_executor().running_in_this_thread(); }

}  // namespace

StreamReader::StreamReader(std::shared_ptr<StreamChannel> ch, std::chrono::milliseconds read_timeout,
                           std::chrono::steady_clock::time_point deadline)
    : ch_(std::move(ch)), timeout_(read_timeout), deadline_(deadline) {}

StreamReader::~StreamReader() {
  std::lock_guard<std::mutex> lock(ch_->mu);
  ch_->abandoned = true;
  if (!done_ && !ch_->closed) ch_->WithStream([](Stream& s) { s.Reset(kStreamCancelled); });
  size_t unread = 0;
  for (const Bytes& b : ch_->chunks) unread += b.size();
  ch_->chunks.clear();
  ch_->Consume(unread);
}

Result<Bytes> StreamReader::Next() {
  std::unique_lock<std::mutex> lock(ch_->mu);
  const auto now = std::chrono::steady_clock::now();
  const bool total_first = deadline_ - now < timeout_;
  const auto until = total_first ? deadline_ : now + timeout_;
  bool ready = ch_->cv.wait_until(lock, until, [&] { return !ch_->chunks.empty() || ch_->fin || ch_->error || ch_->cancelled; });
  if (!ready && total_first)
    return Error::DeadlineExceeded("the QUIC call ran past its total deadline (after {} bytes)", read_);
  if (!ready)
    return Error::DeadlineExceeded("no data from the QUIC peer for {} ms (after {} bytes)", timeout_.count(), read_);
  if (ch_->cancelled) return Error::Unavailable("QUIC call cancelled (after {} bytes)", read_);
  if (!ch_->chunks.empty()) {
    // Hand back everything queued (up to 1 MiB) in one piece: one wake-up
    // and one flow-control update per batch of packets.
    Bytes b = std::move(ch_->chunks.front());
    ch_->chunks.pop_front();
    while (!ch_->chunks.empty() && b.size() + ch_->chunks.front().size() <= (1u << 20)) {
      b.insert(b.end(), ch_->chunks.front().begin(), ch_->chunks.front().end());
      ch_->chunks.pop_front();
    }
    read_ += b.size();
    ch_->Consume(b.size());
    return b;
  }
  if (ch_->error) return *ch_->error;
  done_ = true;
  return Bytes();
}

Result<std::unique_ptr<QuicClient>> QuicClient::Start(const identity::Identity& identity, const net::Endpoint& bind,
                                                      EndpointOptions options) {
  std::unique_ptr<QuicClient> c(new QuicClient());
  c->own_io_ = std::make_unique<asio::io_context>(1);
  TENZRO_TRY(c->own_endpoint_, Endpoint::Create(*c->own_io_, identity, bind, options));
  c->endpoint_ = c->own_endpoint_.get();
  asio::io_context* io = c->own_io_.get();
  c->thread_ = std::thread([io] {
    auto guard = asio::make_work_guard(*io);
    io->run();
  });
  return c;
}

QuicClient::QuicClient(Endpoint& endpoint) : endpoint_(&endpoint) {}

QuicClient::~QuicClient() {
  if (!own_io_) return;
  // Close connections (CONNECTION_CLOSE goes out at once), then stop the loop.
  std::promise<void> done;
  asio::post(*own_io_, [this, &done] {
    own_endpoint_->Shutdown();
    done.set_value();
  });
  done.get_future().wait_for(std::chrono::seconds(5));
  own_io_->stop();
  if (thread_.joinable()) thread_.join();
  own_endpoint_.reset();
}

void QuicClient::RunOnLoop(const std::function<void(Endpoint&)>& fn) {
  if (OnLoopThread(endpoint_->io())) return fn(*endpoint_);
  std::promise<void> done;
  asio::post(endpoint_->io(), [&] {
    fn(*endpoint_);
    done.set_value();
  });
  done.get_future().wait();
}

Result<std::unique_ptr<StreamReader>> QuicClient::OpenStream(const PeerAddr& peer, const std::string& alpn,
                                                             Bytes request, const CallOptions& options) {
  asio::io_context& io = endpoint_->io();
  if (OnLoopThread(io)) return Error::Internal("QuicClient::OpenStream called on the endpoint's loop thread");
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = options.total_timeout.count() > 0 ? start + options.total_timeout
                                                          : std::chrono::steady_clock::time_point::max();
  auto ch = std::make_shared<StreamChannel>();
  ch->io = &io;
  auto opened = std::make_shared<std::promise<Result<void>>>();
  auto fut = opened->get_future();
  Endpoint* ep = endpoint_;
  asio::post(io, [ep, peer, alpn, ch, opened, req = std::move(request)]() mutable {
    ep->Connect(peer.node_id, peer.addr, alpn,
                [ch, opened, req = std::move(req)](Result<std::shared_ptr<Connection>> conn) mutable {
                  if (!conn) return opened->set_value(conn.error());
                  std::weak_ptr<Connection> weak = *conn;
                  (*conn)->OpenStream(std::make_unique<ChannelHandler>(ch),
                                      [ch, opened, weak, req = std::move(req)](Result<Stream*> s) mutable {
                                        if (!s) return opened->set_value(s.error());
                                        {
                                          std::lock_guard<std::mutex> lock(ch->mu);
                                          ch->conn = weak;
                                          ch->stream_id = (*s)->id();
                                          if (ch->abandoned) return (*s)->Reset(kStreamCancelled);
                                        }
                                        (*s)->Write(std::move(req));
                                        (*s)->Finish();
                                        opened->set_value(Ok());
                                      });
                });
  });
  const auto connect_until = deadline - start < options.connect_timeout ? deadline : start + options.connect_timeout;
  if (options.cancel) {
    // A cancelled call wakes its reader (below) at once; while connecting it
    // is checked every few milliseconds.
    options.cancel->OnCancel([ch] {
      std::lock_guard<std::mutex> lock(ch->mu);
      ch->cancelled = true;
      ch->cv.notify_all();
    });
    while (fut.wait_for(std::chrono::milliseconds(2)) != std::future_status::ready &&
           std::chrono::steady_clock::now() < connect_until && !options.cancel->cancelled()) {
    }
    if (options.cancel->cancelled() && fut.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      std::lock_guard<std::mutex> lock(ch->mu);
      ch->abandoned = true;
      if (ch->stream_id >= 0) ch->WithStream([](Stream& s) { s.Reset(kStreamCancelled); });
      return Error::Unavailable("QUIC call to {} cancelled", peer.ToString());
    }
  }
  if (fut.wait_until(connect_until) != std::future_status::ready) {
    std::lock_guard<std::mutex> lock(ch->mu);
    ch->abandoned = true;
    if (ch->stream_id >= 0) ch->WithStream([](Stream& s) { s.Reset(kStreamCancelled); });
    return Error::DeadlineExceeded(
        "QUIC connect to {} ({}) timed out after {} ms", peer.ToString(), alpn,
        std::chrono::duration_cast<std::chrono::milliseconds>(connect_until - start).count());
  }
  Result<void> r = fut.get();
  if (!r) return r.error().WithContext(fmt::format("QUIC {} to {}", alpn, peer.ToString()));
  return std::make_unique<StreamReader>(ch, options.read_timeout, deadline);
}

Result<Bytes> QuicClient::Request(const PeerAddr& peer, const std::string& alpn, ByteSpan request,
                                  const CallOptions& options) {
  TENZRO_TRY(auto reader, OpenStream(peer, alpn, Bytes(request.begin(), request.end()), options));
  Bytes out;
  for (;;) {
    auto piece = reader->Next();
    if (!piece) return piece.error().WithContext(fmt::format("QUIC {} from {}", alpn, peer.ToString()));
    if (piece->empty()) break;
    if (out.size() + piece->size() > options.max_response_bytes)
      return Error::ResourceExhausted("QUIC {} response from {} exceeds {} bytes", alpn, peer.ToString(),
                                      options.max_response_bytes);
    if (out.empty()) out = std::move(*piece);
    else out.insert(out.end(), piece->begin(), piece->end());
  }
  return out;
}

}  // namespace tenzro::quic
