// tenzro swarm: the agent — one node's presence in the swarm.
//
// The agent publishes this node's holder declarations (one per model it
// holds anything of, split into parts that fit the DHT's 64 KiB values) on a
// discovery transport, refreshes them every `refresh` (default 20 s) with a
// TTL (default 60 s) so a dead holder disappears within the TTL, and
// announces "leaving" on a clean Stop. It reads everybody's declarations back
// through a DeclarationTable (verifies signatures, drops forged, replayed and
// expired records), announces itself as a provider of the blobs it stores and
// finds providers of blobs it lacks. It also keeps the tokens/s this node
// served per expert as an exponential moving average, which goes into the
// declarations (the shard map's "hot" experts).
//
// What the node holds comes from `HoldingsFn`, called at every publish: the
// agent fills in node id, endpoints, seq, timestamp, ttl, state and served
// tps itself. Sequence numbers are the unix time in microseconds at publish
// (strictly increasing across restarts as long as the clock does not go back
// by more than a restart takes).
//
// Snapshots. The agent keeps, for the models it watches, the live
// declarations as last read (LiveSnapshot), re-read every snapshot_refresh on
// its own snapshot thread (and whenever Live() reads one of them). Watched
// are the models this node declares and those Watch() was called for (the
// node calls it on its operator's admin routes), at most max_watched (the
// least recently asked is dropped first; declared models are never
// dropped). Snapshot() does no I/O, so a public request (the dashboard)
// reads one without ever waiting on the DHT.
//
// Bounds (every table keyed by a value a stranger or a request chooses):
//   watched models      max_watched (LRU; own declared models kept)
//   Live() read times   max_read_cache entries (the oldest read dropped)
//   served tokens/s     max_served (model, layer, expert) keys (new keys
//                       past it are not counted)
//   declaration table   DeclarationTable's own limits; records read under
//                       one model's key that declare another model are
//                       dropped ("wrong_model"), so a key can only feed
//                       its own model.
// Records are verified outside the agent's lock, so a large read never
// stalls Snapshot(), Stats() or KnownModels().
//
// Thread-safety: every method may be called from any thread. Start() runs two
// background threads (publish + expiry; snapshots); Stop() joins them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "identity/identity.h"
#include "swarm/declaration.h"
#include "swarm/declaration_table.h"
#include "swarm/provider.h"
#include "swarm/transport.h"

namespace tenzro::swarm {

struct AgentOptions {
  std::chrono::milliseconds refresh{20000};  // re-publish period
  uint32_t ttl_s = 60;                       // declarations expire after this
  std::chrono::milliseconds lookup_cache{500};  // Live() reuses a transport read this long
  double tps_halflife_s = 30;                   // served tokens/s EMA half-life
  std::chrono::milliseconds snapshot_refresh{2000};  // watched models re-read this often
  size_t max_watched = 32;       // models with a snapshot (see "Bounds")
  size_t max_read_cache = 256;   // models whose last Live() read time is kept
  size_t max_served = 1u << 16;  // (model, layer, expert) served-tps entries
  // Applied to every declaration Live() and Snapshot() return (this node's own included):
  // may drop experts, gates and offers the node does not accept (the node
  // drops blobs its trusted model manifests do not list). Null: none.
  // Called under the agent's lock: must be fast and must not call the agent.
  std::function<void(Declaration&)> screen;
};

// The live declarations of one watched model as last read.
struct LiveSnapshot {
  std::string model;
  std::vector<Declaration> live;  // as DeclarationTable::Live at read_ms
  int64_t read_ms = 0;            // unix ms of the last transport read; 0 = not read yet
  uint64_t generation = 0;        // distinct per rebuild (for caches built from it)
  std::string error;              // the last read's error; "" when it succeeded
};

// The clock (unix milliseconds); injectable for tests.
using Clock = std::function<int64_t()>;
int64_t UnixMillis();

class SwarmAgent {
 public:
  // What this node holds now: one Declaration per model, with model, experts,
  // gates, memory_budget and free_bytes filled in (other fields are ignored).
  using HoldingsFn = std::function<std::vector<Declaration>()>;

  SwarmAgent(std::shared_ptr<DiscoveryTransport> transport, identity::Identity identity,
             std::vector<Endpoint> endpoints, AgentOptions options, HoldingsFn holdings, Clock clock = UnixMillis);
  ~SwarmAgent();  // Stop(true)
  SwarmAgent(const SwarmAgent&) = delete;
  SwarmAgent& operator=(const SwarmAgent&) = delete;

  // Publishes at once, then every options.refresh on a background thread.
  void Start();
  // Stops the thread; with announce_leaving, publishes a "leaving" record for
  // every model it had declared. Idempotent.
  void Stop(bool announce_leaving = true);

  // Publishes the current holdings now (after a load, say). Errors of the
  // transport are returned (the periodic thread only logs them).
  Result<void> Publish();

  // Live declaration parts of `model` (this node's own included), read from
  // the transport (at most once per options.lookup_cache) and verified.
  Result<std::vector<Declaration>> Live(std::string_view model);
  // Models with a live declaration among those Live() has read so far, plus
  // the models this node declares.
  std::vector<std::string> KnownModels();

  // Watches `model` (see "Snapshots"): its snapshot is read on the snapshot
  // thread from now on. No I/O here. Only for models the node's operator
  // asked for or the node holds: each costs one transport read per refresh.
  void Watch(std::string_view model);
  // The latest snapshot of `model`; null when it is not watched. No I/O.
  std::shared_ptr<const LiveSnapshot> Snapshot(std::string_view model);
  // The watched models, sorted.
  std::vector<std::string> WatchedModels();

  // Counts `tokens` served by this node for (model, layer, expert) into the
  // tokens/s EMA published in the declarations.
  void RecordServed(std::string_view model, int layer, int expert, uint64_t tokens);
  // The current EMA (tokens/s) for one expert; 0 when never served.
  double ServedTps(std::string_view model, int layer, int expert);

  // Announces this node as a provider of `blob_hash` (re-announced at every
  // refresh until Withdraw).
  Result<void> AnnounceProvider(std::string_view blob_hash);
  // Registers `blob_hash` to be announced from the next publish on (no put
  // now; safe to call from the HoldingsFn).
  void Provide(std::string_view blob_hash);
  void WithdrawProvider(std::string_view blob_hash);
  // Verified, unexpired provider records of `blob_hash` (never this node's
  // own), newest first.
  Result<std::vector<ProviderRecord>> FindProviders(std::string_view blob_hash);

  const std::string& node_id() const { return identity_.node_id(); }
  std::vector<Endpoint> endpoints();
  // Replaces the advertised endpoints (e.g. once the QUIC port is known);
  // effective from the next publish.
  void SetEndpoints(std::vector<Endpoint> endpoints);
  // {"node_id", "published", "publish_errors", "seq", "ingest": {outcome: n},
  //  "declaration_reads": {"request": n, "snapshot": n}, "watched": n,
  //  "read_cache": n, "served_keys": n, ...}
  nlohmann::json Stats();

 private:
  struct Served {
    double ema_tps = 0;
    int64_t last_ms = 0;
    uint64_t pending = 0;  // tokens since last_ms
  };
  // Publishes one model's declaration (parts, or one part-less record for
  // "leaving"). Called with publish_mu_ held.
  Result<void> PublishModel(Declaration d, int64_t now, bool publish_parts);
  Result<void> PutProvider(const std::string& hash, int64_t now);
  uint64_t NextSeq(int64_t now_ms);  // mu_ held
  double TpsLocked(const std::string& key, int64_t now);  // mu_ held
  void Loop();
  void SnapshotLoop();
  // Reads `model`'s records from the transport, verifies them (without mu_),
  // ingests those that declare `model` and rebuilds its snapshot if watched.
  Result<void> ReadModel(const std::string& model, bool snapshot_thread);
  void WatchLocked(const std::string& model, int64_t now);       // mu_ held
  void RebuildSnapshotLocked(const std::string& model, int64_t now, std::string error);  // mu_ held

  std::shared_ptr<DiscoveryTransport> transport_;
  identity::Identity identity_;
  std::vector<Endpoint> endpoints_;
  AgentOptions options_;
  HoldingsFn holdings_;
  Clock clock_;

  std::mutex publish_mu_;  // serializes publishes (seq order = put order); taken before mu_
  std::mutex mu_;
  std::condition_variable cv_;
  bool running_ = false;
  bool stopped_ = false;
  std::thread thread_;
  std::thread snapshot_thread_;
  DeclarationTable table_;
  struct Watched {
    int64_t asked_ms = 0;
    std::shared_ptr<const LiveSnapshot> snapshot;  // null until first read
  };
  std::map<std::string, Watched> watched_;            // model -> snapshot; max_watched
  uint64_t snapshot_generation_ = 0;
  bool snapshot_wakeup_ = false;                      // a model was added to watched_
  uint64_t request_reads_ = 0;                        // transport reads by Live()
  uint64_t snapshot_reads_ = 0;                       // transport reads by the snapshot thread
  std::map<std::string, int64_t> last_read_ms_;       // model -> last transport read; max_read_cache
  std::map<std::string, uint32_t> declared_parts_;    // model -> parts last published
  std::map<std::string, Served> served_;              // "model/layer/expert"; max_served
  std::map<std::string, int64_t> provided_;           // blob hash -> announced at
  std::map<std::string, uint64_t> ingest_counts_;     // outcome name -> count
  uint64_t seq_ = 0;
  uint64_t published_ = 0;
  uint64_t publish_errors_ = 0;
};

}  // namespace tenzro::swarm
