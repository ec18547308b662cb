#include "transfer/http_blobs.h"

#include <array>

#include "net/client.h"
#include "net/json_http.h"

namespace tenzro::transfer {
namespace {

net::Response JsonError(int status, const Error& e) { return net::ErrorResponse(e, status); }

std::string Target(const blob::Blake3Hash& hash, const blob::ChunkRanges& ranges) {
  std::string t = "/blobs/" + hash.ToHex();
  if (!ranges.is_all()) t += "?ranges=" + (ranges == blob::ChunkRanges::LastChunk() ? std::string("last") : ranges.ToString());
  return t;
}

Error PeerError(const Error& e, const net::Endpoint& peer) {
  return e.WithContext(fmt::format("blob fetch from peer {}", peer.HostPort()));
}

Result<void> CheckStatus(const net::ClientResponse& resp, const blob::Blake3Hash& hash, const net::Endpoint& peer) {
  if (resp.ok()) return Ok();
  std::string detail = resp.body.substr(0, 300);
  if (resp.status == 404)
    return Error::NotFound("peer {} does not have blob {}", peer.HostPort(), hash.ToHex());
  return Error::Unavailable("peer {} answered HTTP {} for blob {}: {}", peer.HostPort(), resp.status, hash.ToHex(),
                            detail);
}

// A fetch's total deadline, checked as each piece arrives.
class Deadline {
 public:
  explicit Deadline(std::chrono::milliseconds total)
      : total_(total), end_(std::chrono::steady_clock::now() + total) {}
  Result<void> Check(uint64_t received) const {
    if (total_.count() > 0 && std::chrono::steady_clock::now() > end_)
      return Error::DeadlineExceeded("blob fetch ran past its total deadline of {} ms (after {} bytes)",
                                     total_.count(), received);
    return Ok();
  }

 private:
  std::chrono::milliseconds total_;
  std::chrono::steady_clock::time_point end_;
};

void Count(const FetchCounters& c, uint64_t received, std::optional<ErrorCode> failure, uint64_t bytes) {
  if (c.received) c.received(received);
  if (c.done) c.done(failure, bytes);
}

}  // namespace

void AddBlobRoutes(net::Router& router, std::shared_ptr<blob::BlobStore> store,
                   std::function<void(uint64_t bytes)> on_sent) {
  router.Add("GET", "/blobs/", [store, on_sent](const net::Request& req) -> net::Response {
    auto hash = blob::Blake3Hash::FromHex(req.route_suffix);
    if (!hash) return JsonError(400, Error::InvalidArgument("bad blob hash '{}': {}", req.route_suffix.substr(0, 80),
                                                            hash.error().message()));
    blob::ChunkRanges ranges = blob::ChunkRanges::All();
    if (auto r = req.QueryParam("ranges")) {
      auto parsed = blob::ChunkRanges::Parse(*r);
      if (!parsed) return JsonError(400, parsed.error().WithContext("ranges"));
      ranges = *parsed;
    }
    auto enc = store->Encode(*hash, ranges);
    if (!enc) return JsonError(enc.error().code() == ErrorCode::kNotFound ? 404 : 500, enc.error());
    uint64_t total = (*enc)->total_size();
    std::shared_ptr<blob::StreamEncoder> encoder(std::move(*enc));
    return net::Response::Stream(
        "application/octet-stream",
        [encoder, on_sent](std::span<uint8_t> buf) -> Result<size_t> {
          auto n = encoder->Read(buf);
          if (n && on_sent) on_sent(*n);
          return n;
        },
        total);
  });
}

Result<std::optional<uint64_t>> FetchRangesHttp(const blob::Blake3Hash& hash, const blob::ChunkRanges& ranges,
                                                const net::Endpoint& peer, const blob::DataSink& sink,
                                                const FetchOptions& options) {
  net::ClientOptions co;
  co.timeout = std::chrono::milliseconds(options.idle_timeout_ms);
  net::HttpClient client(peer, co);
  blob::StreamDecoder dec(hash, ranges, sink, options.max_size);
  uint64_t received = 0;
  const Deadline deadline(options.total_timeout);
  auto r = [&]() -> Result<std::optional<uint64_t>> {
    auto resp = client.SendStreaming("GET", Target(hash, ranges), {}, "", {}, [&](ByteSpan piece) -> Result<void> {
      received += piece.size();
      TENZRO_CHECK_OK(deadline.Check(received));
      return dec.Feed(piece);
    });
    if (!resp) return PeerError(resp.error(), peer);
    TENZRO_CHECK_OK(CheckStatus(*resp, hash, peer));
    auto fin = dec.Finish();
    if (!fin) return PeerError(fin.error(), peer);
    return dec.verified_size();
  }();
  Count(options.counters, received, r ? std::nullopt : std::optional<ErrorCode>(r.error().code()), r ? received : 0);
  return r;
}

Result<blob::BlobInfo> FetchBlobHttp(blob::BlobStore& store, const blob::Blake3Hash& hash, const net::Endpoint& peer,
                                     const FetchOptions& options) {
  if (auto have = store.Get(hash)) return blob::BlobInfo{hash, have->size};
  TENZRO_TRY(auto import, store.BeginImport(hash, options.max_size));
  net::ClientOptions co;
  co.timeout = std::chrono::milliseconds(options.idle_timeout_ms);
  net::HttpClient client(peer, co);
  uint64_t received = 0;
  const Deadline deadline(options.total_timeout);
  auto r = [&]() -> Result<blob::BlobInfo> {
    auto resp = client.SendStreaming("GET", Target(hash, blob::ChunkRanges::All()), {}, "", {},
                                     [&](ByteSpan piece) -> Result<void> {
                                       received += piece.size();
                                       TENZRO_CHECK_OK(deadline.Check(received));
                                       return import->Feed(piece);
                                     });
    if (!resp) return PeerError(resp.error(), peer);  // `import` is destroyed: temp file deleted
    TENZRO_CHECK_OK(CheckStatus(*resp, hash, peer));
    auto info = import->Finish();
    if (!info) return PeerError(info.error(), peer);
    return *info;
  }();
  Count(options.counters, received, r ? std::nullopt : std::optional<ErrorCode>(r.error().code()), r ? r->size : 0);
  return r;
}

}  // namespace tenzro::transfer
