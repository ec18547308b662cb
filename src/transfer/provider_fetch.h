// tenzro transfer: the provider loop — a blob from the first of several
// sources that delivers it, over whichever transports the sources name.
//
// RankSources orders candidate sources by a caller-supplied round-trip probe
// (fastest first, unreachable last), probing at most `max_probes` of them,
// all at once, each bounded by `probe_timeout`: a list of a thousand Sybil
// records costs at most max_probes short probes, never a walk through all of
// them. Sources past max_probes keep their order, after the probed ones.
//
// FetchFromSources tries sources in order, at most `max_attempts` of them,
// each through the fetcher of its kind (FetcherSet); the first verified blob
// wins. Every fetch verifies against the hash (transfer/fetcher.h), so a
// lying source costs one attempt, never a wrong blob.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "blob/blob_store.h"
#include "core/result.h"
#include "transfer/fetcher.h"

namespace tenzro::transfer {

// The fetchers a node (or a command) has, by kind. Not thread-safe to
// modify; Find from any thread.
class FetcherSet {
 public:
  void Add(std::shared_ptr<BlobFetcher> f) { fetchers_.push_back(std::move(f)); }
  // Null when no fetcher serves `kind`.
  BlobFetcher* Find(std::string_view kind) const;

 private:
  std::vector<std::shared_ptr<BlobFetcher>> fetchers_;
};

// A round trip to `source` in ms, or nullopt when it did not answer within
// `timeout`. Called from several threads at once.
using SourceProbe = std::function<std::optional<double>(const BlobSource& source, std::chrono::milliseconds timeout)>;

struct RankOptions {
  size_t max_probes = 16;
  std::chrono::milliseconds probe_timeout{1000};
};

// `sources` reordered as above; `probe` null = unchanged.
std::vector<BlobSource> RankSources(std::vector<BlobSource> sources, const SourceProbe& probe,
                                    const RankOptions& options = {});

struct SourceAttempt {
  BlobSource source;
  Error error;
};

struct SourcesFetch {
  blob::BlobInfo info;
  std::optional<BlobSource> from;     // nullopt: the blob was already in the store
  std::vector<SourceAttempt> failed;  // sources tried before `from`, in order
};

struct SourcesFetchOptions {
  size_t max_attempts = 8;
};

// The blob into `store` from the first source that delivers it.
// kNotFound when `sources` is empty; otherwise, when every attempt failed,
// the last failure's code with a message naming how many were tried.
Result<SourcesFetch> FetchFromSources(blob::BlobStore& store, const blob::Blake3Hash& hash,
                                      const std::vector<BlobSource>& sources, const FetcherSet& fetchers,
                                      const SourcesFetchOptions& options = {});

}  // namespace tenzro::transfer
