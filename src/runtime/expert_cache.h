// tenzro runtime: the expert cache — which experts this node holds and
// where each one lives (docs/runtime.md).
//
// Two tiers:
//   Cold  the expert's mini-GGUF (docs/formats/expert-gguf.md) on disk at
//         DIR/<model>/<layer>/<expert>.gguf (DIR is DATA_DIR/experts);
//         written atomically, or a hard link to the blob store's copy.
//   Warm  the whole image read into memory and decoded (WarmExpert), ready
//         for the kernels.
// Every registered expert is always Cold-resident; Warm is a byte-bounded
// LRU on top: promoting an expert past `budget_bytes` first demotes the least
// recently used unpinned warm experts (the file stays; nothing is deleted).
// Warm bytes (the image sizes of warm and loading experts) never exceed the
// budget: there is no overcommit.
//
// Pinning: Pin() returns a PinnedExpert (RAII) whose weights stay valid and
// warm until it is destroyed; a pinned expert is never demoted. When a Pin
// needs room and every warm expert is pinned, it WAITS (for an unpin or a
// demotion) up to `pin_wait`, then fails with kResourceExhausted; an expert
// larger than the whole budget fails at once. Holding several pins while
// waiting for another can therefore time out; the MoE forward (cached_moe.h)
// pins one expert at a time.
//
// Prefetch(keys) promotes cold experts on the cache's own worker threads,
// never blocking the caller and never waiting for room (a prefetch that
// would have to wait is skipped and counted). It takes the longest prefix of
// `keys` whose bytes fit in the budget minus the pinned bytes, so a prefetch
// never evicts its own earlier keys. A Pin that finds its expert being
// loaded by a prefetch waits for that load instead of reading it twice.
//
// Counters: hits (Pin found it warm), prefetch_waits (Pin found it being
// loaded and waited for that load), misses (Pin had to load it itself),
// promotions (cold -> warm loads, by Pin or prefetch), demotions, prefetches
// (loads started by Prefetch), prefetch_skipped. Per expert, `hits` counts
// the Pins it served without a load of its own.
//
// Thread-safety: all methods may be called from any thread. One mutex guards
// the entry map, the LRU list, the byte accounting and the counters; file
// reads and decoding happen outside it (the entry is marked loading and its
// bytes are reserved first). A condition variable wakes waiters on every
// load completion, unpin and demotion. PinnedExpert may be destroyed on any
// thread but must not outlive the cache.
#pragma once

#include <chrono>
#include <compare>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/env.h"
#include "core/result.h"
#include "core/thread_pool.h"
#include "runtime/expert_loader.h"

namespace tenzro::runtime {

struct ExpertKey {
  std::string model;  // lower-case catalog id
  int layer = 0;
  int expert = 0;
  auto operator<=>(const ExpertKey&) const = default;
  std::string ToString() const;  // "model/L/E"
};

enum class Tier : uint8_t { kCold = 0, kWarm = 1 };
std::string_view TierName(Tier t);  // "Cold", "Warm"

struct ExpertCacheOptions {
  std::string dir;                              // cold tier root (DATA_DIR/experts)
  uint64_t budget_bytes = 0;                    // warm bytes; 0 = unlimited
  int prefetch_threads = 2;
  std::chrono::milliseconds pin_wait{30000};    // how long a Pin waits for room
  // cold file -> warm expert; default LoadWarmExpert. Tests inject slow or
  // failing loaders.
  std::function<Result<std::shared_ptr<const WarmExpert>>(const std::string& path)> loader;
  // The cold tier's file system (core/env.h): its writes, links, maps and
  // the default loader's reads. Null = Env::Default(). Must outlive the cache.
  Env* env = nullptr;
};

struct ExpertCacheStats {
  uint64_t hits = 0, prefetch_waits = 0, misses = 0, promotions = 0, demotions = 0, prefetches = 0,
           prefetch_skipped = 0;
  uint64_t budget_bytes = 0;   // 0 = unlimited
  uint64_t warm_bytes = 0;     // warm + loading
  uint64_t pinned_bytes = 0;
  uint64_t cold_bytes = 0;     // every registered expert's file
  uint64_t max_warm_bytes = 0; // high-water mark of warm_bytes
  size_t n_experts = 0, n_warm = 0;
};

struct ExpertEntryInfo {
  ExpertKey key;
  Tier tier = Tier::kCold;
  bool loading = false;
  uint64_t bytes = 0;          // image size = warm footprint
  std::string formats;         // "q4_K/q4_K/q6_K"
  std::string path;            // cold file
  int64_t n_embd = 0, n_ff = 0;
  uint64_t hits = 0;
  int pins = 0;
};

class ExpertCache;
struct ExpertCacheEntry;  // internal (expert_cache.cc)

// Keeps one expert warm while alive. Movable, not copyable.
class PinnedExpert {
 public:
  PinnedExpert() = default;
  PinnedExpert(PinnedExpert&& o) noexcept { *this = std::move(o); }
  PinnedExpert& operator=(PinnedExpert&& o) noexcept;
  ~PinnedExpert() { Release(); }

  // REQUIRES: valid().
  const ExpertWeights& weights() const { return warm_->weights; }
  const WarmExpert& expert() const { return *warm_; }
  bool valid() const { return warm_ != nullptr; }
  // Unpins now (idempotent).
  void Release();

 private:
  friend class ExpertCache;
  ExpertCache* cache_ = nullptr;
  std::shared_ptr<ExpertCacheEntry> entry_;
  std::shared_ptr<const WarmExpert> warm_;
};

class ExpertCache {
 public:
  // Creates options.dir if needed. Registers nothing (see ScanColdTier).
  static Result<std::unique_ptr<ExpertCache>> Open(ExpertCacheOptions options);
  ~ExpertCache();  // stops prefetch workers first
  ExpertCache(const ExpertCache&) = delete;
  ExpertCache& operator=(const ExpertCache&) = delete;

  // DIR/<model>/<layer>/<expert>.gguf. kInvalidArgument for a model id that
  // is not a safe path component or negative indices.
  Result<std::string> ColdPath(const ExpertKey& key) const;

  // Registers every DIR/<model>/<layer>/<expert>.gguf (Cold). Files that do
  // not decode are skipped and described in `skipped` (may be null). Returns
  // the number registered. Used on node start.
  Result<int> ScanColdTier(std::vector<std::string>* skipped = nullptr);

  // Stores `image` (an expert mini-GGUF) as the cold file of `key` (atomic
  // write), registers it, replacing an earlier registration, and promotes it
  // when that needs no waiting. kInvalidArgument when the image is not an
  // expert; kUnavailable when the old registration is pinned or loading
  // (state unchanged).
  Result<ExpertEntryInfo> Put(const ExpertKey& key, ByteSpan image);
  // Same for a file already on disk (e.g. the blob store's copy): hard-linked
  // into place (copied when linking fails), never moved.
  Result<ExpertEntryInfo> PutFile(const ExpertKey& key, const std::string& path);

  // Warm handle on `key`, promoting it when cold (see the class comment for
  // waiting). kNotFound when not registered; kResourceExhausted when no room
  // could be made; the loader's error when the cold file does not load (the
  // expert stays registered and cold).
  Result<PinnedExpert> Pin(const ExpertKey& key);

  // Starts promoting the cold ones of `keys` (see the class comment).
  // Unknown keys are ignored. Returns the number of loads started.
  int Prefetch(const std::vector<ExpertKey>& keys);
  // Blocks until no prefetch is queued or running (tests, benchmarks).
  void WaitPrefetchIdle();

  // Demotes every unpinned warm expert (benchmarks, tests).
  void DemoteAll();

  bool Contains(const ExpertKey& key) const;
  std::optional<ExpertEntryInfo> Info(const ExpertKey& key) const;
  // Sorted by key.
  std::vector<ExpertEntryInfo> List() const;
  ExpertCacheStats stats() const;
  const std::string& dir() const { return options_.dir; }

 private:
  friend class PinnedExpert;
  using Entry = ExpertCacheEntry;
  explicit ExpertCache(ExpertCacheOptions options);
  Result<ExpertEntryInfo> Install(const ExpertKey& key, const std::string& path);
  // Swaps the registration of `key` for the file `place` puts at `path`.
  Result<ExpertEntryInfo> Replace(const ExpertKey& key, const std::string& path,
                                  const std::function<Result<void>()>& place);
  // Under mu_: demotes LRU unpinned experts until `bytes` more fit. False
  // when that is impossible without waiting.
  bool MakeRoomLocked(uint64_t bytes);
  void DemoteLocked(Entry& e);
  void TouchLocked(Entry& e);
  ExpertEntryInfo InfoLocked(const Entry& e) const;
  void Unpin(Entry& e);
  void RunPrefetch(std::shared_ptr<Entry> e);

  ExpertCacheOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;                       // state changes (with mu_)
  std::map<ExpertKey, std::shared_ptr<Entry>> entries_;  // guarded by mu_
  std::list<Entry*> lru_;                            // warm entries, most recent first; mu_
  ExpertCacheStats stats_;                           // counters + bytes; mu_
  int prefetch_inflight_ = 0;                        // mu_
  std::unique_ptr<ThreadPool> prefetch_pool_;
};

}  // namespace tenzro::runtime
