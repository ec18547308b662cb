// tenzro dispatch: the spot-check step of a distributed forward (forward.h
// step 6; who is wrong is spot_check.h's DecideSpotCheck, docs/security.md).
//
// RunSpotChecks takes the forward's remote results (per expert: the holder
// that answered and the request id of its call) and the rows they put in
// `ys`, and
//   1. selects a seeded fraction of them (SpotCheckSelected),
//   2. has each re-run by another replica (hooks.rerun: this node first),
//   3. has a disagreement between two remote answers settled by a third
//      replica (a result stays inconclusive when none answers),
//   4. bans the holders found wrong (hooks.ban, once, with all of them and
//      the endpoints whose answers were wrong) and puts the verified rows in
//      place of the wrong ones,
//   5. has every other result of a banned holder recomputed elsewhere;
//      one no other replica recomputes is reported lost.
// The caller owns planning, calls, their reports and the ban table (the
// hooks); this file holds the procedure. Not thread-safe (one per forward).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "dispatch/executor.h"
#include "dispatch/forward_report.h"
#include "dispatch/spot_check.h"
#include "runtime/routed_batches.h"

namespace tenzro::dispatch {

// One re-run answer: who computed it, its rows (tokens in order).
struct SpotAnswer {
  HolderTarget by;
  std::vector<float> rows;
};

// Per expert, the node ids not to ask.
using SpotAvoid = std::map<int, std::set<std::string>>;

struct SpotCheckHooks {
  // Re-runs each of `experts` (all its tokens) on a replica not in
  // avoid.at(e); the answers that came back (an expert no replica answered
  // is absent). Called with no experts never.
  std::function<std::map<int, SpotAnswer>(const std::vector<int>& experts, const SpotAvoid& avoid)> rerun;
  // Bans the holders caught answering wrong rows (called at most once), with
  // the endpoints (HolderTarget::endpoint) that served each one's wrong rows:
  // the addresses the caller actually reached, not what a liar declared.
  std::function<void(const std::set<std::string>& liars,
                     const std::map<std::string, std::set<std::string>>& endpoints)>
      ban;
};

struct SpotCheckJob {
  std::string model;
  int layer = 0;
  size_t d_model = 0;
  const std::map<int, runtime::ExpertTokens>* by_expert = nullptr;  // tokens and routing slots per expert
  // expert -> (holder that answered it remotely, request id of that call)
  const std::map<int, std::pair<HolderTarget, uint64_t>>* answered = nullptr;
  SpotCheckOptions options;
  RowType wire = RowType::kF32;  // the tolerance's default (DefaultSpotTolerance)
};

struct SpotCheckRun {
  std::vector<SpotCheckRecord> records;  // one per selected result, by expert
  std::set<std::string> banned;          // liars, as passed to hooks.ban
  std::map<std::string, std::set<std::string>> banned_endpoints;  // liar -> endpoints that answered wrong
  int recomputed = 0;                    // step 5 results replaced
  std::map<int, Error> lost;             // step 5 results no replica recomputed (kUnavailable)
};

// REQUIRES: job.by_expert and job.answered set; ys holds the rows by
// routing slot (d_model floats each); every answered expert is in by_expert.
SpotCheckRun RunSpotChecks(const SpotCheckJob& job, std::span<float> ys, const SpotCheckHooks& hooks);

}  // namespace tenzro::dispatch
