// tenzro transfer: the HTTP BlobFetcher (kind "http"): GET /blobs/<hash> on
// the peer's public listener (transfer/http_blobs.h), one connection per
// fetch, `options` for every fetch (size bound, idle timeout, counters).
#pragma once

#include "transfer/fetcher.h"
#include "transfer/http_blobs.h"

namespace tenzro::transfer {

class HttpBlobFetcher : public BlobFetcher {
 public:
  explicit HttpBlobFetcher(FetchOptions options = {}) : options_(std::move(options)) {}
  std::string_view kind() const override { return "http"; }
  Result<blob::BlobInfo> Fetch(blob::BlobStore& store, const blob::Blake3Hash& hash, const BlobSource& from) override;
  Result<std::optional<uint64_t>> FetchRanges(const blob::Blake3Hash& hash, const blob::ChunkRanges& ranges,
                                              const BlobSource& from, const blob::DataSink& sink) override;

 private:
  FetchOptions options_;
};

}  // namespace tenzro::transfer
