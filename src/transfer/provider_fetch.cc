#include "transfer/provider_fetch.h"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

namespace tenzro::transfer {

BlobFetcher* FetcherSet::Find(std::string_view kind) const {
  for (const auto& f : fetchers_)
    if (f->kind() == kind) return f.get();
  return nullptr;
}

std::vector<BlobSource> RankSources(std::vector<BlobSource> sources, const SourceProbe& probe,
                                    const RankOptions& options) {
  if (!probe || sources.empty()) return sources;
  const size_t n = std::min(sources.size(), options.max_probes);
  std::vector<std::optional<double>> rtt(n);
  {
    // At most max_probes threads, each ending within its probe's timeout.
    std::vector<std::jthread> probes;
    probes.reserve(n);
    for (size_t i = 0; i < n; ++i)
      probes.emplace_back([&, i] { rtt[i] = probe(sources[i], options.probe_timeout); });
  }
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (rtt[a].has_value() != rtt[b].has_value()) return rtt[a].has_value();
    return rtt[a].has_value() && *rtt[a] < *rtt[b];
  });
  std::vector<BlobSource> out;
  out.reserve(sources.size());
  for (size_t i : order) out.push_back(std::move(sources[i]));
  for (size_t i = n; i < sources.size(); ++i) out.push_back(std::move(sources[i]));
  return out;
}

Result<SourcesFetch> FetchFromSources(blob::BlobStore& store, const blob::Blake3Hash& hash,
                                      const std::vector<BlobSource>& sources, const FetcherSet& fetchers,
                                      const SourcesFetchOptions& options) {
  SourcesFetch out;
  if (auto have = store.Get(hash)) {
    out.info = blob::BlobInfo{hash, have->size};
    return out;
  }
  if (sources.empty()) return Error::NotFound("blob {}: no source to fetch it from", hash.ToHex());
  size_t tried = 0;
  for (const BlobSource& s : sources) {
    if (tried == options.max_attempts) break;
    ++tried;
    BlobFetcher* f = fetchers.Find(s.kind);
    Result<blob::BlobInfo> r =
        f ? f->Fetch(store, hash, s) : Result<blob::BlobInfo>(Error::Unsupported("no {} fetcher here", s.kind));
    if (r) {
      out.info = *r;
      out.from = s;
      return out;
    }
    out.failed.push_back({s, r.error()});
  }
  const Error& last = out.failed.back().error;
  return Error(last.code(), fmt::format("blob {}: every provider failed ({} tried of {}); last ({}): {}", hash.ToHex(),
                                        tried, sources.size(), out.failed.back().source.ToString(), last.message()));
}

}  // namespace tenzro::transfer
