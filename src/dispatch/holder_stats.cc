#include "dispatch/holder_stats.h"

#include <algorithm>

namespace tenzro::dispatch {

void HolderStatsTable::Begin(const std::string& node, uint64_t rows) {
  std::lock_guard<std::mutex> lock(mu_);
  holders_[node].s.rows_queued += static_cast<double>(rows);
}

void HolderStatsTable::End(const std::string& node, uint64_t rows, bool ok, double rtt_ms, double compute_ms,
                           TimePoint now) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = holders_[node];
  e.s.rows_queued = std::max(0.0, e.s.rows_queued - static_cast<double>(rows));
  ++e.calls;
  if (!ok) {
    ++e.errors;
    return;
  }
  const double net = std::max(0.0, rtt_ms - compute_ms);
  const double tput = compute_ms > 0 ? rows / (compute_ms / 1000.0) : 0;
  const bool stale = now - e.last_sample > stale_after_;
  e.last_sample = now;
  if (!e.s.measured || stale) {
    e.s.rtt_ms = net;
    e.s.rows_per_s = tput;
    e.s.measured = true;
    return;
  }
  e.s.rtt_ms += alpha_ * (net - e.s.rtt_ms);
  if (tput > 0) e.s.rows_per_s = e.s.rows_per_s > 0 ? e.s.rows_per_s + alpha_ * (tput - e.s.rows_per_s) : tput;
}

void HolderStatsTable::Ban(const std::string& node, TimePoint until) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = holders_[node];
  e.banned_until = std::max(e.banned_until, until);
}

std::set<std::string> HolderStatsTable::Banned(TimePoint now) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::set<std::string> out;
  for (const auto& [id, e] : holders_)
    if (e.banned_until > now) out.insert(id);
  return out;
}

std::map<std::string, HolderStats> HolderStatsTable::Snapshot(TimePoint now) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, HolderStats> out;
  for (const auto& [id, e] : holders_) {
    HolderStats& s = out[id] = e.s;
    if (s.measured && now - e.last_sample > stale_after_) s.measured = false;
  }
  return out;
}

nlohmann::json HolderStatsTable::ToJson(TimePoint now) const {
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [id, e] : holders_) {
    const double ban_ms =
        e.banned_until > now ? std::chrono::duration<double, std::milli>(e.banned_until - now).count() : 0.0;
    out.push_back({{"node_id", id},
                   {"measured", e.s.measured && now - e.last_sample <= stale_after_},
                   {"rtt_ms", e.s.rtt_ms},
                   {"rows_per_s", e.s.rows_per_s},
                   {"rows_queued", e.s.rows_queued},
                   {"calls", e.calls},
                   {"errors", e.errors},
                   {"banned_for_ms", ban_ms}});
  }
  return out;
}

}  // namespace tenzro::dispatch
