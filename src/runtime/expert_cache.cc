#include "runtime/expert_cache.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <filesystem>
#include <set>

#include "core/file.h"

namespace tenzro::runtime {

// One registered expert. Fields guarded by ExpertCache::mu_ (path and info
// are immutable after registration).
struct ExpertCacheEntry {
  enum class State : uint8_t { kCold, kLoading, kWarm };
  ExpertKey key;
  std::string path;
  ExpertFileInfo info;
  State state = State::kCold;
  std::shared_ptr<const WarmExpert> warm;  // kWarm only
  int pins = 0;
  uint64_t hits = 0;
  bool in_lru = false;
  std::list<ExpertCacheEntry*>::iterator lru_it;
};

namespace {

bool SafeModelComponent(std::string_view m) {
  if (m.empty() || m.size() > 128 || m == "." || m == "..") return false;
  for (char c : m)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-')) return false;
  return true;
}

std::optional<int> ParseIndex(std::string_view s) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

std::string ParentDir(const std::string& path) { return path.substr(0, path.rfind('/')); }

// Hard-links `src` to `dst` atomically (link to a temp name, rename over);
// copies when linking is impossible (another filesystem, no permission).
Result<void> LinkOrCopy(Env& env, const std::string& src, const std::string& dst) {
  std::string tmp = dst + ".tmp.link." + std::to_string(::getpid());
  (void)env.RemoveFile(tmp);
  if (env.LinkFile(src, tmp)) {
    if (auto r = env.RenameFile(tmp, dst); !r) {
      (void)env.RemoveFile(tmp);
      return r.error();
    }
    return env.SyncDir(ParentDir(dst));
  }
  TENZRO_TRY(Bytes data, env.ReadFile(src));
  return env.WriteFileAtomic(dst, ByteSpan(data));
}

Result<void> CheckIdentity(const format::DecodedExpertFile& d, const ExpertKey& key, const std::string& what) {
  if (d.id.layer != key.layer || d.id.expert != key.expert)
    return Error::InvalidArgument("{}: holds layer {} expert {}, expected layer {} expert {}", what, d.id.layer,
                                  d.id.expert, key.layer, key.expert);
  return Ok();
}

}  // namespace

std::string ExpertKey::ToString() const { return fmt::format("{}/{}/{}", model, layer, expert); }

std::string_view TierName(Tier t) { return t == Tier::kWarm ? "Warm" : "Cold"; }

// --- PinnedExpert ---

PinnedExpert& PinnedExpert::operator=(PinnedExpert&& o) noexcept {
  if (this != &o) {
    Release();
    cache_ = o.cache_;
    entry_ = std::move(o.entry_);
    warm_ = std::move(o.warm_);
    o.cache_ = nullptr;
  }
  return *this;
}

void PinnedExpert::Release() {
  if (cache_ != nullptr && entry_) cache_->Unpin(*entry_);
  cache_ = nullptr;
  entry_.reset();
  warm_.reset();
}

// --- ExpertCache ---

ExpertCache::ExpertCache(ExpertCacheOptions options) : options_(std::move(options)) {
  if (!options_.env) options_.env = &Env::Default();
  if (!options_.loader) {
    Env* env = options_.env;
    options_.loader = [env](const std::string& p) -> Result<std::shared_ptr<const WarmExpert>> {
      TENZRO_TRY(Bytes data, env->ReadFile(p, 16ull << 30));
      return DecodeWarmExpert(std::make_shared<const Bytes>(std::move(data)), p);
    };
  }
  stats_.budget_bytes = options_.budget_bytes;
  prefetch_pool_ = std::make_unique<ThreadPool>(std::max(1, options_.prefetch_threads), "prefetch");
}

ExpertCache::~ExpertCache() {
  WaitPrefetchIdle();
  prefetch_pool_->Shutdown();
}

Result<std::unique_ptr<ExpertCache>> ExpertCache::Open(ExpertCacheOptions options) {
  if (options.dir.empty()) return Error::InvalidArgument("expert cache: no directory");
  TENZRO_CHECK_OK((options.env ? *options.env : Env::Default()).MakeDirs(options.dir));
  return std::unique_ptr<ExpertCache>(new ExpertCache(std::move(options)));
}

Result<std::string> ExpertCache::ColdPath(const ExpertKey& key) const {
  if (!SafeModelComponent(key.model))
    return Error::InvalidArgument("model id '{}' is not 1-128 characters of [a-z0-9._-]", key.model);
  if (key.layer < 0 || key.expert < 0)
    return Error::InvalidArgument("layer {} / expert {} must not be negative", key.layer, key.expert);
  return fmt::format("{}/{}/{}/{}.gguf", options_.dir, key.model, key.layer, key.expert);
}

Result<int> ExpertCache::ScanColdTier(std::vector<std::string>* skipped) {
  namespace fs = std::filesystem;
  std::error_code ec;
  int n = 0;
  auto skip = [&](const std::string& what) {
    if (skipped) skipped->push_back(what);
  };
  for (const auto& md : fs::directory_iterator(options_.dir, ec)) {
    const std::string model = md.path().filename().string();
    if (!md.is_directory(ec) || !SafeModelComponent(model)) continue;
    for (const auto& ld : fs::directory_iterator(md.path(), ec)) {
      auto layer = ParseIndex(ld.path().filename().string());
      if (!ld.is_directory(ec) || !layer) continue;
      for (const auto& f : fs::directory_iterator(ld.path(), ec)) {
        const std::string name = f.path().filename().string();
        if (name.size() <= 5 || name.substr(name.size() - 5) != ".gguf") continue;
        auto expert = ParseIndex(std::string_view(name).substr(0, name.size() - 5));
        if (!expert) continue;  // gate.gguf and others belong to someone else
        ExpertKey key{model, *layer, *expert};
        auto info = Install(key, f.path().string());
        if (!info) {
          skip(info.error().ToString());
          continue;
        }
        ++n;
      }
    }
  }
  if (ec && ec != std::errc::no_such_file_or_directory)
    return Error::Io("scanning {}: {}", options_.dir, ec.message());
  return n;
}

Result<ExpertEntryInfo> ExpertCache::Install(const ExpertKey& key, const std::string& path) {
  TENZRO_TRY(ExpertFileInfo info, InspectExpertFile(path));
  if (info.id.layer != key.layer || info.id.expert != key.expert)
    return Error::InvalidArgument("{}: holds layer {} expert {}, expected layer {} expert {}", path, info.id.layer,
                                  info.id.expert, key.layer, key.expert);
  auto e = std::make_shared<Entry>();
  e->key = key;
  e->path = path;
  e->info = std::move(info);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    Entry& old = *it->second;
    if (old.pins > 0 || old.state == Entry::State::kLoading)
      return Error::Unavailable("expert {} is in use; retry", key.ToString());
    if (old.state == Entry::State::kWarm) DemoteLocked(old);
  }
  entries_[key] = e;
  return InfoLocked(*e);
}

Result<ExpertEntryInfo> ExpertCache::Put(const ExpertKey& key, ByteSpan image) {
  TENZRO_TRY(std::string path, ColdPath(key));
  {
    TENZRO_TRY(format::DecodedExpertFile d, format::DecodeExpertGguf(image, nullptr, key.ToString()));
    if (d.kind != format::kKindExpert)
      return Error::InvalidArgument("{}: image is a {} file, not an expert", key.ToString(), d.kind);
    TENZRO_CHECK_OK(CheckIdentity(d, key, key.ToString()));
  }
  return Replace(key, path, [&] { return options_.env->WriteFileAtomic(path, image); });
}

Result<ExpertEntryInfo> ExpertCache::PutFile(const ExpertKey& key, const std::string& src) {
  TENZRO_TRY(std::string path, ColdPath(key));
  if (src == path) return Install(key, path);
  {
    TENZRO_TRY(std::shared_ptr<MappedFile> map, options_.env->MapFile(src));
    TENZRO_TRY(format::DecodedExpertFile d, format::DecodeExpertGguf(map->bytes(), map, src));
    if (d.kind != format::kKindExpert)
      return Error::InvalidArgument("{}: is a {} file, not an expert", src, d.kind);
    TENZRO_CHECK_OK(CheckIdentity(d, key, src));
  }
  return Replace(key, path, [&] { return LinkOrCopy(*options_.env, src, path); });
}

Result<ExpertEntryInfo> ExpertCache::Replace(const ExpertKey& key, const std::string& path,
                                             const std::function<Result<void>()>& place) {
  // Take the old registration out (refused while in use), so no Pin can read
  // the file while it is replaced; put it back if anything fails.
  std::shared_ptr<Entry> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end()) {
      if (it->second->pins > 0 || it->second->state == Entry::State::kLoading)
        return Error::Unavailable("expert {} is in use by a computation; retry", key.ToString());
      old = it->second;
      if (old->state == Entry::State::kWarm) DemoteLocked(*old);
      entries_.erase(it);
    }
  }
  auto restore = [&] {
    if (!old) return;
    std::lock_guard<std::mutex> lock(mu_);
    entries_.emplace(key, old);
  };
  Result<void> placed = options_.env->MakeDirs(ParentDir(path));
  if (placed) placed = place();
  if (!placed) {
    restore();
    return placed.error();
  }
  auto info = Install(key, path);
  if (!info) {
    restore();
    return info.error();
  }
  // Promote now when that needs no waiting.
  std::shared_ptr<Entry> e;
  {
    std::lock_guard<std::mutex> lock(mu_);
    e = entries_[key];
    if (e->state != Entry::State::kCold || !MakeRoomLocked(e->info.bytes)) return InfoLocked(*e);
    e->state = Entry::State::kLoading;
    stats_.warm_bytes += e->info.bytes;
    stats_.max_warm_bytes = std::max(stats_.max_warm_bytes, stats_.warm_bytes);
    ++prefetch_inflight_;
  }
  RunPrefetch(e);
  std::lock_guard<std::mutex> lock(mu_);
  return InfoLocked(*e);
}

bool ExpertCache::MakeRoomLocked(uint64_t bytes) {
  const uint64_t budget = options_.budget_bytes;
  if (budget == 0) return true;
  if (bytes > budget) return false;
  if (stats_.warm_bytes + bytes <= budget) return true;
  uint64_t demotable = 0;
  for (const Entry* e : lru_)
    if (e->pins == 0) demotable += e->info.bytes;
  if (stats_.warm_bytes - demotable + bytes > budget) return false;
  while (stats_.warm_bytes + bytes > budget) {
    Entry* victim = nullptr;
    for (auto it = lru_.rbegin(); it != lru_.rend(); ++it)
      if ((*it)->pins == 0) {
        victim = *it;
        break;
      }
    if (victim == nullptr) return false;  // unreachable after the check above
    DemoteLocked(*victim);
  }
  return true;
}

void ExpertCache::DemoteLocked(Entry& e) {
  if (e.state != Entry::State::kWarm) return;
  e.warm.reset();
  e.state = Entry::State::kCold;
  stats_.warm_bytes -= e.info.bytes;
  if (e.in_lru) lru_.erase(e.lru_it);
  e.in_lru = false;
  ++stats_.demotions;
  cv_.notify_all();
}

void ExpertCache::TouchLocked(Entry& e) {
  if (e.in_lru) lru_.erase(e.lru_it);
  lru_.push_front(&e);
  e.lru_it = lru_.begin();
  e.in_lru = true;
}

void ExpertCache::DemoteAll() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [k, e] : entries_)
    if (e->pins == 0) DemoteLocked(*e);
}

Result<PinnedExpert> ExpertCache::Pin(const ExpertKey& key) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() + options_.pin_wait;
  enum class How : uint8_t { kFirst, kWaitedForPrefetch, kMissed } how = How::kFirst;
  for (;;) {
    auto it = entries_.find(key);
    if (it == entries_.end()) return Error::NotFound("expert {} is not loaded on this node", key.ToString());
    std::shared_ptr<Entry> e = it->second;
    if (e->state == Entry::State::kWarm) {
      if (how == How::kFirst) ++stats_.hits;
      if (how == How::kWaitedForPrefetch) ++stats_.prefetch_waits;
      if (how != How::kMissed) ++e->hits;
      if (e->pins++ == 0) stats_.pinned_bytes += e->info.bytes;
      TouchLocked(*e);
      PinnedExpert p;
      p.cache_ = this;
      p.warm_ = e->warm;
      p.entry_ = std::move(e);
      return p;
    }
    const uint64_t bytes = e->info.bytes;
    if (e->state == Entry::State::kLoading) {  // a prefetch (or another Pin) is reading it
      if (how == How::kFirst) how = How::kWaitedForPrefetch;
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout)
        return Error::DeadlineExceeded("expert {}: still loading after {} ms", key.ToString(),
                                       options_.pin_wait.count());
      continue;
    }
    if (how != How::kMissed) {
      ++stats_.misses;
      how = How::kMissed;
    }
    if (!MakeRoomLocked(bytes)) {
      if (options_.budget_bytes != 0 && bytes > options_.budget_bytes)
        return Error::ResourceExhausted("expert {} needs {} bytes, more than the whole memory budget ({} bytes)",
                                        key.ToString(), bytes, options_.budget_bytes);
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
        return Error::ResourceExhausted(
            "no room to make expert {} warm: {} of {} budget bytes are pinned by running computations "
            "(waited {} ms)",
            key.ToString(), stats_.pinned_bytes, options_.budget_bytes, options_.pin_wait.count());
      }
      continue;
    }
    // Cold with room reserved: load outside the lock, pinned so that nothing
    // demotes it before the caller sees it.
    e->state = Entry::State::kLoading;
    stats_.warm_bytes += bytes;
    stats_.max_warm_bytes = std::max(stats_.max_warm_bytes, stats_.warm_bytes);
    if (e->pins++ == 0) stats_.pinned_bytes += bytes;
    lock.unlock();
    auto w = options_.loader(e->path);
    if (w && (*w)->bytes() != bytes)
      w = Error::Corruption("{}: is {} bytes now, {} when registered", e->path, (*w)->bytes(), bytes);
    lock.lock();
    if (!w) {
      e->state = Entry::State::kCold;
      stats_.warm_bytes -= bytes;
      if (--e->pins == 0) stats_.pinned_bytes -= bytes;
      cv_.notify_all();
      return w.error().WithContext(fmt::format("loading expert {}", key.ToString()));
    }
    e->warm = *w;
    e->state = Entry::State::kWarm;
    ++stats_.promotions;
    TouchLocked(*e);
    cv_.notify_all();
    PinnedExpert p;
    p.cache_ = this;
    p.warm_ = e->warm;
    p.entry_ = std::move(e);
    return p;
  }
}

void ExpertCache::Unpin(Entry& e) {
  std::lock_guard<std::mutex> lock(mu_);
  if (--e.pins == 0) stats_.pinned_bytes -= e.info.bytes;
  cv_.notify_all();
}

int ExpertCache::Prefetch(const std::vector<ExpertKey>& keys) {
  std::vector<std::shared_ptr<Entry>> start;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t budget = options_.budget_bytes;
    const uint64_t avail = budget == 0 ? UINT64_MAX : budget - std::min(budget, stats_.pinned_bytes);
    uint64_t sum = 0;
    std::set<ExpertKey> seen;
    for (const ExpertKey& k : keys) {
      if (!seen.insert(k).second) continue;
      auto it = entries_.find(k);
      if (it == entries_.end()) continue;
      Entry& e = *it->second;
      if (e.pins == 0) {
        sum += e.info.bytes;
        if (sum > avail) break;
      }
      if (e.state == Entry::State::kWarm) {
        TouchLocked(e);  // protect it from this batch's own demotions
        continue;
      }
      if (e.state == Entry::State::kLoading) continue;
      if (!MakeRoomLocked(e.info.bytes)) {
        ++stats_.prefetch_skipped;
        continue;
      }
      e.state = Entry::State::kLoading;
      stats_.warm_bytes += e.info.bytes;
      stats_.max_warm_bytes = std::max(stats_.max_warm_bytes, stats_.warm_bytes);
      ++stats_.prefetches;
      ++prefetch_inflight_;
      start.push_back(it->second);
    }
  }
  for (auto& e : start) {
    auto task = [this, e] { RunPrefetch(e); };
    if (!prefetch_pool_->Submit(task)) RunPrefetch(e);  // shutting down: finish inline
  }
  return static_cast<int>(start.size());
}

// Loads a reserved (kLoading) entry and publishes the result.
void ExpertCache::RunPrefetch(std::shared_ptr<Entry> e) {
  const uint64_t bytes = e->info.bytes;
  auto w = options_.loader(e->path);
  if (w && (*w)->bytes() != bytes)
    w = Error::Corruption("{}: is {} bytes now, {} when registered", e->path, (*w)->bytes(), bytes);
  std::lock_guard<std::mutex> lock(mu_);
  if (!w) {
    e->state = Entry::State::kCold;
    stats_.warm_bytes -= bytes;
  } else {
    e->warm = *w;
    e->state = Entry::State::kWarm;
    ++stats_.promotions;
    TouchLocked(*e);
  }
  --prefetch_inflight_;
  cv_.notify_all();
}

void ExpertCache::WaitPrefetchIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return prefetch_inflight_ == 0; });
}

bool ExpertCache::Contains(const ExpertKey& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.count(key) > 0;
}

ExpertEntryInfo ExpertCache::InfoLocked(const Entry& e) const {
  ExpertEntryInfo i;
  i.key = e.key;
  i.tier = e.state == Entry::State::kWarm ? Tier::kWarm : Tier::kCold;
  i.loading = e.state == Entry::State::kLoading;
  i.bytes = e.info.bytes;
  i.formats = e.info.formats();
  i.path = e.path;
  i.n_embd = e.info.n_embd;
  i.n_ff = e.info.n_ff;
  i.hits = e.hits;
  i.pins = e.pins;
  return i;
}

std::optional<ExpertEntryInfo> ExpertCache::Info(const ExpertKey& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return InfoLocked(*it->second);
}

std::vector<ExpertEntryInfo> ExpertCache::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ExpertEntryInfo> out;
  out.reserve(entries_.size());
  for (const auto& [k, e] : entries_) out.push_back(InfoLocked(*e));
  return out;
}

ExpertCacheStats ExpertCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  ExpertCacheStats s = stats_;
  s.n_experts = entries_.size();
  s.n_warm = 0;
  s.cold_bytes = 0;
  for (const auto& [k, e] : entries_) {
    s.cold_bytes += e->info.bytes;
    if (e->state == Entry::State::kWarm) ++s.n_warm;
  }
  return s;
}

}  // namespace tenzro::runtime
