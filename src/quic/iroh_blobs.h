// tenzro quic: iroh-blobs on ALPN "/iroh-bytes/4" (iroh-blobs 0.35 wire
// format): a provider serving a BlobStore and a getter that verifies.
// Format: docs/formats/quic.md (request), docs/formats/bao-stream.md (response).
//
// One request per bidirectional stream. The getter writes a postcard-encoded
// Request and finishes its side; the provider answers with
//   u64 LE size || bao-tree pre-order stream (16 KiB chunk groups)
// for the requested chunk ranges of one blob — the same bytes as the HTTP
// transfer (transfer/http_blobs.h) — and finishes. A blob it does not have is
// answered with an empty stream. Only single-blob requests are served
// (iroh's hash sequences are refused with a stream reset).
//
// The provider reads and validates (StreamEncoder) on a worker pool and
// keeps at most ~2 MiB unacknowledged per stream. The getter feeds what
// arrives to the same StreamDecoder / BlobImport as the HTTP fetch: data
// reaches the sink only after it verified against the hash, and the size
// header is a claim until the last chunk verifies.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include <boost/asio/io_context.hpp>

#include "blob/blob_store.h"
#include "blob/chunk_ranges.h"
#include "blob/decoder.h"
#include "core/bytes.h"
#include "core/result.h"
#include "core/thread_pool.h"
#include "quic/protocol.h"
#include "quic/quic_client.h"

namespace tenzro::quic {

inline constexpr const char* kIrohBlobsAlpn = "/iroh-bytes/4";
inline constexpr size_t kMaxBlobRequestBytes = 64 * 1024;
// The request codec is blob/iroh_request.h.

// The provider. `pool` runs the encoder (null: the loop thread).
// REQUIRES: `io` is the endpoint's loop; `pool` outlives the endpoint.
std::shared_ptr<Protocol> MakeBlobsProvider(boost::asio::io_context& io, std::shared_ptr<blob::BlobStore> store,
                                            ThreadPool* pool);

struct BlobFetchOptions {
  uint64_t max_size = 16ull << 30;  // refuse blobs claiming more
  // Dial, idle and total deadlines; the total (15 min by default) ends a
  // fetch from a peer that drips.
  CallOptions call = [] {
    CallOptions c;
    c.total_timeout = std::chrono::minutes(15);
    return c;
  }();
};

// Fetches `ranges` of `hash` from `peer`, verified, into `sink` (ascending
// offsets). Returns the verified size when the stream proved it.
// kNotFound when the peer does not have the blob; kCorruption naming the
// peer when the stream does not verify; transport errors as QuicClient.
Result<std::optional<uint64_t>> FetchRangesQuic(QuicClient& client, const PeerAddr& peer, const blob::Blake3Hash& hash,
                                                const blob::ChunkRanges& ranges, const blob::DataSink& sink,
                                                const BlobFetchOptions& options = {});
// Fetches the whole blob into `store` (verified, atomic; present blobs
// return at once).
Result<blob::BlobInfo> FetchBlobQuic(QuicClient& client, const PeerAddr& peer, blob::BlobStore& store,
                                     const blob::Blake3Hash& hash, const BlobFetchOptions& options = {});

}  // namespace tenzro::quic
