#include "dispatch/exec_calls.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>

#include "dispatch/forward.h"
#include "dispatch/spot_check.h"

namespace tenzro::dispatch {
namespace {

using Clock = std::chrono::steady_clock;

// One RunCalls' remote calls, shared with the pool tasks: a task that starts
// after every call was claimed (by the caller) touches nothing else.
struct CallGroup {
  std::vector<Call*> calls;
  std::function<void(Call&)> run;  // valid while the caller waits in RunCalls
  std::atomic<size_t> next{0};     // the next unclaimed call
  std::mutex mu;
  std::condition_variable cv;
  size_t finished = 0;  // guarded by mu

  // Runs the next unclaimed call; false when none is left.
  bool RunOne() {
    const size_t i = next.fetch_add(1);
    if (i >= calls.size()) return false;
    run(*calls[i]);
    std::lock_guard<std::mutex> lock(mu);
    if (++finished == calls.size()) cv.notify_all();
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

std::chrono::milliseconds CallTimeout(const HolderBatch& b, const std::map<std::string, HolderStats>& stats,
                                      const ForwardOptions& opt, bool adaptive) {
  auto st = stats.find(b.node_id);
  if (!adaptive || b.transport == Transport::kLocal || st == stats.end() || !st->second.measured ||
      st->second.rows_per_s <= 0)
    return opt.holder_timeout;
  const double expect_ms = st->second.rtt_ms + b.rows / st->second.rows_per_s * 1000.0;
  const auto t = std::chrono::milliseconds(static_cast<int64_t>(opt.timeout_factor * expect_ms));
  return std::clamp(t, std::min(opt.min_timeout, opt.holder_timeout), opt.holder_timeout);
}

void FillRequest(Call& c, const ForwardInput& in, RowType wire, uint64_t request_id, bool round_local) {
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
    if (local && round_local) RoundRows(eb.rows, wire);
  }
}

void RunCalls(std::vector<Call>& calls, const std::function<Executor*(Transport)>& executor_for,
              HolderStatsTable& stats, ThreadPool& pool) {
  auto run = [&](Call& c) {
    Executor* ex = executor_for(c.batch.transport);
    const bool remote = c.remote();
    if (remote) stats.Begin(c.batch.node_id, c.batch.rows);
    const auto t0 = c.sent = Clock::now();
    c.resp = ex ? ex->Exec(c.target(), c.req, c.timeout)
                : Result<ExecResponse>(Error::Unsupported("no {} executor", TransportName(c.batch.transport)));
    if (c.resp) {
      if (auto m = MatchAnswer(c.req, *c.resp); !m) c.resp = m.error();
    }
    c.rtt_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    const double compute_ms = c.resp ? c.resp->compute_us / 1000.0 : 0;
    if (remote) stats.End(c.batch.node_id, c.batch.rows, c.resp && !c.resp->error, c.rtt_ms, compute_ms);
  };
  auto group = std::make_shared<CallGroup>();
  group->run = run;
  Call* local_call = nullptr;
  for (Call& c : calls) {
    if (c.remote()) group->calls.push_back(&c);
    else local_call = &c;
  }
  for (size_t i = 0; i < group->calls.size(); ++i) pool.Submit([group] { group->RunOne(); });
  if (local_call) run(*local_call);
  while (group->RunOne()) {
  }
  std::unique_lock<std::mutex> lock(group->mu);
  group->cv.wait(lock, [&] { return group->finished == group->calls.size(); });
}

}  // namespace tenzro::dispatch
