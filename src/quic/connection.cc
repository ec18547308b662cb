#include "quic/connection.h"

#include <algorithm>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include <gnutls/crypto.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>

#include "quic/endpoint.h"

namespace tenzro::quic {

namespace asio = boost::asio;
using udp = asio::ip::udp;

uint64_t SteadyClockNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

namespace {

Connection* Self(void* user_data) { return static_cast<Connection*>(user_data); }

void RandomBytes(uint8_t* p, size_t n) { (void)gnutls_rnd(GNUTLS_RND_RANDOM, p, n); }

std::string CidKey(const ngtcp2_cid& cid) { return std::string(reinterpret_cast<const char*>(cid.data), cid.datalen); }

ngtcp2_conn* GetConn(ngtcp2_crypto_conn_ref* ref) { return static_cast<ngtcp2_conn*>(ref->user_data); }

// The peer's CONNECTION_CLOSE, in words.
std::string DescribeClose(const ngtcp2_connection_close_error& e) {
  std::string reason(reinterpret_cast<const char*>(e.reason), e.reasonlen);
  const char* kind = e.type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_APPLICATION ? "application" : "transport";
  std::string s = fmt::format("peer closed the connection ({} error 0x{:x}", kind, e.error_code);
  if (e.type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_TRANSPORT && (e.error_code & 0xff00) == 0x0100)
    s += fmt::format(", TLS alert {}", gnutls_alert_get_name(static_cast<gnutls_alert_description_t>(e.error_code & 0xff)));
  if (!reason.empty()) s += ": " + reason;
  return s + ")";
}

}  // namespace

// ---- Stream ----

void Stream::Write(Bytes data) {
  if (fin_queued_ || aborted_ || data.empty()) return;
  queued_end_ += data.size();
  chunks_.push_back(std::move(data));
  conn_->ScheduleFlush();
  if (!in_send_queue_) {
    in_send_queue_ = true;
    conn_->send_queue_.push_back(id_);
  }
}

void Stream::Finish() {
  if (fin_queued_ || aborted_) return;
  fin_queued_ = true;
  if (!in_send_queue_) {
    in_send_queue_ = true;
    conn_->send_queue_.push_back(id_);
  }
  conn_->ScheduleFlush();
}

void Stream::Reset(uint64_t code) {
  if (aborted_) return;
  aborted_ = true;
  if (!error_) error_ = Error::Unavailable("stream {} reset locally (code {})", id_, code);
  if (conn_->conn_ && !conn_->is_closed()) ngtcp2_conn_shutdown_stream(conn_->conn_, id_, code);
  conn_->ScheduleFlush();
}

void Stream::Consume(size_t n) {
  if (n == 0 || !conn_->conn_ || conn_->is_closed()) return;
  ngtcp2_conn_extend_max_stream_offset(conn_->conn_, id_, n);
  ngtcp2_conn_extend_max_offset(conn_->conn_, n);
  conn_->ScheduleFlush();
}

void Stream::OnSent(size_t n, bool fin) {
  sent_ += n;
  if (fin && sent_ == queued_end_) fin_sent_ = true;
}

void Stream::OnAcked(uint64_t offset) {
  if (offset <= acked_) return;
  acked_ = offset;
  while (!chunks_.empty() && chunks_base_ + chunks_.front().size() <= acked_) {
    chunks_base_ += chunks_.front().size();
    chunks_.pop_front();
  }
  if (unacked_bytes() < kLowWater) want_writable_ = true;
}

// ---- ngtcp2 callbacks ----

struct Connection::Callbacks {
  static int HandshakeCompleted(ngtcp2_conn*, void* ud) { return Self(ud)->OnHandshakeCompleted(); }


  static int RecvStreamData(ngtcp2_conn*, uint32_t flags, int64_t id, uint64_t, const uint8_t* data, size_t len,
                            void* ud, void*) {
    return Self(ud)->OnStreamData(flags, id, data, len);
  }

  static int AckedStreamDataOffset(ngtcp2_conn*, int64_t id, uint64_t offset, uint64_t len, void* ud, void*) {
    if (Stream* s = Self(ud)->FindStream(id)) s->OnAcked(offset + len);
    return 0;
  }

  static int StreamOpen(ngtcp2_conn*, int64_t id, void* ud) { return Self(ud)->OnStreamOpen(id); }

  static int StreamClose(ngtcp2_conn*, uint32_t flags, int64_t id, uint64_t code, void* ud, void*) {
    std::optional<uint64_t> app;
    if (flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET) app = code;
    Self(ud)->OnStreamClose(id, app);
    return 0;
  }

  static int StreamReset(ngtcp2_conn*, int64_t id, uint64_t, uint64_t code, void* ud, void*) {
    Self(ud)->OnStreamAbortedByPeer(id, code, "reset");
    return 0;
  }

  static int StreamStopSending(ngtcp2_conn*, int64_t id, uint64_t code, void* ud, void*) {
    Self(ud)->OnStreamAbortedByPeer(id, code, "stopped (STOP_SENDING)");
    return 0;
  }

  static int ExtendMaxLocalStreamsBidi(ngtcp2_conn*, uint64_t, void* ud) {
    Self(ud)->ScheduleFlush();  // AfterIo retries pending opens
    return 0;
  }

  static int ExtendMaxStreamData(ngtcp2_conn*, int64_t id, uint64_t, void* ud, void*) {
    Connection* c = Self(ud);
    if (Stream* s = c->FindStream(id); s && s->blocked_) {
      s->blocked_ = false;
      if (!s->in_send_queue_ && s->wants_write()) {
        s->in_send_queue_ = true;
        c->send_queue_.push_back(id);
      }
    }
    return 0;
  }

  static void Rand(uint8_t* dest, size_t len, const ngtcp2_rand_ctx*) { RandomBytes(dest, len); }

  static int GetNewConnectionId(ngtcp2_conn*, ngtcp2_cid* cid, uint8_t* token, size_t cidlen, void* ud) {
    Connection* c = Self(ud);
    RandomBytes(cid->data, cidlen);
    cid->datalen = cidlen;
    if (c->ep_ == nullptr) return NGTCP2_ERR_CALLBACK_FAILURE;
    const auto& secret = c->ep_->reset_secret();
    if (ngtcp2_crypto_generate_stateless_reset_token(token, secret.data(), secret.size(), cid) != 0)
      return NGTCP2_ERR_CALLBACK_FAILURE;
    std::string key = CidKey(*cid);
    c->cids_.push_back(key);
    c->ep_->Associate(key, c);
    return 0;
  }

  static int RemoveConnectionId(ngtcp2_conn*, const ngtcp2_cid* cid, void* ud) {
    Connection* c = Self(ud);
    std::string key = CidKey(*cid);
    if (c->ep_) c->ep_->Dissociate(key);
    std::erase(c->cids_, key);
    return 0;
  }

  static ngtcp2_callbacks Make(bool server) {
    ngtcp2_callbacks cb{};
    if (server) {
      cb.recv_client_initial = ngtcp2_crypto_recv_client_initial_cb;
    } else {
      cb.client_initial = ngtcp2_crypto_client_initial_cb;
      cb.recv_retry = ngtcp2_crypto_recv_retry_cb;
    }
    cb.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb;
    cb.handshake_completed = HandshakeCompleted;
    cb.encrypt = ngtcp2_crypto_encrypt_cb;
    cb.decrypt = ngtcp2_crypto_decrypt_cb;
    cb.hp_mask = ngtcp2_crypto_hp_mask_cb;
    cb.recv_stream_data = RecvStreamData;
    cb.acked_stream_data_offset = AckedStreamDataOffset;
    cb.stream_open = StreamOpen;
    cb.stream_close = StreamClose;
    cb.extend_max_local_streams_bidi = ExtendMaxLocalStreamsBidi;
    cb.rand = Rand;
    cb.get_new_connection_id = GetNewConnectionId;
    cb.remove_connection_id = RemoveConnectionId;
    cb.update_key = ngtcp2_crypto_update_key_cb;
    cb.stream_reset = StreamReset;
    cb.extend_max_stream_data = ExtendMaxStreamData;
    cb.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
    cb.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
    cb.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
    cb.stream_stop_sending = StreamStopSending;
    cb.version_negotiation = ngtcp2_crypto_version_negotiation_cb;
    return cb;
  }
};

// ---- Connection ----

Connection::Connection(Endpoint* ep, bool server, const udp::endpoint& remote, std::string alpn)
    : ep_(ep),
      now_ns_(ep->options().now_ns),
      budget_(ep->request_budget()),
      server_(server),
      remote_(remote),
      alpn_(std::move(alpn)),
      timer_(ep->io()),
      close_timer_(ep->io()) {}

Connection::~Connection() {
  if (conn_) ngtcp2_conn_del(conn_);
  if (tls_) gnutls_deinit(tls_);
}

void Connection::SetPath() {
  ngtcp2_path_storage_zero(&path_);
  ngtcp2_addr local = ep_->local_addr();
  std::memcpy(&path_.local_addrbuf, local.addr, local.addrlen);
  path_.path.local.addrlen = local.addrlen;
  std::memcpy(&path_.remote_addrbuf, remote_.data(), remote_.size());
  path_.path.remote.addrlen = static_cast<ngtcp2_socklen>(remote_.size());
}

Result<void> Connection::InitTls(const std::optional<PublicKey>& expected) {
  tls_ref_.conn_ref.get_conn = GetConn;
  tls_ref_.conn_ref.user_data = conn_;
  tls_ref_.expected = expected;
  std::vector<std::string> alpns = server_ ? ep_->alpns() : std::vector<std::string>{alpn_};
  TENZRO_TRY(tls_, ep_->tls().NewSession(server_, alpns, &tls_ref_, expected ? IrohServerName(*expected) : ""));
  ngtcp2_conn_set_tls_native_handle(conn_, tls_);
  return Ok();
}

namespace {

// TENZRO_QUIC_TRACE=1: ngtcp2's packet log on stderr (debugging only).
void TracePrintf(void*, const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  std::vfprintf(stderr, format, ap);
  va_end(ap);
  std::fputc('\n', stderr);
}

void FillSettings(const EndpointOptions& o, uint64_t now, ngtcp2_settings* s) {
  ngtcp2_settings_default(s);
  static const bool trace = std::getenv("TENZRO_QUIC_TRACE") != nullptr;
  if (trace) s->log_printf = TracePrintf;
  s->initial_ts = now;
  s->cc_algo = NGTCP2_CC_ALGO_CUBIC;
  s->max_window = o.max_connection_window;
  s->max_stream_window = o.max_stream_window;
  s->handshake_timeout = static_cast<uint64_t>(o.handshake_timeout.count()) * NGTCP2_MILLISECONDS;
}

void FillParams(const EndpointOptions& o, bool server, ngtcp2_transport_params* p) {
  ngtcp2_transport_params_default(p);
  p->initial_max_data = o.connection_window;
  p->initial_max_stream_data_bidi_local = o.stream_window;
  p->initial_max_stream_data_bidi_remote = o.stream_window;
  p->initial_max_stream_data_uni = 0;
  p->initial_max_streams_bidi = server ? o.max_streams_bidi : 0;  // clients accept no streams
  p->initial_max_streams_uni = 0;
  p->max_idle_timeout = static_cast<uint64_t>(o.idle_timeout.count()) * NGTCP2_MILLISECONDS;
  p->active_connection_id_limit = 4;
}

}  // namespace

Result<std::shared_ptr<Connection>> Connection::Dial(Endpoint* ep, const PublicKey& peer, const udp::endpoint& remote,
                                                     const std::string& alpn) {
  std::shared_ptr<Connection> c(new Connection(ep, false, remote, alpn));
  c->peer_id_ = NodeIdHex(peer);
  c->SetPath();
  ngtcp2_cid dcid, scid;
  dcid.datalen = kCidBytes;
  RandomBytes(dcid.data, dcid.datalen);
  scid.datalen = kCidBytes;
  RandomBytes(scid.data, scid.datalen);
  ngtcp2_settings settings;
  FillSettings(ep->options(), c->Now(), &settings);
  ngtcp2_transport_params params;
  FillParams(ep->options(), false, &params);
  ngtcp2_callbacks cb = Callbacks::Make(false);
  int rv = ngtcp2_conn_client_new(&c->conn_, &dcid, &scid, &c->path_.path, NGTCP2_PROTO_VER_V1, &cb, &settings,
                                  &params, nullptr, c.get());
  if (rv != 0) return Error::Internal("ngtcp2_conn_client_new: {}", ngtcp2_strerror(rv));
  if (ep->options().keep_alive.count() > 0)
    ngtcp2_conn_set_keep_alive_timeout(
        c->conn_, static_cast<uint64_t>(ep->options().keep_alive.count()) * NGTCP2_MILLISECONDS);
  TENZRO_CHECK_OK(c->InitTls(peer));
  c->cids_.push_back(CidKey(scid));
  ep->Associate(CidKey(scid), c.get());
  return c;
}

Result<std::shared_ptr<Connection>> Connection::Accept(Endpoint* ep, const ngtcp2_pkt_hd& hd,
                                                       const udp::endpoint& remote) {
  std::shared_ptr<Connection> c(new Connection(ep, true, remote, ""));
  c->SetPath();
  ngtcp2_cid scid;
  scid.datalen = kCidBytes;
  RandomBytes(scid.data, scid.datalen);
  ngtcp2_settings settings;
  FillSettings(ep->options(), c->Now(), &settings);
  settings.token = hd.token;
  ngtcp2_transport_params params;
  FillParams(ep->options(), true, &params);
  params.original_dcid = hd.dcid;
  params.stateless_reset_token_present = 1;
  const auto& secret = ep->reset_secret();
  if (ngtcp2_crypto_generate_stateless_reset_token(params.stateless_reset_token, secret.data(), secret.size(),
                                                   &scid) != 0)
    return Error::Internal("cannot derive a stateless reset token");
  ngtcp2_callbacks cb = Callbacks::Make(true);
  int rv = ngtcp2_conn_server_new(&c->conn_, &hd.scid, &scid, &c->path_.path, hd.version, &cb, &settings, &params,
                                  nullptr, c.get());
  if (rv != 0) return Error::Internal("ngtcp2_conn_server_new: {}", ngtcp2_strerror(rv));
  TENZRO_CHECK_OK(c->InitTls(std::nullopt));
  // Route both the id we chose and the one the client picked for its Initials.
  for (const ngtcp2_cid* id : std::array<const ngtcp2_cid*, 2>{&scid, &hd.dcid}) {
    c->cids_.push_back(CidKey(*id));
    ep->Associate(CidKey(*id), c.get());
  }
  return c;
}

nlohmann::json Connection::DebugJson() const {
  nlohmann::json j = {{"peer", peer_id_.substr(0, 16)},
                      {"alpn", alpn_},
                      {"server", server_},
                      {"state", static_cast<int>(state_)},
                      {"streams", streams_.size()},
                      {"send_queue", send_queue_.size()},
                      {"flush_pending", flush_pending_},
                      {"pending_opens", pending_opens_.size()}};
  if (conn_) {
    ngtcp2_conn_stat st;
    ngtcp2_conn_get_conn_stat(conn_, &st);
    uint64_t expiry = ngtcp2_conn_get_expiry(conn_), now = Now();
    j["smoothed_rtt_us"] = st.smoothed_rtt / 1000;
    j["cwnd"] = st.cwnd;
    j["bytes_in_flight"] = st.bytes_in_flight;
    j["pto_count"] = st.pto_count;
    j["expiry_in_ms"] = expiry == UINT64_MAX ? -1.0 : (static_cast<double>(expiry) - static_cast<double>(now)) / 1e6;
    nlohmann::json ss = nlohmann::json::array();
    for (const auto& [id, st2] : streams_)
      ss.push_back({{"id", id},
                    {"queued", st2->queued_end_},
                    {"sent", st2->sent_},
                    {"acked", st2->acked_},
                    {"fin_queued", st2->fin_queued_},
                    {"fin_sent", st2->fin_sent_},
                    {"fin_received", st2->fin_received_},
                    {"blocked", st2->blocked_},
                    {"aborted", st2->aborted_},
                    {"in_send_queue", st2->in_send_queue_}});
    j["stream_state"] = ss;
  }
  return j;
}

void Connection::WhenReady(ReadyFn done) {
  if (state_ == State::kOpen) {
    asio::post(timer_.get_executor(), [done = std::move(done)] { done(Ok()); });
  } else if (state_ >= State::kClosing) {
    Error e = failure_.value_or(Error::Unavailable("connection closed"));
    asio::post(timer_.get_executor(), [done = std::move(done), e] { done(e); });
  } else {
    ready_waiters_.push_back(std::move(done));
  }
}

void Connection::OpenStream(std::unique_ptr<StreamHandler> handler, OpenFn done) {
  pending_opens_.emplace_back(std::move(handler), std::move(done));
  TryOpenPending();
  AfterIo();
  ScheduleFlush();
}

void Connection::TryOpenPending() {
  while (!pending_opens_.empty()) {
    if (state_ >= State::kClosing) {
      Error e = failure_.value_or(Error::Unavailable("connection to {} closed", peer_id_));
      auto opens = std::move(pending_opens_);
      pending_opens_.clear();
      for (auto& [h, done] : opens) done(e);
      return;
    }
    if (state_ != State::kOpen) return;
    int64_t id = -1;
    int rv = ngtcp2_conn_open_bidi_stream(conn_, &id, nullptr);
    if (rv == NGTCP2_ERR_STREAM_ID_BLOCKED) return;  // the peer will grant more
    auto [h, done] = std::move(pending_opens_.front());
    pending_opens_.erase(pending_opens_.begin());
    if (rv != 0) {
      done(Error::Unavailable("cannot open a stream to {}: {}", peer_id_, ngtcp2_strerror(rv)));
      continue;
    }
    auto s = std::make_unique<Stream>(this, id, std::move(h));
    Stream* raw = s.get();
    streams_[id] = std::move(s);
    done(raw);
  }
}

void Connection::ExtendConnectionWindow(size_t n) {
  if (n == 0 || conn_ == nullptr || state_ >= State::kClosing) return;
  ngtcp2_conn_extend_max_offset(conn_, n);
  ScheduleFlush();
}

Stream* Connection::FindStream(int64_t id) {
  auto it = streams_.find(id);
  return it == streams_.end() ? nullptr : it->second.get();
}

void Connection::Close(uint64_t app_code, const std::string& reason) {
  if (state_ >= State::kClosing) return;
  ngtcp2_connection_close_error e;
  ngtcp2_connection_close_error_default(&e);
  ngtcp2_connection_close_error_set_application_error(&e, app_code, reinterpret_cast<const uint8_t*>(reason.data()),
                                                      reason.size());
  Terminate(Error::Unavailable("connection closed locally: {}", reason.empty() ? "no reason" : reason), &e, false);
}

void Connection::Receive(const ngtcp2_path& path, std::span<const uint8_t> packet) {
  if (state_ >= State::kClosing || conn_ == nullptr) return;
  ngtcp2_pkt_info pi{};
  last_rx_ns_ = Now();
  int rv = ngtcp2_conn_read_pkt(conn_, &path, &pi, packet.data(), packet.size(), Now());
  if (rv != 0) {
    HandleLibError(rv, "read");
    return;
  }
  ScheduleFlush();  // once per batch of datagrams, not per packet
}

void Connection::HandleLibError(int rv, std::string_view where) {
  ngtcp2_connection_close_error e;
  ngtcp2_connection_close_error_default(&e);
  switch (rv) {
    case NGTCP2_ERR_DRAINING: {  // the peer closed
      ngtcp2_connection_close_error peer;
      ngtcp2_conn_get_connection_close_error(conn_, &peer);
      Terminate(Error::Unavailable("{}{}", state_ == State::kHandshaking ? "QUIC handshake failed: " : "",
                                   DescribeClose(peer)),
                nullptr, true);
      return;
    }
    case NGTCP2_ERR_DROP_CONN:
    case NGTCP2_ERR_IDLE_CLOSE:
      Terminate(Error::Unavailable("connection to {} {}", peer_id_.empty() ? remote_.address().to_string() : peer_id_,
                                   rv == NGTCP2_ERR_IDLE_CLOSE ? "closed after its idle timeout" : "dropped"),
                nullptr, true);
      return;
    case NGTCP2_ERR_HANDSHAKE_TIMEOUT:
      Terminate(Error::Unavailable("QUIC handshake with {} timed out", remote_.address().to_string() + ":" +
                                                                          std::to_string(remote_.port())),
                nullptr, true);
      return;
    case NGTCP2_ERR_CRYPTO: {
      uint8_t alert = ngtcp2_conn_get_tls_alert(conn_);
      ngtcp2_connection_close_error_set_transport_error_tls_alert(&e, alert, nullptr, 0);
      std::string why = tls_ref_.verify_error;
      if (why.empty())
        why = fmt::format("TLS alert {}", gnutls_alert_get_name(static_cast<gnutls_alert_description_t>(alert)));
      if (!tls_ref_.verify_error.empty())
        Terminate(Error::PermissionDenied("QUIC handshake refused: {}", why), &e, false);
      else
        Terminate(Error::Unavailable("QUIC handshake failed: {}", why), &e, false);
      return;
    }
    default:
      ngtcp2_connection_close_error_set_transport_error_liberr(&e, rv, nullptr, 0);
      Terminate(Error::Unavailable("QUIC {} failed: {}", where, ngtcp2_strerror(rv)), &e, false);
  }
}

void Connection::Terminate(const Error& why, const ngtcp2_connection_close_error* ccerr, bool silent) {
  if (state_ >= State::kClosing) return;
  bool was_handshaking = state_ == State::kHandshaking;
  state_ = State::kClosing;
  failure_ = why;
  if (was_handshaking && ep_) ++ep_->stats_.handshake_failures;
  if (was_handshaking) spdlog::debug("quic: {}", why.message());
  if (!silent && ccerr && ep_ && conn_ && !ngtcp2_conn_is_in_closing_period(conn_) &&
      !ngtcp2_conn_is_in_draining_period(conn_)) {
    uint8_t buf[NGTCP2_MAX_UDP_PAYLOAD_SIZE];
    ngtcp2_path_storage ps;
    ngtcp2_path_storage_zero(&ps);
    ngtcp2_pkt_info pi;
    ngtcp2_ssize n = ngtcp2_conn_write_connection_close(conn_, &ps.path, &pi, buf, sizeof buf, ccerr, Now());
    if (n > 0) {
      std::span<const uint8_t> pkt(buf, static_cast<size_t>(n));
      ep_->Send(remote_, std::span<const std::span<const uint8_t>>(&pkt, 1));
    }
  }
  timer_.cancel();
  timer_at_ = std::chrono::steady_clock::time_point::max();
  // Fail every stream and waiter.
  for (auto& [id, s] : streams_) {
    if (!s->error_) s->error_ = why;
    closed_streams_.emplace_back(id, std::nullopt);
  }
  AfterIo();
  state_ = State::kClosed;
  // Keep the ids routed for a short closing period so late packets are
  // absorbed, then forget the connection.
  uint64_t pto = conn_ ? ngtcp2_conn_get_pto(conn_) : 0;
  auto wait = std::chrono::nanoseconds(std::min<uint64_t>(3 * pto, 2'000'000'000ull));
  std::weak_ptr<Connection> weak = weak_from_this();
  close_timer_.expires_after(wait);
  close_timer_.async_wait([weak](const boost::system::error_code&) {
    if (auto c = weak.lock(); c && c->ep_) c->ep_->Remove(c.get());
  });
}

void Connection::ScheduleFlush() {
  if (flush_pending_ || state_ >= State::kClosing) return;
  flush_pending_ = true;
  std::weak_ptr<Connection> weak = weak_from_this();
  asio::post(timer_.get_executor(), [weak] {
    if (auto c = weak.lock()) {
      c->flush_pending_ = false;
      c->Flush();
    }
  });
}

Stream* Connection::NextToSend() {
  while (!send_queue_.empty()) {
    if (send_cursor_ >= send_queue_.size()) send_cursor_ = 0;
    int64_t id = send_queue_[send_cursor_];
    Stream* s = FindStream(id);
    if (s && s->wants_write() && !s->blocked_) return s;
    if (s) s->in_send_queue_ = false;
    send_queue_.erase(send_queue_.begin() + static_cast<long>(send_cursor_));
  }
  return nullptr;
}

void Connection::Flush() {
  if (state_ >= State::kClosing || conn_ == nullptr || ep_ == nullptr) return;
  TryOpenPending();
  // ngtcp2 reports STREAM_DATA_BLOCKED for the connection's flow-control
  // limit too, and a MAX_DATA frame calls back nothing: give every blocked
  // stream another try whenever we write (i.e. after each received batch).
  for (auto& [id, st] : streams_) {
    if (st->blocked_) {
      st->blocked_ = false;
      if (!st->in_send_queue_ && st->wants_write()) {
        st->in_send_queue_ = true;
        send_queue_.push_back(id);
      }
    }
  }
  const size_t max_pkt = ngtcp2_conn_get_max_tx_udp_payload_size(conn_);
  constexpr size_t kBatch = 32;
  static thread_local std::vector<uint8_t> buf;
  buf.resize(kBatch * max_pkt);
  std::array<std::span<const uint8_t>, kBatch> pkts;
  size_t npkts = 0;
  uint64_t ts = Now();
  ngtcp2_path_storage ps;
  ngtcp2_path_storage_zero(&ps);
  ngtcp2_pkt_info pi;
  auto send_batch = [&] {
    if (npkts == 0) return;
    ep_->Send(remote_, std::span<const std::span<const uint8_t>>(pkts.data(), npkts));
    npkts = 0;
  };
  uint64_t written = 0;
  bool paced_out = false;  // a stream had data ngtcp2 would not send yet
  for (int guard = 0; guard < 4096; ++guard) {
    Stream* s = state_ == State::kOpen ? NextToSend() : nullptr;
    int64_t sid = -1;
    std::array<ngtcp2_vec, 16> vec;
    size_t nvec = 0;
    bool fin = false;
    if (s) {
      sid = s->id_;
      uint64_t off = s->chunks_base_;
      for (const Bytes& c : s->chunks_) {
        uint64_t end = off + c.size();
        if (end > s->sent_ && nvec < vec.size()) {
          size_t skip = s->sent_ > off ? static_cast<size_t>(s->sent_ - off) : 0;
          vec[nvec++] = {const_cast<uint8_t*>(c.data()) + skip, c.size() - skip};
        }
        off = end;
      }
      uint64_t covered = 0;
      for (size_t i = 0; i < nvec; ++i) covered += vec[i].len;
      fin = s->fin_queued_ && s->sent_ + covered == s->queued_end_;
    }
    uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE | (fin ? NGTCP2_WRITE_STREAM_FLAG_FIN : 0);
    ngtcp2_ssize ndatalen = -1;
    uint8_t* out = buf.data() + npkts * max_pkt;
    ngtcp2_ssize n =
        ngtcp2_conn_writev_stream(conn_, &ps.path, &pi, out, max_pkt, &ndatalen, flags, sid, vec.data(), nvec, ts);
    if (n < 0) {
      if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED) {
        s->blocked_ = true;
        continue;
      }
      if (n == NGTCP2_ERR_STREAM_SHUT_WR || n == NGTCP2_ERR_STREAM_NOT_FOUND) {
        s->aborted_ = true;
        continue;
      }
      if (n == NGTCP2_ERR_WRITE_MORE) {
        if (s && ndatalen >= 0) s->OnSent(static_cast<size_t>(ndatalen), fin);
        if (s) ++send_cursor_;  // round robin between streams
        continue;
      }
      send_batch();
      HandleLibError(static_cast<int>(n), "write");
      return;
    }
    if (s && ndatalen >= 0) {
      s->OnSent(static_cast<size_t>(ndatalen), fin);
      ++send_cursor_;
    }
    if (n == 0) {
      paced_out = s != nullptr && !s->blocked_ && s->wants_write();
      break;
    }
    written += static_cast<uint64_t>(n);
    pkts[npkts++] = std::span<const uint8_t>(out, static_cast<size_t>(n));
    if (npkts == kBatch) send_batch();
  }
  send_batch();
  // Pacing starts with the first RTT sample of the 1-RTT phase: during the
  // handshake ngtcp2 would pace from the 333 ms initial RTT and hold the
  // client's Finished (and the first request) for ~20 ms on loopback.
  if (ngtcp2_conn_get_handshake_completed(conn_)) ngtcp2_conn_update_pkt_tx_time(conn_, ts);
  UpdateTimer(paced_out ? std::optional(PacingDelay(std::max<uint64_t>(written, max_pkt))) : std::nullopt);
  AfterIo();
}

std::chrono::nanoseconds Connection::PacingDelay(uint64_t bytes) const {
  ngtcp2_conn_stat cs;
  ngtcp2_conn_get_conn_stat(conn_, &cs);
  double ns = 0;
  if (cs.pacing_rate > 0) ns = static_cast<double>(bytes) / cs.pacing_rate;
  else if (cs.cwnd > 0) ns = static_cast<double>(cs.smoothed_rtt) * static_cast<double>(bytes) / static_cast<double>(cs.cwnd);
  // Never a busy loop, never longer than a loopback RTT or two.
  return std::chrono::nanoseconds(static_cast<int64_t>(std::clamp(ns, 20e3, 2e6)));
}

void Connection::UpdateTimer(std::optional<std::chrono::nanoseconds> soon) {
  if (state_ >= State::kClosing || conn_ == nullptr) return;
  uint64_t expiry = ngtcp2_conn_get_expiry(conn_);
  if (expiry == UINT64_MAX && !soon) return;  // an armed timer may fire: harmless
  uint64_t now = Now();
  auto delay = expiry == UINT64_MAX ? *soon : std::chrono::nanoseconds(expiry > now ? expiry - now : 0);
  if (soon && *soon < delay) delay = *soon;
  const auto at = std::chrono::steady_clock::now() + delay;
  if (timer_at_ <= at) return;  // armed for earlier already
  timer_at_ = at;
  timer_.expires_at(at);
  std::weak_ptr<Connection> weak = weak_from_this();
  timer_.async_wait([weak](const boost::system::error_code& ec) {
    if (ec) return;  // re-armed (its new wait is pending) or the connection closed
    if (auto c = weak.lock()) {
      c->timer_at_ = std::chrono::steady_clock::time_point::max();
      c->OnTimer();
    }
  });
}

void Connection::OnTimer() {
  if (state_ >= State::kClosing || conn_ == nullptr) return;
  int rv = ngtcp2_conn_handle_expiry(conn_, Now());
  if (rv != 0) {
    HandleLibError(rv, "timer");
    return;
  }
  // A dialed connection sends keep-alive PINGs, so a live peer sends
  // something (an ACK at least) every keep_alive; silence past dead_after
  // means the peer process or its host stopped.
  if (ep_ && !server_ && state_ == State::kOpen && ep_->options().keep_alive.count() > 0 &&
      ep_->options().dead_after.count() > 0 && last_rx_ns_ > 0) {
    const uint64_t silent_ns = Now() - last_rx_ns_;
    if (silent_ns > static_cast<uint64_t>(ep_->options().dead_after.count()) * NGTCP2_MILLISECONDS) {
      ep_->CountSilentPeer();
      Terminate(Error::Unavailable("QUIC peer {} stopped answering: nothing received for {} ms",
                                   peer_id_.empty() ? remote_.address().to_string() : peer_id_.substr(0, 16),
                                   silent_ns / NGTCP2_MILLISECONDS),
                nullptr, /*silent=*/true);
      return;
    }
  }
  Flush();
}

void Connection::AfterIo() {
  // Handshake outcome.
  if (!ready_reported_ && state_ != State::kHandshaking) {
    ready_reported_ = true;
    Result<void> r = state_ == State::kOpen ? Ok() : Result<void>(failure_.value_or(Error::Unavailable("closed")));
    auto waiters = std::move(ready_waiters_);
    ready_waiters_.clear();
    for (auto& w : waiters) w(r);
  }
  if (!pending_opens_.empty() && state_ != State::kHandshaking) TryOpenPending();
  // Writable notifications.
  for (auto& [id, s] : streams_) {
    if (s->want_writable_ && !s->aborted_) {
      s->want_writable_ = false;
      s->handler_->OnWritable(*s);
    }
  }
  // Closed streams: tell the handler, then free.
  while (!closed_streams_.empty()) {
    auto closed = std::move(closed_streams_);
    closed_streams_.clear();
    for (auto& [id, app] : closed) {
      auto it = streams_.find(id);
      if (it == streams_.end()) continue;
      std::unique_ptr<Stream> s = std::move(it->second);
      streams_.erase(it);
      // ngtcp2 never raises the peer's stream limit by itself: one closed
      // peer stream, one more allowed.
      if (conn_ && state_ == State::kOpen && !ngtcp2_conn_is_local_stream(conn_, id))
        ngtcp2_conn_extend_max_streams_bidi(conn_, 1);
      std::optional<Error> err = s->error_;
      bool clean = s->fin_sent_ && s->fin_received_;
      if (!err && !clean)
        err = Error::Unavailable("stream {} closed before both sides finished{}", id,
                                 app ? fmt::format(" (application code {})", *app) : std::string());
      s->handler_->OnClose(*s, err);
    }
  }
}

int Connection::OnHandshakeCompleted() {
  std::string negotiated = SelectedAlpn(tls_);
  if (!tls_ref_.peer) return NGTCP2_ERR_CALLBACK_FAILURE;  // GnuTLS required and verified a key
  if (server_) {
    alpn_ = negotiated;
    peer_id_ = NodeIdHex(*tls_ref_.peer);
  } else if (negotiated != alpn_) {
    tls_ref_.verify_error = fmt::format("server chose ALPN '{}', we offered '{}'", negotiated, alpn_);
    return NGTCP2_ERR_CALLBACK_FAILURE;
  }
  state_ = State::kOpen;
  std::weak_ptr<Connection> weak = weak_from_this();
  asio::post(timer_.get_executor(), [weak] {
    if (auto c = weak.lock()) c->AfterIo();
  });
  return 0;
}

int Connection::OnStreamOpen(int64_t id) {
  if (!server_ || !ngtcp2_is_bidi_stream(id) || ep_ == nullptr) {
    ngtcp2_conn_shutdown_stream(conn_, id, kStreamRefused);
    return 0;
  }
  Protocol* p = ep_->FindProtocol(alpn_);
  std::unique_ptr<StreamHandler> h = p ? p->AcceptFrom(peer_id_, remote_ip()) : nullptr;
  if (!h) {
    ++ep_->stats_.streams_refused;
    ngtcp2_conn_shutdown_stream(conn_, id, kStreamRefused);
    return 0;
  }
  streams_[id] = std::make_unique<Stream>(this, id, std::move(h));
  return 0;
}

int Connection::OnStreamData(uint32_t flags, int64_t id, const uint8_t* data, size_t len) {
  Stream* s = FindStream(id);
  bool fin = flags & NGTCP2_STREAM_DATA_FLAG_FIN;
  size_t consumed = len;
  if (s && !s->aborted_) {
    if (fin) s->fin_received_ = true;
    consumed = std::min(len, s->handler_->OnData(*s, ByteSpan(data, len), fin));
  }
  if (consumed > 0) {
    ngtcp2_conn_extend_max_stream_offset(conn_, id, consumed);
    ngtcp2_conn_extend_max_offset(conn_, consumed);
  }
  return 0;
}

void Connection::OnStreamAbortedByPeer(int64_t id, uint64_t code, const char* what) {
  Stream* s = FindStream(id);
  if (!s) return;
  if (!s->error_) {
    std::string name = StreamErrorName(code);
    std::string msg = fmt::format("peer {} stream {} (application code {}{})", what, id, code,
                                  name.empty() ? "" : ": " + name);
    // A busy peer is a budget, not a fault: the caller may retry later.
    s->error_ = code == kStreamBusy ? Error::ResourceExhausted("{}", msg) : Error::Unavailable("{}", msg);
  }
  if (!s->aborted_) {
    s->aborted_ = true;
    ngtcp2_conn_shutdown_stream(conn_, id, kStreamCancelled);
  }
}

void Connection::OnStreamClose(int64_t id, std::optional<uint64_t> app_code) {
  closed_streams_.emplace_back(id, app_code);
}

}  // namespace tenzro::quic
