#include "swarm/declaration_table.h"

#include <algorithm>
#include <set>

namespace tenzro::swarm {

std::string_view IngestOutcomeName(IngestOutcome o) {
  switch (o) {
    case IngestOutcome::kAccepted: return "accepted";
    case IngestOutcome::kLeft: return "left";
    case IngestOutcome::kMalformed: return "malformed";
    case IngestOutcome::kBadSignature: return "bad_signature";
    case IngestOutcome::kDuplicate: return "duplicate";
    case IngestOutcome::kReplay: return "replay";
    case IngestOutcome::kExpired: return "expired";
    case IngestOutcome::kFuture: return "future";
    case IngestOutcome::kOverCapacity: return "over_capacity";
  }
  return "?";
}

IngestOutcome DeclarationTable::Ingest(std::string_view record, int64_t now_ms, std::string* detail) {
  auto d = DecodeRecord(record);
  if (!d) {
    if (detail) *detail = d.error().ToString();
    return d.error().code() == ErrorCode::kPermissionDenied ? IngestOutcome::kBadSignature : IngestOutcome::kMalformed;
  }
  IngestOutcome o = IngestVerified(*d, now_ms);
  if (detail && o != IngestOutcome::kAccepted && o != IngestOutcome::kLeft) {
    *detail = fmt::format("{} seq {} from {}", IngestOutcomeName(o), d->seq, d->node_id);
  }
  return o;
}

DeclarationTable::Map::iterator DeclarationTable::Erase(Map::iterator it) {
  auto m = per_model_.find(std::get<1>(it->first));
  if (m != per_model_.end() && --m->second == 0) per_model_.erase(m);
  return parts_.erase(it);
}

IngestOutcome DeclarationTable::IngestVerified(const Declaration& signed_d, int64_t now_ms) {
  Declaration d = signed_d;
  d.ttl_s = std::min(d.ttl_s, limits_.max_ttl_s);
  if (d.expires_ms() <= now_ms) return IngestOutcome::kExpired;
  if (d.timestamp_ms > now_ms + limits_.max_clock_skew_ms) return IngestOutcome::kFuture;
  HolderKey hk{d.node_id, d.model};
  auto tomb = tombstones_.find(hk);
  if (tomb != tombstones_.end()) {
    if (tomb->second.expires_ms > now_ms && d.seq <= tomb->second.seq) return IngestOutcome::kReplay;
    tombstones_.erase(tomb);
  }
  Key key{d.node_id, d.model, d.part};
  auto it = parts_.find(key);
  if (it != parts_.end() && it->second.expires_ms() > now_ms && d.seq <= it->second.seq)
    return d.seq == it->second.seq ? IngestOutcome::kDuplicate : IngestOutcome::kReplay;

  // Parts of (node, model) beyond the new part count, or older than a
  // leaving record, are gone.
  auto lo = parts_.lower_bound(Key{d.node_id, d.model, 0});
  while (lo != parts_.end() && std::get<0>(lo->first) == d.node_id && std::get<1>(lo->first) == d.model) {
    bool drop = d.state == HolderState::kLeaving || (lo->second.seq < d.seq && std::get<2>(lo->first) >= d.parts);
    lo = drop ? Erase(lo) : std::next(lo);
  }
  if (d.state == HolderState::kLeaving) {
    tombstones_[hk] = Tombstone{d.seq, d.expires_ms()};
    return IngestOutcome::kLeft;
  }
  it = parts_.find(key);
  if (it == parts_.end()) {
    size_t& n = per_model_[d.model];
    if (n >= limits_.max_parts_per_model) {
      if (n == 0) per_model_.erase(d.model);
      return IngestOutcome::kOverCapacity;
    }
    ++n;
    parts_.emplace(key, std::move(d));
  } else {
    it->second = std::move(d);
  }
  return IngestOutcome::kAccepted;
}

void DeclarationTable::Expire(int64_t now_ms) {
  for (auto it = parts_.begin(); it != parts_.end();) {
    it = it->second.expires_ms() <= now_ms ? Erase(it) : std::next(it);
  }
  for (auto it = tombstones_.begin(); it != tombstones_.end();) {
    it = it->second.expires_ms <= now_ms ? tombstones_.erase(it) : std::next(it);
  }
}

std::vector<Declaration> DeclarationTable::Live(std::string_view model, int64_t now_ms) const {
  std::vector<Declaration> out;
  for (const auto& [key, d] : parts_) {
    if (std::get<1>(key) == model && d.expires_ms() > now_ms) out.push_back(d);
  }
  return out;
}

std::vector<std::string> DeclarationTable::Models(int64_t now_ms) const {
  std::set<std::string> models;
  for (const auto& [key, d] : parts_) {
    if (d.expires_ms() > now_ms) models.insert(std::get<1>(key));
  }
  return {models.begin(), models.end()};
}

}  // namespace tenzro::swarm
