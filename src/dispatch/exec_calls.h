// tenzro dispatch: one set of executor calls of a forward — the request of
// each holder batch, its deadline, and running the calls at once.
//
// RunCalls runs the remote calls on a call pool (a core ThreadPool the
// Dispatcher owns, created once) and the local call on the calling thread,
// which then takes any remote call no pool thread has started yet (with
// hedging, once it waited 2 ms: the caller must stay free to send hedges): a
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
#include <optional>
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
  bool hedge = false;  // sent because another holder's call ran past its hedge time
  bool lost = false;   // a hedged pair's loser: cancelled, its answer (if any) dropped

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
// time), at most holder_timeout. The expected time is the holder's fitted
// base plus its fitted time for the rows and for the rows this node already
// has queued there (HolderStats::rows_queued), with the base paid once more for
// every round trip that `wire_bytes` (the rows one way) need from a cold
// congestion window (SlowStartRoundTrips): on a long path a large call
// (a prefill's) takes several round trips before its last byte arrives,
// which a fit over small decode calls does not show.
std::chrono::milliseconds CallTimeout(const HolderBatch& b, const std::map<std::string, HolderStats>& stats,
                                      const ForwardOptions& opt, bool adaptive, uint64_t wire_bytes = 0);

// Round trips a transfer of `bytes` needs in slow start from QUIC's initial
// window (10 packets of 1,200 bytes, doubling every round trip):
// ceil(log2(1 + bytes / 12,000)); 0 for no bytes.
int SlowStartRoundTrips(uint64_t bytes);

// Fills `c.req` for `c.batch` (c.timeout set): experts in item order, rows
// gathered from in.x. Remote calls send them as `wire`; a local call takes
// f32 rows rounded to `wire` first (runtime::RoundWireRows), so this node's
// own experts see what a holder would.
void FillRequest(Call& c, const ForwardInput& in, RowType wire, uint64_t request_id);

// Hedged calls. A remote call still running `after(call)` after it left
// (nullopt: never) gets a hedge: `make(call)`, the same experts and rows
// planned onto another holder as one remote call (nullopt: none can take
// them all). The first good answer of the pair wins — the original's answer
// of any kind, or the hedge's when it answered every expert — and the other
// call is cancelled (ExecCancellable: QUIC resets its stream; an HTTP loser
// runs to its answer or deadline on its pool thread, its answer dropped).
// When the original fails while its hedge runs, the hedge's answer is
// used. A cancelled original's elapsed time still counts as a sample of its
// holder (a lower bound of its time, so the planner sees it slow); a
// cancelled hedge leaves no sample.
struct HedgePolicy {
  std::function<std::optional<std::chrono::microseconds>(const Call&)> after;
  std::function<std::optional<Call>(const Call&)> make;
};

// Runs every call (see the file comment) and returns when each call has its
// outcome: resp, sent and rtt_ms are set. `executor_for` may return null
// (the call fails with kUnsupported). With `hedge`, a call whose hedge won
// is replaced in place by the hedge (Call::hedge), and every loser is
// appended after the calls given, with lost set and resp an error saying
// who answered first; losers still running are not waited for (they own
// their request and answer).
void RunCalls(std::vector<Call>& calls, const std::function<Executor*(Transport)>& executor_for,
              HolderStatsTable& stats, ThreadPool& pool, const HedgePolicy* hedge = nullptr);

}  // namespace tenzro::dispatch
