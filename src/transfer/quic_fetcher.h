// tenzro transfer: the QUIC BlobFetcher (kind "quic"): an iroh-blobs Get on
// ALPN /iroh-bytes/4 (quic/iroh_blobs.h) over a QuicClient — a node's own
// endpoint, or a throwaway one (`tenzro blob get`). The source must name the
// peer's node id: the handshake checks the key it presents.
#pragma once

#include "quic/quic_client.h"
#include "quic/iroh_blobs.h"
#include "transfer/fetcher.h"

namespace tenzro::transfer {

class QuicBlobFetcher : public BlobFetcher {
 public:
  // REQUIRES: `client` outlives the fetcher.
  explicit QuicBlobFetcher(quic::QuicClient* client, quic::BlobFetchOptions options = {})
      : client_(client), options_(std::move(options)) {}
  std::string_view kind() const override { return "quic"; }
  Result<blob::BlobInfo> Fetch(blob::BlobStore& store, const blob::Blake3Hash& hash, const BlobSource& from) override;
  Result<std::optional<uint64_t>> FetchRanges(const blob::Blake3Hash& hash, const blob::ChunkRanges& ranges,
                                              const BlobSource& from, const blob::DataSink& sink) override;

 private:
  quic::QuicClient* client_;
  quic::BlobFetchOptions options_;
};

}  // namespace tenzro::transfer
