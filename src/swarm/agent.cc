#include "swarm/agent.h"

#include <algorithm>
#include <cmath>

#include <spdlog/spdlog.h>

#include "swarm/value_id.h"

namespace tenzro::swarm {

namespace {

constexpr size_t kPartBytes = 60000;  // leaves the DHT's packing overhead room under 64 KiB

std::string ServedKey(std::string_view model, int layer, int expert) {
  return fmt::format("{}/{}/{}", model, layer, expert);
}

}  // namespace

int64_t UnixMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

SwarmAgent::SwarmAgent(std::shared_ptr<DiscoveryTransport> transport, identity::Identity identity,
                       std::vector<Endpoint> endpoints, AgentOptions options, HoldingsFn holdings, Clock clock)
    : transport_(std::move(transport)),
      identity_(std::move(identity)),
      endpoints_(std::move(endpoints)),
      options_(options),
      holdings_(std::move(holdings)),
      clock_(std::move(clock)) {}

SwarmAgent::~SwarmAgent() { Stop(true); }

void SwarmAgent::Start() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (running_ || stopped_) return;
    running_ = true;
  }
  if (auto r = Publish(); !r) spdlog::warn("swarm: first publish failed: {}", r.error().ToString());
  thread_ = std::thread([this] { Loop(); });
  snapshot_thread_ = std::thread([this] { SnapshotLoop(); });
}

void SwarmAgent::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (running_) {
    cv_.wait_for(lock, options_.refresh, [this] { return !running_; });
    if (!running_) break;
    lock.unlock();
    if (auto r = Publish(); !r) spdlog::warn("swarm: publish failed: {}", r.error().ToString());
    lock.lock();
    table_.Expire(clock_());
  }
}

void SwarmAgent::SnapshotLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (running_) {
    snapshot_wakeup_ = false;
    std::vector<std::string> models;
    for (const auto& [m, w] : watched_) models.push_back(m);
    lock.unlock();
    for (const std::string& m : models) {
      {
        std::lock_guard<std::mutex> g(mu_);
        if (!running_) return;
      }
      if (auto r = ReadModel(m, /*snapshot_thread=*/true); !r)
        spdlog::debug("swarm: snapshot read of {} failed: {}", m, r.error().ToString());
    }
    lock.lock();
    cv_.wait_for(lock, options_.snapshot_refresh, [this] { return !running_ || snapshot_wakeup_; });
  }
}

void SwarmAgent::Stop(bool announce_leaving) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    running_ = false;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (snapshot_thread_.joinable()) snapshot_thread_.join();
  if (!announce_leaving) return;
  std::unique_lock<std::mutex> lock(publish_mu_);
  std::map<std::string, uint32_t> declared;
  {
    std::lock_guard<std::mutex> g(mu_);
    declared = declared_parts_;
  }
  const int64_t now = clock_();
  for (const auto& [model, parts] : declared) {
    Declaration d;
    d.model = model;
    d.state = HolderState::kLeaving;
    if (auto r = PublishModel(d, now, /*publish_parts=*/false); !r)
      spdlog::warn("swarm: could not announce leaving for {}: {}", model, r.error().ToString());
  }
  // Provider records are not withdrawn: they expire within the TTL, and a
  // fetch from a gone provider fails over to the next one.
}

uint64_t SwarmAgent::NextSeq(int64_t now_ms) {
  // Microseconds of the clock: increasing across restarts; +1 within one.
  seq_ = std::max<uint64_t>(seq_ + 1, static_cast<uint64_t>(now_ms) * 1000);
  return seq_;
}

Result<void> SwarmAgent::PublishModel(Declaration d, int64_t now, bool publish_parts) {
  d.node_id = identity_.node_id();
  d.timestamp_ms = now;
  d.ttl_s = options_.ttl_s;
  d.part = 0;
  d.parts = 1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    d.endpoints = endpoints_;
    d.seq = NextSeq(now);
    for (auto& e : d.experts) e.served_tps = TpsLocked(ServedKey(d.model, e.layer, e.expert), now);
  }
  std::vector<Declaration> parts;
  if (publish_parts) {
    TENZRO_TRY(parts, Split(d, kPartBytes));
  } else {
    d.experts.clear();
    d.gates.clear();
    parts.push_back(d);
  }
  const std::string key = DeclarationKey(d.model);
  for (const Declaration& p : parts) {
    TENZRO_TRY(std::string rec, EncodeRecord(p, identity_));
    TENZRO_CHECK_OK(transport_->Put(key, RecordValueId(identity_.node_id(), "decl", d.model, p.part), std::move(rec)));
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const Declaration& p : parts) table_.IngestVerified(p, now);
  if (d.state == HolderState::kLeaving) {
    declared_parts_.erase(d.model);
  } else {
    declared_parts_[d.model] = static_cast<uint32_t>(parts.size());
    WatchLocked(d.model, now);
  }
  ++published_;
  return Ok();
}

Result<void> SwarmAgent::Publish() {
  std::lock_guard<std::mutex> publish_lock(publish_mu_);
  std::vector<Declaration> holdings = holdings_ ? holdings_() : std::vector<Declaration>{};
  const int64_t now = clock_();
  std::map<std::string, uint32_t> before;
  std::vector<std::string> hashes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    before = declared_parts_;
    for (const auto& [h, at] : provided_) hashes.push_back(h);
  }
  Result<void> status = Ok();
  // Each Put may wait op_timeout when no peer answers (a cut-off node): a
  // round of many provider records then takes many seconds. Stop() joins the
  // refresh thread, so once stopping, skip the rest of the round.
  auto stopping = [this] {
    std::lock_guard<std::mutex> lock(mu_);
    return stopped_;
  };
  for (Declaration& d : holdings) {
    before.erase(d.model);
    if (stopping()) return Ok();
    if (auto r = PublishModel(std::move(d), now, true); !r) status = r;
  }
  // Models this node no longer holds anything of: announce leaving them.
  for (const auto& [model, parts] : before) {
    Declaration d;
    d.model = model;
    d.state = HolderState::kLeaving;
    if (auto r = PublishModel(d, now, false); !r) status = r;
  }
  for (const std::string& h : hashes) {
    if (stopping()) return Ok();
    if (auto r = PutProvider(h, now); !r) status = r;
  }
  if (!status) {
    std::lock_guard<std::mutex> lock(mu_);
    ++publish_errors_;
  }
  return status;
}

Result<void> SwarmAgent::PutProvider(const std::string& hash, int64_t now) {
  ProviderRecord r;
  r.node_id = identity_.node_id();
  r.blob_hash = hash;
  r.endpoints = endpoints();
  r.timestamp_ms = now;
  r.ttl_s = options_.ttl_s;
  TENZRO_TRY(std::string rec, EncodeProviderRecord(r, identity_));
  return transport_->Put(ProviderKey(hash), RecordValueId(identity_.node_id(), "provider", hash, 0), std::move(rec));
}

Result<void> SwarmAgent::AnnounceProvider(std::string_view blob_hash) {
  const std::string h(blob_hash);
  const int64_t now = clock_();
  TENZRO_CHECK_OK(PutProvider(h, now));
  std::lock_guard<std::mutex> lock(mu_);
  provided_[h] = now;
  return Ok();
}

void SwarmAgent::Provide(std::string_view blob_hash) {
  std::lock_guard<std::mutex> lock(mu_);
  provided_.try_emplace(std::string(blob_hash), clock_());
}

void SwarmAgent::WithdrawProvider(std::string_view blob_hash) {
  std::lock_guard<std::mutex> lock(mu_);
  provided_.erase(std::string(blob_hash));
}

Result<std::vector<ProviderRecord>> SwarmAgent::FindProviders(std::string_view blob_hash) {
  TENZRO_TRY(std::vector<std::string> values, transport_->Get(ProviderKey(blob_hash)));
  const int64_t now = clock_();
  std::map<std::string, ProviderRecord> newest;  // by node id
  for (const std::string& v : values) {
    auto r = DecodeProviderRecord(v);
    if (!r || r->blob_hash != blob_hash || r->node_id == identity_.node_id()) continue;
    if (r->expires_ms() <= now || r->timestamp_ms > now + 5 * 60 * 1000) continue;
    auto it = newest.find(r->node_id);
    if (it == newest.end() || it->second.timestamp_ms < r->timestamp_ms) newest[r->node_id] = std::move(*r);
  }
  std::vector<ProviderRecord> out;
  for (auto& [id, r] : newest) out.push_back(std::move(r));
  std::stable_sort(out.begin(), out.end(),
                   [](const ProviderRecord& a, const ProviderRecord& b) { return a.timestamp_ms > b.timestamp_ms; });
  return out;
}

Result<void> SwarmAgent::ReadModel(const std::string& m, bool snapshot_thread) {
  auto values = transport_->Get(DeclarationKey(m));
  if (!values) {
    std::lock_guard<std::mutex> lock(mu_);
    ++(snapshot_thread ? snapshot_reads_ : request_reads_);
    RebuildSnapshotLocked(m, clock_(), values.error().ToString());
    return values.error();
  }
  // Signatures are checked here, without mu_: a key full of records must not
  // stall the readers of snapshots and stats.
  std::vector<Result<Declaration>> decoded;
  decoded.reserve(values->size());
  for (const std::string& v : *values) decoded.push_back(DecodeRecord(v));
  const int64_t now = clock_();
  std::lock_guard<std::mutex> lock(mu_);
  ++(snapshot_thread ? snapshot_reads_ : request_reads_);
  for (const Result<Declaration>& d : decoded) {
    std::string_view outcome;
    if (!d) {
      const bool forged = d.error().code() == ErrorCode::kPermissionDenied;
      outcome = IngestOutcomeName(forged ? IngestOutcome::kBadSignature : IngestOutcome::kMalformed);
      if (forged) spdlog::debug("swarm: dropped a record: {}", d.error().ToString());
    } else if (d->model != m) {
      outcome = "wrong_model";  // stored under another model's key
    } else {
      outcome = IngestOutcomeName(table_.IngestVerified(*d, now));
    }
    ++ingest_counts_[std::string(outcome)];
  }
  table_.Expire(now);
  auto it = last_read_ms_.find(m);
  if (it == last_read_ms_.end() && last_read_ms_.size() >= options_.max_read_cache) {
    auto oldest = std::min_element(last_read_ms_.begin(), last_read_ms_.end(),
                                   [](const auto& a, const auto& b) { return a.second < b.second; });
    last_read_ms_.erase(oldest);
  }
  last_read_ms_[m] = now;
  RebuildSnapshotLocked(m, now, "");
  return Ok();
}

void SwarmAgent::RebuildSnapshotLocked(const std::string& m, int64_t now, std::string error) {
  auto it = watched_.find(m);
  if (it == watched_.end()) return;
  auto s = std::make_shared<LiveSnapshot>();
  s->model = m;
  s->live = table_.Live(m, now);
  if (options_.screen)
    for (Declaration& d : s->live) options_.screen(d);
  s->read_ms = error.empty() ? now : (it->second.snapshot ? it->second.snapshot->read_ms : 0);
  s->generation = ++snapshot_generation_;
  s->error = std::move(error);
  it->second.snapshot = std::move(s);
}

void SwarmAgent::WatchLocked(const std::string& m, int64_t now) {
  auto it = watched_.find(m);
  if (it != watched_.end()) {
    it->second.asked_ms = std::max(it->second.asked_ms, now);
    return;
  }
  if (watched_.size() >= options_.max_watched) {
    auto victim = watched_.end();
    for (auto w = watched_.begin(); w != watched_.end(); ++w)
      if (!declared_parts_.count(w->first) && (victim == watched_.end() || w->second.asked_ms < victim->second.asked_ms))
        victim = w;
    if (victim != watched_.end()) {
      watched_.erase(victim);
    } else if (!declared_parts_.count(m)) {
      return;  // every slot holds a model this node declares
    }
  }
  watched_[m].asked_ms = now;
  snapshot_wakeup_ = true;
  cv_.notify_all();
}

void SwarmAgent::Watch(std::string_view model) {
  std::lock_guard<std::mutex> lock(mu_);
  WatchLocked(std::string(model), clock_());
}

std::shared_ptr<const LiveSnapshot> SwarmAgent::Snapshot(std::string_view model) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = watched_.find(std::string(model));
  if (it == watched_.end()) return nullptr;
  if (it->second.snapshot) return it->second.snapshot;
  auto empty = std::make_shared<LiveSnapshot>();  // watched, not read yet
  empty->model = it->first;
  return empty;
}

std::vector<std::string> SwarmAgent::WatchedModels() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [m, w] : watched_) out.push_back(m);
  return out;
}

Result<std::vector<Declaration>> SwarmAgent::Live(std::string_view model) {
  const std::string m(model);
  bool read = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = last_read_ms_.find(m);
    read = it == last_read_ms_.end() || clock_() - it->second >= options_.lookup_cache.count();
  }
  if (read) TENZRO_CHECK_OK(ReadModel(m, /*snapshot_thread=*/false));
  const int64_t now = clock_();
  std::lock_guard<std::mutex> lock(mu_);
  table_.Expire(now);
  std::vector<Declaration> live = table_.Live(m, now);
  if (options_.screen)
    for (Declaration& d : live) options_.screen(d);
  return live;
}

std::vector<std::string> SwarmAgent::KnownModels() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out = table_.Models(clock_());
  for (const auto& [m, parts] : declared_parts_) out.push_back(m);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

double SwarmAgent::TpsLocked(const std::string& key, int64_t now) {
  auto it = served_.find(key);
  if (it == served_.end()) return 0;
  Served& s = it->second;
  const int64_t dt = now - s.last_ms;
  if (dt >= 1000) {
    const double dt_s = dt / 1000.0;
    const double rate = s.pending / dt_s;
    const double alpha = 1.0 - std::exp2(-dt_s / options_.tps_halflife_s);
    s.ema_tps += alpha * (rate - s.ema_tps);
    s.pending = 0;
    s.last_ms = now;
  }
  return s.ema_tps < 1e-9 ? 0 : s.ema_tps;
}

void SwarmAgent::RecordServed(std::string_view model, int layer, int expert, uint64_t tokens) {
  const int64_t now = clock_();
  std::lock_guard<std::mutex> lock(mu_);
  const std::string key = ServedKey(model, layer, expert);
  if (served_.size() >= options_.max_served && !served_.count(key)) return;  // bounded: see the header
  auto [it, fresh] = served_.try_emplace(key);
  if (fresh) it->second.last_ms = now;
  TpsLocked(key, now);
  it->second.pending += tokens;
}

double SwarmAgent::ServedTps(std::string_view model, int layer, int expert) {
  std::lock_guard<std::mutex> lock(mu_);
  return TpsLocked(ServedKey(model, layer, expert), clock_());
}

std::vector<Endpoint> SwarmAgent::endpoints() {
  std::lock_guard<std::mutex> lock(mu_);
  return endpoints_;
}

void SwarmAgent::SetEndpoints(std::vector<Endpoint> endpoints) {
  std::lock_guard<std::mutex> lock(mu_);
  endpoints_ = std::move(endpoints);
}

nlohmann::json SwarmAgent::Stats() {
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json models = nlohmann::json::object();
  for (const auto& [m, parts] : declared_parts_) models[m] = {{"parts", parts}};
  return {{"node_id", identity_.node_id()},
          {"published", published_},
          {"publish_errors", publish_errors_},
          {"seq", seq_},
          {"declared", models},
          {"providing", provided_.size()},
          {"records_held", table_.size()},
          {"ingest", ingest_counts_},
          {"declaration_reads", {{"request", request_reads_}, {"snapshot", snapshot_reads_}}},
          {"watched", watched_.size()},
          {"read_cache", last_read_ms_.size()},
          {"served_keys", served_.size()},
          {"refresh_ms", options_.refresh.count()},
          {"ttl_s", options_.ttl_s}};
}

}  // namespace tenzro::swarm
