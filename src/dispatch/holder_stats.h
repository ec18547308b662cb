// tenzro dispatch: what this node has measured of each holder, and which
// holders are banned for a while after failing.
//
// Per holder (node id): the time of a call as this node measured it (wall
// time from send to answer), fitted as base + rows / throughput by
// exponentially weighted least squares over the calls' (rows, time); and the
// rows sent to it and not yet answered (across all forwards of this node).
// The compute time a holder reports about itself is never used: a holder
// that lies about its speed attracts no work (docs/security.md). The planner reads a Snapshot(); the
// forward calls Begin/End around every remote call and Ban when a holder
// errors or misses its deadline. A measurement older than `stale_after`
// counts as unmeasured again, so a holder that once looked slow (its first
// call pays the connection set-up) is probed again instead of being
// skipped forever. Times are passed in (steady clock), so tests can drive
// them.
//
// Bans by address: a node id is free, so a holder caught answering wrong
// rows (a spot check, spot_check_runner.h) is also banned by the address
// that served them (BanAddress): its IPv4 address, or its IPv6 /64 (one
// host usually owns a /64). Every holder whose declaration names an
// endpoint at a banned address is left out of plans until that ban ends
// (Excluded), so the liar restarted with a new key on the same host gets no
// work either. Honest holders behind the same address (one NAT, one host)
// sit the ban out with it: wrong rows from an address are evidence against
// whoever runs it. The address banned is the one the call reached, so a liar
// cannot get another holder's address banned by declaring it. Failure bans
// (timeouts, transport errors) stay per node id: honest holders on one host
// fail independently. This node's own id is never excluded.
// Thread-safety: every method may be called from any thread (one mutex).
#pragma once

#include <array>
#include <chrono>
#include <optional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dispatch/planner.h"

namespace tenzro::dispatch {

class HolderStatsTable {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  // `alpha`: weight of a new sample in the EMAs.
  explicit HolderStatsTable(double alpha = 0.3, std::chrono::milliseconds stale_after = std::chrono::seconds(10))
      : alpha_(alpha), stale_after_(stale_after) {}

  // `rows` were sent to `node`.
  void Begin(const std::string& node, uint64_t rows);
  // The call for those rows returned after `rtt_ms`. With ok, the fit
  // takes the sample (rows, rtt_ms); `compute_ms` (the holder's claim) is
  // ignored.
  void End(const std::string& node, uint64_t rows, bool ok, double rtt_ms, double compute_ms,
           TimePoint now = std::chrono::steady_clock::now());

  // Rows sent to `node` whose call was abandoned (a hedge that lost):
  // no longer queued, no sample, not an error.
  void Abandon(const std::string& node, uint64_t rows);
  // How long a call of `rows` rows to `node` may run before it is hedged
  // (exec_calls.h): `factor` x the p99 of its recent calls' times, scaled
  // to `rows` — the fitted time of `rows` rows x the largest ratio of a
  // call's time to its fitted time over the last kRatioWindow calls (with
  // 32 samples the largest is the ~p97-p99) — at least `floor`. nullopt
  // while the holder is unmeasured or has fewer than kMinRatioSamples.
  static constexpr size_t kRatioWindow = 32, kMinRatioSamples = 8;
  std::optional<std::chrono::microseconds> HedgeAfter(const std::string& node, uint64_t rows, double factor,
                                                      std::chrono::microseconds floor,
                                                      TimePoint now = std::chrono::steady_clock::now()) const;

  // Keeps `node` out of plans until `until` (extends, never shortens).
  void Ban(const std::string& node, TimePoint until);
  std::set<std::string> Banned(TimePoint now) const;
  // Keeps holders at `endpoint`'s address (AddressKey) out of plans until
  // `until` (extends, never shortens). An endpoint whose host is not an IP
  // address bans that host name.
  void BanAddress(const std::string& endpoint, TimePoint until);
  // Banned(now), plus every holder of `live` (but `self`) that declares an
  // endpoint at a banned address; those are banned by id too, until the
  // address's ban ends (so ToJson lists them).
  std::set<std::string> Excluded(const std::vector<swarm::Declaration>& live, const std::string& self,
                                 TimePoint now);
  // Addresses banned now -> milliseconds left.
  std::map<std::string, double> BannedAddresses(TimePoint now) const;
  // What an address ban covers: "203.0.113.7/32", "2001:db8::/64", from an
  // endpoint "host:port", "http://host:port" or a bare host; "" if empty.
  static std::string AddressKey(const std::string& endpoint);

  // Stats as of `now` (stale measurements reported as unmeasured).
  std::map<std::string, HolderStats> Snapshot(TimePoint now = std::chrono::steady_clock::now()) const;
  // [{"node_id", "rtt_ms", "rows_per_s", "rows_queued", "calls", "errors", "banned_for_ms"}]
  nlohmann::json ToJson(TimePoint now) const;

 private:
  struct Fit {
    double x = 0, y = 0, xx = 0, xy = 0;  // EMAs of rows, ms, rows^2, rows*ms
  };
  struct Entry {
    HolderStats s;
    Fit fit;
    uint64_t calls = 0, errors = 0;
    TimePoint banned_until{};
    TimePoint last_sample{};
    std::array<float, kRatioWindow> ratios{};  // call time / fitted time, a ring
    size_t n_ratios = 0;                       // samples ever (index of the next: n % window)
  };
  const double alpha_;
  const std::chrono::milliseconds stale_after_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> holders_;  // guarded by mu_
  std::map<std::string, TimePoint> banned_addresses_;  // AddressKey -> until; mu_
};

}  // namespace tenzro::dispatch
