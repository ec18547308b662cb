// tenzro dispatch: one set of executor calls of a forward — the request of
// each holder batch, its deadline, and running the calls at once.
//
// RunCalls runs the remote calls on a call pool (a core ThreadPool the
// Dispatcher owns, created once) and the local call on the calling thread,
// which then takes any remote call no pool thread has started yet: a
// saturated pool (concurrent forwards), or a caller that is itself a thread
// of that pool, never waits on work queued behind it. No thread is created
// per call. Every answer is checked against its request (MatchAnswer); a
// mismatch counts as a failed call. Remote calls feed the holder stats
// (Begin/End; the planner never weighs this node).
// Thread-safety: RunCalls may run concurrently on one pool; each `calls`
// vector belongs to one caller.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"
#include "dispatch/exec_frame.h"
#include "dispatch/executor.h"
#include "dispatch/failover.h"
#include "dispatch/holder_stats.h"
#include "dispatch/planner.h"

namespace tenzro::dispatch {

struct ForwardInput;    // forward.h
struct ForwardOptions;  // forward.h

struct Call {
  HolderBatch batch;
  ExecRequest req;
  std::chrono::milliseconds timeout{0};
  Result<ExecResponse> resp = Error::Internal("not run");
  std::chrono::steady_clock::time_point sent{};
  double rtt_ms = 0;  // whole call, as seen here

  HolderTarget target() const { return {batch.node_id, batch.transport, batch.endpoint}; }
  bool remote() const { return batch.transport != Transport::kLocal; }
  // The call as the failover policy reads it.
  CallOutcome Outcome() const;
};

// kCorruption unless `resp` answers `req`: same request id and, unless it is
// an error frame, the same layer, d_model and experts (in order, with the
// requested rows where an entry has no error).
Result<void> MatchAnswer(const ExecRequest& req, const ExecResponse& resp);

// The deadline of a call: holder_timeout, or (adaptive) sooner for a
// measured remote holder: max(min_timeout, timeout_factor x its expected
// time), at most holder_timeout.
std::chrono::milliseconds CallTimeout(const HolderBatch& b, const std::map<std::string, HolderStats>& stats,
                                      const ForwardOptions& opt, bool adaptive);

// Fills `c.req` for `c.batch` (c.timeout set): experts in item order, rows
// gathered from in.x. Local calls take f32 rows; with `round_local` they are
// first rounded to the wire dtype, so a local re-run sees what a remote
// holder saw.
void FillRequest(Call& c, const ForwardInput& in, RowType wire, uint64_t request_id, bool round_local);

// Runs every call (see the file comment) and returns when all returned:
// each call's resp, sent and rtt_ms are set. `executor_for` may return null
// (the call fails with kUnsupported).
void RunCalls(std::vector<Call>& calls, const std::function<Executor*(Transport)>& executor_for,
              HolderStatsTable& stats, ThreadPool& pool);

}  // namespace tenzro::dispatch
