// tenzro transfer: one interface for bringing a blob from a peer, whatever
// the transport.
//
// A BlobSource names a peer the way a provider record or a blob URI does:
// kind "http" with an http://host:port URL, or kind "quic" with an ip:port
// address and the peer's node id (its key, checked by the handshake).
// A BlobFetcher moves verified bytes from one source: the whole blob into a
// store (atomic; nothing is left behind on failure) or chunk ranges into a
// sink. Every byte is checked against the hash as it arrives, so a lying
// peer costs a retry, never a wrong blob.
//   transfer/http_fetcher.h   GET /blobs/<hash> (transfer/http_blobs.h)
//   transfer/quic_fetcher.h   iroh-blobs /iroh-bytes/4 (quic/iroh_blobs.h)
// transfer/provider_fetch.h tries a list of sources over these.
// Thread-safety: Fetch and FetchRanges may be called from several threads.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "blob/blob_store.h"
#include "blob/chunk_ranges.h"
#include "blob/decoder.h"
#include "core/result.h"

namespace tenzro::transfer {

struct BlobSource {
  std::string kind;     // "http" | "quic"
  std::string address;  // http: URL or host:port; quic: ip:port
  std::string node_id;  // quic: the peer's node id (64 hex); http: optional
  std::string ToString() const;
};

class BlobFetcher {
 public:
  virtual ~BlobFetcher() = default;
  // The BlobSource::kind this fetcher serves.
  virtual std::string_view kind() const = 0;
  // The whole blob into `store` (present blobs return at once).
  // kNotFound when the peer does not have it; kCorruption naming the peer
  // when the stream does not verify; kUnavailable / kDeadlineExceeded for
  // transport failures; kInvalidArgument for a malformed source.
  virtual Result<blob::BlobInfo> Fetch(blob::BlobStore& store, const blob::Blake3Hash& hash,
                                       const BlobSource& from) = 0;
  // `ranges` of the blob, verified, into `sink` (ascending offsets); the
  // verified blob size when the stream proved it. Errors as Fetch.
  virtual Result<std::optional<uint64_t>> FetchRanges(const blob::Blake3Hash& hash, const blob::ChunkRanges& ranges,
                                                      const BlobSource& from, const blob::DataSink& sink) = 0;
};

}  // namespace tenzro::transfer
