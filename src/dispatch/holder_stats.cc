#include "dispatch/holder_stats.h"

#include <algorithm>

#include "net/rate_limit.h"
#include "net/url.h"

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
  // Only what this node measured counts: the whole call's wall time for
  // `rows` rows. The compute time the holder reports is not used, so a
  // holder cannot attract work by claiming to be fast. The time of a batch
  // is fitted as base + rows * per_row by exponentially weighted least
  // squares over (rows, rtt) samples.
  (void)compute_ms;
  const double x = static_cast<double>(rows), y = std::max(0.0, rtt_ms);
  const bool stale = now - e.last_sample > stale_after_;
  if (e.s.measured && !stale) {
    const double fitted = e.s.rtt_ms + (e.s.rows_per_s > 0 ? x / e.s.rows_per_s * 1000.0 : 0.0);
    if (fitted > 0) e.ratios[e.n_ratios++ % kRatioWindow] = static_cast<float>(y / fitted);
  } else {
    e.n_ratios = 0;
  }
  e.last_sample = now;
  if (!e.s.measured || stale) {
    e.fit = Fit{x, y, x * x, x * y};
    e.s.measured = true;
  } else {
    e.fit.x += alpha_ * (x - e.fit.x);
    e.fit.y += alpha_ * (y - e.fit.y);
    e.fit.xx += alpha_ * (x * x - e.fit.xx);
    e.fit.xy += alpha_ * (x * y - e.fit.xy);
  }
  const Fit& f = e.fit;
  const double var = f.xx - f.x * f.x, cov = f.xy - f.x * f.y;
  double per_row = var > 1e-6 * std::max(1.0, f.x * f.x) ? cov / var : 0;
  double base = f.y - per_row * f.x;
  if (per_row <= 0 || base < 0) {
    // Calls of one size (or noise): all of the time is per row.
    per_row = f.x > 0 ? f.y / f.x : 0;
    base = f.x > 0 ? 0 : f.y;
  }
  e.s.rtt_ms = base;
  e.s.rows_per_s = per_row > 0 ? 1000.0 / per_row : 0;
}

void HolderStatsTable::Abandon(const std::string& node, uint64_t rows) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = holders_[node];
  e.s.rows_queued = std::max(0.0, e.s.rows_queued - static_cast<double>(rows));
}

std::optional<std::chrono::microseconds> HolderStatsTable::HedgeAfter(const std::string& node, uint64_t rows,
                                                                      double factor, std::chrono::microseconds floor,
                                                                      TimePoint now) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = holders_.find(node);
  if (it == holders_.end()) return std::nullopt;
  const Entry& e = it->second;
  if (!e.s.measured || now - e.last_sample > stale_after_ || e.n_ratios < kMinRatioSamples) return std::nullopt;
  const size_t n = std::min(e.n_ratios, kRatioWindow);
  const float worst = *std::max_element(e.ratios.begin(), e.ratios.begin() + n);
  const double fitted_ms =
      e.s.rtt_ms + (e.s.rows_per_s > 0 ? static_cast<double>(rows) / e.s.rows_per_s * 1000.0 : 0.0);
  const double us = factor * std::max(1.0f, worst) * fitted_ms * 1000.0;
  return std::max(floor, std::chrono::microseconds(static_cast<int64_t>(us)));
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

std::string HolderStatsTable::AddressKey(const std::string& endpoint) {
  if (endpoint.empty()) return "";
  std::string host = endpoint;
  if (auto ep = net::ParseEndpoint(endpoint)) host = ep->host;
  return net::IpPrefix(host, 32, 64);
}

void HolderStatsTable::BanAddress(const std::string& endpoint, TimePoint until) {
  const std::string key = AddressKey(endpoint);
  if (key.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  TimePoint& t = banned_addresses_[key];
  t = std::max(t, until);
}

std::set<std::string> HolderStatsTable::Excluded(const std::vector<swarm::Declaration>& live, const std::string& self,
                                                 TimePoint now) {
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(banned_addresses_, [&](const auto& kv) { return kv.second <= now; });
  std::set<std::string> out;
  for (const auto& [id, e] : holders_)
    if (e.banned_until > now) out.insert(id);
  if (banned_addresses_.empty()) return out;
  for (const swarm::Declaration& d : live) {
    if (d.node_id == self || out.count(d.node_id)) continue;
    for (const auto& ep : d.endpoints) {
      auto it = banned_addresses_.find(AddressKey(ep.address));
      if (it == banned_addresses_.end()) continue;
      Entry& e = holders_[d.node_id];
      e.banned_until = std::max(e.banned_until, it->second);
      out.insert(d.node_id);
      break;
    }
  }
  return out;
}

std::map<std::string, double> HolderStatsTable::BannedAddresses(TimePoint now) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, double> out;
  for (const auto& [a, until] : banned_addresses_)
    if (until > now) out[a] = std::chrono::duration<double, std::milli>(until - now).count();
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
