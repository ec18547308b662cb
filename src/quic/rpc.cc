#include "quic/rpc.h"

#include <atomic>
#include <optional>

#include <boost/asio/post.hpp>

#include "quic/connection.h"

namespace tenzro::quic {

namespace asio = boost::asio;

namespace {

constexpr uint8_t kMaxErrorCode = static_cast<uint8_t>(ErrorCode::kInternal);

// Sends the reply at most once; a dropped, unanswered reply sends kInternal.
// Holds the request's charge in the endpoint's budget until then.
struct ReplyState {
  asio::io_context* io;
  std::weak_ptr<Connection> conn;
  int64_t stream_id;
  RequestCharge charge;  // released by the first Send (only that one touches it)
  std::atomic<bool> sent{false};
  void Send(const Result<Bytes>& r) {
    if (sent.exchange(true)) return;
    charge.Reset();
    asio::post(*io, [conn = conn, id = stream_id, bytes = EncodeReply(r)]() mutable {
      if (auto c = conn.lock())
        if (Stream* s = c->FindStream(id)) {
          s->Write(std::move(bytes));
          s->Finish();
        }
    });
  }
  ~ReplyState() {
    if (!sent) Send(Error::Internal("the request handler dropped the request without replying"));
  }
};

class RpcStream : public StreamHandler {
 public:
  // `refusal`: the admission hook's error, answered once the request ended
  // (its bytes are dropped as they arrive, never buffered).
  RpcStream(asio::io_context& io, std::shared_ptr<RpcHandler> handler, RpcOptions options, std::string peer,
            std::optional<Error> refusal)
      : io_(io), handler_(std::move(handler)), options_(options), peer_(std::move(peer)), refusal_(std::move(refusal)) {}

  size_t OnData(Stream& s, ByteSpan data, bool fin) override {
    if (dispatched_ || refused_) return data.size();
    if (refusal_) {
      if (fin) Answer(s, *refusal_);
      return data.size();
    }
    if (request_.size() + data.size() > options_.max_request_bytes) return Refuse(s, kStreamTooLarge, data.size());
    // Charged before it is buffered: past the endpoint's budget the stream is
    // refused at once and nothing more of it is kept.
    if (!charge_started_) {
      charge_ = RequestCharge(s.connection().request_budget(), s.connection().remote_ip());
      charge_started_ = true;
    }
    if (!charge_.Grow(data.size())) return Refuse(s, kStreamBusy, data.size());
    request_.insert(request_.end(), data.begin(), data.end());
    if (fin) {
      dispatched_ = true;
      auto state = std::make_shared<ReplyState>();
      state->io = &io_;
      state->conn = s.connection().weak_from_this();
      state->stream_id = s.id();
      state->charge = std::move(charge_);
      (*handler_)(peer_, std::move(request_), [state](Result<Bytes> r) { state->Send(r); });
    }
    return data.size();
  }
  // A stream that dies before its request was complete frees its bytes.
  void OnClose(Stream&, const std::optional<Error>&) override {
    charge_.Reset();
    request_ = Bytes();
  }

 private:
  // Returns `n`: the refused bytes are consumed (dropped), so the
  // connection's flow-control window is not shrunk by them.
  size_t Refuse(Stream& s, uint64_t code, size_t n) {
    refused_ = true;
    request_ = Bytes();
    charge_.Reset();
    s.Reset(code);
    return n;
  }
  void Answer(Stream& s, const Error& e) {
    dispatched_ = true;
    s.Write(EncodeReply(e));
    s.Finish();
  }

  asio::io_context& io_;
  std::shared_ptr<RpcHandler> handler_;
  RpcOptions options_;
  std::string peer_;
  std::optional<Error> refusal_;
  Bytes request_;
  RequestCharge charge_;
  bool charge_started_ = false;
  bool dispatched_ = false, refused_ = false;
};

class RpcProtocol : public Protocol {
 public:
  RpcProtocol(asio::io_context& io, RpcHandler handler, RpcOptions options)
      : io_(io), handler_(std::make_shared<RpcHandler>(std::move(handler))), options_(options) {}
  std::unique_ptr<StreamHandler> Accept(const std::string& peer) override { return AcceptFrom(peer, ""); }
  std::unique_ptr<StreamHandler> AcceptFrom(const std::string& peer, const std::string& ip) override {
    std::optional<Error> refusal;
    if (options_.admit) refusal = options_.admit(peer, ip);
    return std::make_unique<RpcStream>(io_, handler_, options_, peer, std::move(refusal));
  }

 private:
  asio::io_context& io_;
  std::shared_ptr<RpcHandler> handler_;
  RpcOptions options_;
};

}  // namespace

std::shared_ptr<Protocol> MakeRpcProtocol(asio::io_context& io, RpcHandler handler, RpcOptions options) {
  return std::make_shared<RpcProtocol>(io, std::move(handler), options);
}

Bytes EncodeReply(const Result<Bytes>& r) {
  Bytes out;
  if (r) {
    out.reserve(1 + r->size());
    out.push_back(0);
    out.insert(out.end(), r->begin(), r->end());
  } else {
    const std::string& m = r.error().message();
    out.reserve(1 + m.size());
    out.push_back(static_cast<uint8_t>(r.error().code()));
    out.insert(out.end(), m.begin(), m.end());
  }
  return out;
}

Result<Bytes> DecodeReply(Bytes reply) {
  if (reply.empty()) return Error::Corruption("empty reply (no status byte)");
  uint8_t status = reply[0];
  if (status == 0) {
    reply.erase(reply.begin());
    return reply;
  }
  if (status > kMaxErrorCode) return Error::Corruption("reply has unknown status {}", status);
  return Error(static_cast<ErrorCode>(status), std::string(reply.begin() + 1, reply.end()));
}

Result<Bytes> CallRpc(QuicClient& client, const PeerAddr& peer, const std::string& alpn, ByteSpan request,
                      const CallOptions& options) {
  TENZRO_TRY(Bytes reply, client.Request(peer, alpn, request, options));
  auto r = DecodeReply(std::move(reply));
  if (!r) return r.error().WithContext(fmt::format("peer {}", peer.ToString()));
  return r;
}

}  // namespace tenzro::quic
