#include "dispatch/exec_calls.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>

#include "dispatch/forward.h"
#include "dispatch/spot_check.h"

namespace tenzro::dispatch {
namespace {

using Clock = std::chrono::steady_clock;

// One remote call as it runs: owned together by the caller's RunCalls and the
// pool task, so a loser left running after RunCalls returned still has its
// request and answer.
struct Attempt {
  Executor* ex = nullptr;
  HolderTarget target;
  uint64_t rows = 0;
  bool is_hedge = false;
  ExecRequest req;
  std::chrono::milliseconds timeout{0};
  Clock::time_point queued{};  // when it was handed to the pool
  CancelToken cancel;
  // Written by the thread that runs it, read once `done` (group mutex).
  Result<ExecResponse> resp = Error::Internal("not run");
  Clock::time_point sent{};
  double rtt_ms = 0;
  bool done = false;  // guarded by the group's mu

  // A good answer: every expert computed.
  bool Complete() const {
    if (!resp || resp->error) return false;
    for (const ExecResult& r : resp->experts)
      if (r.error) return false;
    return true;
  }
};

// Shared with the pool tasks.
struct CallGroup {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::shared_ptr<Attempt>> queue;  // not started yet; guarded by mu
  HolderStatsTable* stats = nullptr;

  // Runs `a` on this thread (stats, executor, answer check) and marks it done.
  void Run(Attempt& a) {
    if (a.cancel.cancelled()) {  // lost before it started
      std::lock_guard<std::mutex> lock(mu);
      a.resp = Error::Unavailable("cancelled before it started");
      a.done = true;
      cv.notify_all();
      return;
    }
    stats->Begin(a.target.node_id, a.rows);
    const auto t0 = Clock::now();
    {
      std::lock_guard<std::mutex> lock(mu);
      a.sent = t0;
    }
    cv.notify_all();  // the caller's hedge clock for this call starts now
    Result<ExecResponse> r = a.ex ? a.ex->ExecCancellable(a.target, a.req, a.timeout, a.cancel)
                                  : Result<ExecResponse>(Error::Unsupported("no {} executor",
                                                                            TransportName(a.target.transport)));
    if (r) {
      if (auto m = MatchAnswer(a.req, *r); !m) r = m.error();
    }
    const double rtt_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (a.cancel.cancelled() && a.is_hedge) stats->Abandon(a.target.node_id, a.rows);
    else if (a.cancel.cancelled()) stats->End(a.target.node_id, a.rows, true, rtt_ms, 0);  // a lower bound
    else stats->End(a.target.node_id, a.rows, r && !r->error, rtt_ms, r ? r->compute_us / 1000.0 : 0);
    std::lock_guard<std::mutex> lock(mu);
    a.resp = std::move(r);
    a.rtt_ms = rtt_ms;
    a.done = true;
    cv.notify_all();
  }
  // Runs the next queued attempt; false when none is queued.
  bool RunOne() {
    std::shared_ptr<Attempt> a;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (queue.empty()) return false;
      a = std::move(queue.front());
      queue.pop_front();
    }
    Run(*a);
    return true;
  }
};

}  // namespace

CallOutcome Call::Outcome() const {
  CallOutcome o;
  o.node_id = batch.node_id;
  o.remote = remote();
  if (!resp || resp->error) {
    o.status = resp ? CallStatus::kErrorFrame : CallStatus::kFailed;
    o.error = resp ? *resp->error : resp.error();
    for (const ExecBatch& eb : req.experts) o.experts.push_back({eb.expert, std::nullopt});
    return o;
  }
  o.status = CallStatus::kAnswered;
  for (const ExecResult& r : resp->experts) o.experts.push_back({r.expert, r.error});
  return o;
}

Result<void> MatchAnswer(const ExecRequest& req, const ExecResponse& resp) {
  if (resp.request_id != req.request_id)
    return Error::Corruption("answer is for request {}, not {}", resp.request_id, req.request_id);
  if (resp.error) return Ok();
  if (resp.d_model != req.d_model || resp.layer != req.layer || resp.experts.size() != req.experts.size())
    return Error::Corruption("answer (layer {}, d_model {}, {} experts) does not match the request (layer {}, "
                             "d_model {}, {} experts)",
                             resp.layer, resp.d_model, resp.experts.size(), req.layer, req.d_model,
                             req.experts.size());
  for (size_t i = 0; i < req.experts.size(); ++i) {
    const ExecResult& e = resp.experts[i];
    if (e.expert != req.experts[i].expert || (!e.error && e.n_rows != req.experts[i].n_rows))
      return Error::Corruption("answer entry {} is expert {} with {} rows, expected expert {} with {}", i, e.expert,
                               e.n_rows, req.experts[i].expert, req.experts[i].n_rows);
  }
  return Ok();
}

int SlowStartRoundTrips(uint64_t bytes) {
  if (bytes == 0) return 0;
  return static_cast<int>(std::ceil(std::log2(1.0 + static_cast<double>(bytes) / 12000.0)));
}

std::chrono::milliseconds CallTimeout(const HolderBatch& b, const std::map<std::string, HolderStats>& stats,
                                      const ForwardOptions& opt, bool adaptive, uint64_t wire_bytes) {
  auto st = stats.find(b.node_id);
  if (!adaptive || b.transport == Transport::kLocal || st == stats.end() || !st->second.measured ||
      st->second.rows_per_s <= 0)
    return opt.holder_timeout;
  // The first round trip is in the fit's base already.
  const int extra_trips = std::max(0, SlowStartRoundTrips(wire_bytes) - 1);
  // The rows already queued at the holder (this node's other calls) run first.
  const double rows = static_cast<double>(b.rows) + std::max(0.0, st->second.rows_queued);
  const double expect_ms = st->second.rtt_ms * (1 + extra_trips) + rows / st->second.rows_per_s * 1000.0;
  const auto t = std::chrono::milliseconds(static_cast<int64_t>(opt.timeout_factor * expect_ms));
  return std::clamp(t, std::min(opt.min_timeout, opt.holder_timeout), opt.holder_timeout);
}

void FillRequest(Call& c, const ForwardInput& in, RowType wire, uint64_t request_id) {
  const bool local = !c.remote();
  c.req.request_id = request_id;
  c.req.model = in.model;
  c.req.layer = in.layer;
  c.req.d_model = static_cast<uint32_t>(in.d_model);
  c.req.dtype = local ? RowType::kF32 : wire;
  c.req.deadline_ms = static_cast<uint32_t>(c.timeout.count());
  for (const PlanItem& it : c.batch.items) {
    ExecBatch& eb = c.req.experts.emplace_back();
    eb.expert = it.expert;
    eb.n_rows = static_cast<uint32_t>(it.tokens.size());
    eb.rows.resize(it.tokens.size() * in.d_model);
    for (size_t i = 0; i < it.tokens.size(); ++i)
      std::memcpy(eb.rows.data() + i * in.d_model, in.x + it.tokens[i] * in.d_model, in.d_model * sizeof(float));
    if (local) RoundRows(eb.rows, wire);
  }
}

void RunCalls(std::vector<Call>& calls, const std::function<Executor*(Transport)>& executor_for,
              HolderStatsTable& stats, ThreadPool& pool, const HedgePolicy* hedge) {
  auto group = std::make_shared<CallGroup>();
  group->stats = &stats;
  auto launch = [&](Call& c, bool is_hedge) {
    auto a = std::make_shared<Attempt>();
    a->ex = executor_for(c.batch.transport);
    a->target = c.target();
    a->rows = c.batch.rows;
    a->is_hedge = is_hedge;
    a->req = std::move(c.req);
    a->timeout = c.timeout;
    a->queued = Clock::now();
    {
      std::lock_guard<std::mutex> lock(group->mu);
      group->queue.push_back(a);
    }
    pool.Submit([group] { group->RunOne(); });
    return a;
  };
  // Slot i: calls[i]'s attempt and its hedge (with the hedge's call).
  struct Slot {
    std::shared_ptr<Attempt> first, second;
    Call second_call;
    std::optional<Clock::time_point> hedge_at;
    bool resolved = false;
    bool second_won = false;
  };
  std::vector<Slot> slots(calls.size());
  Call* local_call = nullptr;
  for (size_t i = 0; i < calls.size(); ++i) {
    if (!calls[i].remote()) {
      local_call = &calls[i];
      slots[i].resolved = true;
      continue;
    }
    slots[i].first = launch(calls[i], false);
  }
  if (local_call) {
    Executor* ex = executor_for(local_call->batch.transport);
    const auto t0 = local_call->sent = Clock::now();
    local_call->resp = ex ? ex->Exec(local_call->target(), local_call->req, local_call->timeout)
                          : Result<ExecResponse>(Error::Unsupported("no local executor"));
    if (local_call->resp)
      if (auto m = MatchAnswer(local_call->req, *local_call->resp); !m) local_call->resp = m.error();
    local_call->rtt_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  }

  std::unique_lock<std::mutex> lock(group->mu);
  for (;;) {
    bool all = true;
    std::optional<Clock::time_point> wake;
    std::vector<size_t> to_hedge;
    const auto now = Clock::now();
    for (size_t i = 0; i < slots.size(); ++i) {
      Slot& sl = slots[i];
      if (sl.resolved) continue;
      const Attempt& f = *sl.first;
      if (sl.second && sl.second->done && sl.second->Complete()) {
        sl.resolved = sl.second_won = true;
      } else if (f.done && (f.resp || !sl.second || sl.second->done)) {
        sl.resolved = true;  // its own answer, or its failure with no hedge left to wait for
      } else {
        all = false;
        if (!sl.second && hedge && f.sent != Clock::time_point{}) {
          if (!sl.hedge_at) {
            const auto after = hedge->after(calls[i]);
            sl.hedge_at = after ? f.sent + *after : Clock::time_point::max();
          }
          if (*sl.hedge_at <= now) to_hedge.push_back(i);
          else if (*sl.hedge_at != Clock::time_point::max()) wake = wake ? std::min(*wake, *sl.hedge_at) : *sl.hedge_at;
        }
      }
    }
    if (all) break;
    if (!to_hedge.empty()) {
      lock.unlock();
      for (size_t i : to_hedge) {
        Slot& sl = slots[i];
        std::optional<Call> h = hedge->make(calls[i]);
        sl.hedge_at = Clock::time_point::max();  // one hedge per call
        if (!h) continue;
        sl.second_call = std::move(*h);
        sl.second_call.hedge = true;
        auto a = launch(sl.second_call, true);
        lock.lock();
        sl.second = a;
        lock.unlock();
      }
      lock.lock();
      continue;
    }
    // A saturated pool: run a queued call here — at once without hedging;
    // with hedging only once it waited kSteal for a pool thread, since this
    // thread is blocked while it runs one (and cannot hedge meanwhile).
    // (20 ms: longer than a pool thread takes to wake on a loaded machine; a
    // call taken here too early is one that cannot be hedged.)
    constexpr auto kSteal = std::chrono::milliseconds(20);
    if (!group->queue.empty()) {
      const auto steal_at = hedge ? group->queue.front()->queued + kSteal : now;
      if (steal_at <= now) {
        lock.unlock();
        group->RunOne();
        lock.lock();
        continue;
      }
      wake = wake ? std::min(*wake, steal_at) : steal_at;
    }
    // Until an attempt starts (its hedge time is known then) or finishes, or
    // the next hedge time.
    if (wake) group->cv.wait_until(lock, *wake);
    else group->cv.wait(lock);
  }
  // Outcomes into the calls; losers appended.
  std::vector<Call> losers;
  const auto end = Clock::now();
  for (size_t i = 0; i < slots.size(); ++i) {
    Slot& sl = slots[i];
    if (!sl.first) continue;
    Attempt& win = sl.second_won ? *sl.second : *sl.first;
    Attempt* lose = sl.second_won ? sl.first.get() : sl.second.get();
    if (lose) {
      Call l;
      l.batch = sl.second_won ? calls[i].batch : sl.second_call.batch;
      l.timeout = sl.second_won ? calls[i].timeout : sl.second_call.timeout;
      l.hedge = !sl.second_won;
      l.lost = true;
      l.sent = lose->sent;
      if (lose->done) {
        l.rtt_ms = lose->rtt_ms;
        l.resp = lose->resp ? Result<ExecResponse>(Error::Unavailable("answered after {} ({})",
                                                                      win.target.node_id.substr(0, 12),
                                                                      sl.second_won ? "its hedge" : "the original"))
                            : lose->resp;
      } else {
        l.rtt_ms = lose->sent == Clock::time_point{}
                       ? 0
                       : std::chrono::duration<double, std::milli>(end - lose->sent).count();
        l.resp = Error::Unavailable("cancelled: {} answered first", win.target.node_id.substr(0, 12));
      }
      losers.push_back(std::move(l));
      lose->cancel.Cancel();
    }
    if (sl.second_won) {
      calls[i].batch = std::move(sl.second_call.batch);
      calls[i].timeout = sl.second_call.timeout;
      calls[i].hedge = true;
    }
    calls[i].req = std::move(win.req);
    calls[i].resp = std::move(win.resp);
    calls[i].sent = win.sent;
    calls[i].rtt_ms = win.rtt_ms;
  }
  lock.unlock();
  for (Call& l : losers) calls.push_back(std::move(l));
}

}  // namespace tenzro::dispatch
