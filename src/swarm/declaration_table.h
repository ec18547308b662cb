// tenzro swarm: the table of live holder declarations.
//
// Ingests untrusted wire records (from the DHT or any transport) and keeps,
// per (node id, model, part), the newest valid one. Dropped: malformed
// records, forged ones (signature does not verify, including a record signed
// by a key other than the node id it claims), replays (sequence not above the
// one held), expired ones (timestamp + ttl <= now) and ones stamped too far
// in the future. A valid "leaving" record removes the holder of that model
// and leaves a tombstone so older records cannot resurrect it.
//
// Bounded by the table, never by the signer: a record's lifetime is
// clamped to max_ttl_s (whatever ttl it claims), and a model holds at most
// max_parts_per_model records (past it, records of new (node, part) keys are
// refused as kOverCapacity; known keys still refresh).
//
// The clock is injected (now_ms, unix milliseconds) so expiry is testable.
// Not thread-safe: one owner (the swarm event loop) calls it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "swarm/declaration.h"

namespace tenzro::swarm {

enum class IngestOutcome : uint8_t {
  kAccepted,      // stored (new or newer)
  kLeft,          // a valid "leaving" record: the holder was removed
  kMalformed,     // size, JSON, fields or version
  kBadSignature,  // forged, or signed by a key other than the claimed node id
  kDuplicate,     // the record held already (same seq): nothing new
  kReplay,        // seq below the one held (or not above the leaving tombstone)
  kExpired,       // timestamp + ttl <= now
  kFuture,        // timestamp more than max_clock_skew_ms ahead of now
  kOverCapacity,  // the model already holds max_parts_per_model records
};

struct DeclarationTableLimits {
  int64_t max_clock_skew_ms = 5 * 60 * 1000;
  uint32_t max_ttl_s = 300;               // longer claimed ttls are cut to this
  size_t max_parts_per_model = 1u << 16;  // records (node, part) per model
};

std::string_view IngestOutcomeName(IngestOutcome o);

class DeclarationTable {
 public:
  explicit DeclarationTable(DeclarationTableLimits limits = {}) : limits_(limits) {}

  // Verifies and ingests a wire record. `detail` (optional) receives the
  // reason when the record is dropped.
  IngestOutcome Ingest(std::string_view record, int64_t now_ms, std::string* detail = nullptr);
  // Ingests an already verified declaration (e.g. this node's own); the same
  // replay / expiry / leaving rules apply.
  IngestOutcome IngestVerified(const Declaration& d, int64_t now_ms);

  // Drops expired records and tombstones.
  void Expire(int64_t now_ms);

  // Live (unexpired) declaration parts of `model`, ordered by (node id, part).
  std::vector<Declaration> Live(std::string_view model, int64_t now_ms) const;
  // Models with at least one live part, sorted.
  std::vector<std::string> Models(int64_t now_ms) const;
  // Stored parts, live or not yet expired away.
  size_t size() const { return parts_.size(); }

 private:
  using Key = std::tuple<std::string, std::string, uint32_t>;  // node, model, part
  using Map = std::map<Key, Declaration>;
  using HolderKey = std::pair<std::string, std::string>;         // node, model
  struct Tombstone {
    uint64_t seq;
    int64_t expires_ms;
  };
  // Erases parts_[it], keeping per_model_ in step; returns the next iterator.
  Map::iterator Erase(Map::iterator it);

  DeclarationTableLimits limits_;
  Map parts_;
  std::map<std::string, size_t, std::less<>> per_model_;  // parts_ entries per model
  std::map<HolderKey, Tombstone> tombstones_;
};

}  // namespace tenzro::swarm
