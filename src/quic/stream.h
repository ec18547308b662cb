// tenzro quic: one bidirectional QUIC stream and the handler that drives it.
//
// A Stream belongs to its Connection (connection.h) and lives on the loop
// thread. Outgoing bytes are queued with Write()/Finish() and kept until the
// peer acknowledges them (ngtcp2 retransmits from this buffer). Incoming bytes
// go to the StreamHandler in order; they count against the flow-control
// window until consumed, which lets a slow reader push back on the sender.
//
// Never destroyed inside a handler call: a closed stream is handed to
// OnClose after the current packet/timer/flush pass, then freed.
// Thread-safety: loop thread only (other threads post to the loop and find
// the stream again by id, see StreamRef).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>

#include "core/bytes.h"
#include "core/result.h"

namespace tenzro::quic {

class Connection;
class Stream;

// Application error codes this module puts in RESET_STREAM / STOP_SENDING
// (docs/formats/quic.md).
enum StreamErrorCode : uint64_t {
  kStreamCancelled = 0,       // the local side gave up (no error implied)
  kStreamRefused = 1,         // no handler for this ALPN / too many streams
  kStreamTooLarge = 2,        // the request exceeded the protocol's size limit
  kStreamBadRequest = 3,      // malformed request
  kStreamInternal = 4,        // the handler failed
  kStreamBusy = 5,            // the endpoint's in-flight request budget is spent (retry later)
};

// "cancelled", "refused", "request too large", "bad request", "internal
// error"; "" for codes defined elsewhere (the peer's protocol).
inline const char* StreamErrorName(uint64_t code) {
  switch (code) {
    case kStreamCancelled: return "cancelled";
    case kStreamRefused: return "refused";
    case kStreamTooLarge: return "request too large";
    case kStreamBadRequest: return "bad request";
    case kStreamInternal: return "internal error";
    case kStreamBusy: return "busy: request budget exhausted";
    default: return "";
  }
}

class StreamHandler {
 public:
  virtual ~StreamHandler() = default;
  // The next `data` from the peer (valid during the call); `fin` when this is
  // the end of its side. Returns how many bytes were consumed now (normally
  // all); the rest must be released later with Stream::Consume.
  virtual size_t OnData(Stream& stream, ByteSpan data, bool fin) = 0;
  // Unacknowledged outgoing bytes fell below Stream::kLowWater (producers
  // may write more).
  virtual void OnWritable(Stream& stream) {}
  // Final call: the stream is done. `error` is set when it did not end with
  // both sides finished (reset or stop-sending by either side, connection
  // closed, idle timeout).
  virtual void OnClose(Stream& stream, const std::optional<Error>& error) = 0;
};

class Stream {
 public:
  static constexpr uint64_t kLowWater = 1u << 20;

  Stream(Connection* conn, int64_t id, std::unique_ptr<StreamHandler> handler)
      : conn_(conn), id_(id), handler_(std::move(handler)) {}
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  int64_t id() const { return id_; }
  Connection& connection() const { return *conn_; }
  StreamHandler* handler() const { return handler_.get(); }

  // Queues `data` after everything written so far. Ignored after Finish/Reset.
  void Write(Bytes data);
  // Ends our side once the queued bytes are sent.
  void Finish();
  // Aborts both directions (RESET_STREAM + STOP_SENDING with `code`).
  void Reset(uint64_t code);
  // Releases `n` bytes a handler did not consume in OnData (flow control).
  void Consume(size_t n);

  // Written but not yet acknowledged (queued included).
  uint64_t unacked_bytes() const { return queued_end_ - acked_; }
  bool finished() const { return fin_queued_; }
  bool aborted() const { return aborted_; }

 private:
  friend class Connection;
  // ngtcp2 wrote `n` more bytes (and the FIN when `fin`).
  void OnSent(size_t n, bool fin);
  // The peer acknowledged everything below `offset`.
  void OnAcked(uint64_t offset);
  bool wants_write() const { return !aborted_ && (sent_ < queued_end_ || (fin_queued_ && !fin_sent_)); }

  Connection* conn_;
  int64_t id_;
  std::unique_ptr<StreamHandler> handler_;
  std::deque<Bytes> chunks_;   // unacknowledged data, oldest first
  uint64_t chunks_base_ = 0;   // stream offset of chunks_.front()
  uint64_t queued_end_ = 0;    // stream offset after the last queued byte
  uint64_t sent_ = 0;          // handed to ngtcp2
  uint64_t acked_ = 0;
  bool fin_queued_ = false, fin_sent_ = false, fin_received_ = false;
  bool aborted_ = false, blocked_ = false, in_send_queue_ = false, want_writable_ = false;
  std::optional<Error> error_;  // why it ended abnormally
};

}  // namespace tenzro::quic
