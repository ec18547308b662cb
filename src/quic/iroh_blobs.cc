#include "quic/iroh_blobs.h"

#include <cstring>

#include <boost/asio/post.hpp>

#include "blob/iroh_request.h"
#include "quic/connection.h"

namespace tenzro::quic {

namespace asio = boost::asio;

// ---- provider ----

namespace {

constexpr size_t kPieceBytes = 256u << 10;
constexpr uint64_t kHighWater = 2u << 20;

// Shared by a provider stream and the pool tasks reading for it.
struct ServeJob {
  asio::io_context* io;
  ThreadPool* pool;
  std::shared_ptr<blob::BlobStore> store;
  std::weak_ptr<Connection> conn;
  int64_t stream_id = -1;
  std::unique_ptr<blob::StreamEncoder> encoder;  // touched by one task at a time
  bool reading = false;                           // loop thread
  bool done = false;                              // loop thread
  std::atomic<bool> cancelled{false};

  Stream* FindStream() {
    auto c = conn.lock();
    return c ? c->FindStream(stream_id) : nullptr;
  }
  void RunOnPool(std::function<void()> fn) {
    if (pool == nullptr || !pool->Submit(fn)) fn();
  }

  // Loop thread: read the next piece if the stream has room.
  static void Pump(const std::shared_ptr<ServeJob>& job) {
    if (job->reading || job->done || job->cancelled) return;
    Stream* s = job->FindStream();
    if (s == nullptr || s->aborted()) return;
    if (s->unacked_bytes() >= kHighWater) return;  // OnWritable calls again
    job->reading = true;
    job->RunOnPool([job] {
      Bytes piece(kPieceBytes);
      Result<size_t> n = job->cancelled ? Result<size_t>(size_t{0}) : job->encoder->Read(piece);
      if (n) piece.resize(*n);
      bool finished = n && (*n == 0 || job->encoder->done());
      asio::post(*job->io, [job, n, finished, piece = std::move(piece)]() mutable {
        job->reading = false;
        Stream* s = job->FindStream();
        if (s == nullptr) return;
        if (!n) {  // the store is corrupt: abort rather than send bad data
          job->done = true;
          s->Reset(kStreamInternal);
          return;
        }
        if (!piece.empty()) s->Write(std::move(piece));
        if (finished) {
          job->done = true;
          s->Finish();
          return;
        }
        Pump(job);
      });
    });
  }
};

class ProviderStream : public StreamHandler {
 public:
  ProviderStream(asio::io_context& io, std::shared_ptr<blob::BlobStore> store, ThreadPool* pool) {
    job_ = std::make_shared<ServeJob>();
    job_->io = &io;
    job_->pool = pool;
    job_->store = std::move(store);
  }
  ~ProviderStream() override { job_->cancelled = true; }

  size_t OnData(Stream& s, ByteSpan data, bool fin) override {
    if (started_) return data.size();
    if (request_.size() + data.size() > kMaxBlobRequestBytes) {
      started_ = true;
      s.Reset(kStreamTooLarge);
      return data.size();
    }
    // The request is charged to the endpoint's budget while it is buffered
    // (request_budget.h), like an exec request, and released once parsed.
    if (!charge_started_) {
      charge_ = RequestCharge(s.connection().request_budget(), s.connection().remote_ip());
      charge_started_ = true;
    }
    if (!charge_.Grow(data.size())) {
      started_ = true;
      request_ = Bytes();
      charge_.Reset();
      s.Reset(kStreamBusy);
      return data.size();
    }
    request_.insert(request_.end(), data.begin(), data.end());
    if (!fin) return data.size();
    started_ = true;
    auto req = blob::DecodeGetRequest(request_);
    request_ = Bytes();
    charge_.Reset();
    if (!req) {
      s.Reset(kStreamBadRequest);
      return data.size();
    }
    job_->conn = s.connection().weak_from_this();
    job_->stream_id = s.id();
    auto job = job_;
    // Opening the blob maps files: do it on the pool as well.
    job->reading = true;
    job->RunOnPool([job, req = *req] {
      auto enc = job->store->Encode(req.hash, req.ranges);
      asio::post(*job->io, [job, enc = std::move(enc)]() mutable {
        job->reading = false;
        Stream* s = job->FindStream();
        if (s == nullptr) return;
        if (!enc) {
          job->done = true;
          if (enc.error().code() == ErrorCode::kNotFound) s->Finish();  // iroh: empty response
          else s->Reset(kStreamInternal);
          return;
        }
        job->encoder = std::move(*enc);
        ServeJob::Pump(job);
      });
    });
    return data.size();
  }
  void OnWritable(Stream&) override { ServeJob::Pump(job_); }
  void OnClose(Stream&, const std::optional<Error>&) override {
    job_->cancelled = true;
    charge_.Reset();
  }

 private:
  std::shared_ptr<ServeJob> job_;
  Bytes request_;
  RequestCharge charge_;
  bool charge_started_ = false;
  bool started_ = false;
};

class BlobsProvider : public Protocol {
 public:
  BlobsProvider(asio::io_context& io, std::shared_ptr<blob::BlobStore> store, ThreadPool* pool)
      : io_(io), store_(std::move(store)), pool_(pool) {}
  std::unique_ptr<StreamHandler> Accept(const std::string&) override {
    return std::make_unique<ProviderStream>(io_, store_, pool_);
  }

 private:
  asio::io_context& io_;
  std::shared_ptr<blob::BlobStore> store_;
  ThreadPool* pool_;
};

}  // namespace

std::shared_ptr<Protocol> MakeBlobsProvider(asio::io_context& io, std::shared_ptr<blob::BlobStore> store,
                                            ThreadPool* pool) {
  return std::make_shared<BlobsProvider>(io, std::move(store), pool);
}

// ---- getter ----

namespace {

// Streams the response of a Get into `feed`. kNotFound for an empty response.
Result<void> ReadResponse(QuicClient& client, const PeerAddr& peer, const blob::Blake3Hash& hash,
                          const blob::ChunkRanges& ranges, const BlobFetchOptions& o,
                          const std::function<Result<void>(ByteSpan)>& feed) {
  TENZRO_TRY(auto reader, client.OpenStream(peer, kIrohBlobsAlpn, blob::EncodeGetRequest(hash, ranges), o.call));
  for (;;) {
    auto piece = reader->Next();
    if (!piece) return piece.error().WithContext(fmt::format("blob fetch from peer {}", peer.ToString()));
    if (piece->empty()) break;
    auto r = feed(*piece);
    if (!r) return r.error().WithContext(fmt::format("blob fetch from peer {}", peer.ToString()));
  }
  if (reader->bytes_read() == 0)
    return Error::NotFound("peer {} does not have blob {}", peer.ToString(), hash.ToHex());
  return Ok();
}

}  // namespace

Result<std::optional<uint64_t>> FetchRangesQuic(QuicClient& client, const PeerAddr& peer, const blob::Blake3Hash& hash,
                                                const blob::ChunkRanges& ranges, const blob::DataSink& sink,
                                                const BlobFetchOptions& options) {
  blob::StreamDecoder dec(hash, ranges, sink, options.max_size);
  TENZRO_CHECK_OK(ReadResponse(client, peer, hash, ranges, options, [&](ByteSpan b) { return dec.Feed(b); }));
  auto fin = dec.Finish();
  if (!fin) return fin.error().WithContext(fmt::format("blob fetch from peer {}", peer.ToString()));
  return dec.verified_size();
}

Result<blob::BlobInfo> FetchBlobQuic(QuicClient& client, const PeerAddr& peer, blob::BlobStore& store,
                                     const blob::Blake3Hash& hash, const BlobFetchOptions& options) {
  if (auto have = store.Get(hash)) return blob::BlobInfo{hash, have->size};
  TENZRO_TRY(auto import, store.BeginImport(hash, options.max_size));
  TENZRO_CHECK_OK(ReadResponse(client, peer, hash, blob::ChunkRanges::All(), options,
                               [&](ByteSpan b) { return import->Feed(b); }));
  auto info = import->Finish();
  if (!info) return info.error().WithContext(fmt::format("blob fetch from peer {}", peer.ToString()));
  return *info;
}

}  // namespace tenzro::quic
