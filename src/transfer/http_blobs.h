// tenzro transfer: blobs over HTTP in iroh-blobs framing
// (docs/formats/bao-stream.md, docs/formats/blob-store.md).
//
//   GET /blobs/<64 hex>[?ranges=<chunk ranges>]
//     200 application/octet-stream: u64 LE size || bao-tree pre-order stream
//     (the same bytes iroh-blobs sends on /iroh-bytes/4 for a Get of those
//     ranges). ranges uses ChunkRanges' text form: "all" (default), "last"
//     (the size proof), "0..4,10..". 404 when the blob is absent, 400 for a
//     malformed hash or range.
//
// The server streams from the stored data and outboard (never holding the
// blob in memory) and checks what it sends against the root. The fetcher
// verifies every parent pair and leaf as it arrives (blob/decoder.h); on a
// mismatch it aborts, deletes the partial file and names the peer.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "blob/blob_store.h"
#include "blob/chunk_ranges.h"
#include "core/result.h"
#include "core/thread_pool.h"
#include "net/router.h"
#include "net/url.h"

namespace tenzro::transfer {

// Registers GET /blobs/ on `router`, serving `store` (shared with others).
// `on_sent` (may be null) is told every piece of stream written (any thread).
void AddBlobRoutes(net::Router& router, std::shared_ptr<blob::BlobStore> store,
                   std::function<void(uint64_t bytes)> on_sent = nullptr);

// What a finished fetch reports (e.g. into a node's /metrics), any thread.
struct FetchCounters {
  // Bytes received off the wire, once per fetch (also for failed ones).
  std::function<void(uint64_t received)> received;
  // The outcome: nullopt = verified; kCorruption = a verification failure.
  std::function<void(std::optional<ErrorCode> failure, uint64_t bytes)> done;
};

struct FetchOptions {
  uint64_t max_size = 16ull << 30;   // refuse blobs claiming more
  int idle_timeout_ms = 30000;       // per read
  // The whole fetch; a peer that drips (a byte now and then, never idle
  // for idle_timeout_ms) is cut off here with kDeadlineExceeded.
  std::chrono::milliseconds total_timeout = std::chrono::minutes(15);
  FetchCounters counters;
};

// Fetches the whole blob `hash` from `peer` into `store` (verified, atomic).
// Already-present blobs return at once. kCorruption naming the peer when the
// stream does not verify (nothing is left behind); kUnavailable when the peer
// cannot be reached; kNotFound when the peer does not have it.
Result<blob::BlobInfo> FetchBlobHttp(blob::BlobStore& store, const blob::Blake3Hash& hash,
                                     const net::Endpoint& peer, const FetchOptions& options = {});

// Fetches `ranges` of blob `hash` from `peer`, verified, into `sink`
// (offsets ascend). Returns the verified blob size when the stream proved it.
Result<std::optional<uint64_t>> FetchRangesHttp(const blob::Blake3Hash& hash, const blob::ChunkRanges& ranges,
                                                const net::Endpoint& peer, const blob::DataSink& sink,
                                                const FetchOptions& options = {});

}  // namespace tenzro::transfer
