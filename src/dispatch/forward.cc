#include "dispatch/forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "dispatch/exec_calls.h"
#include "dispatch/spot_check_runner.h"
#include "runtime/routed_batches.h"

namespace tenzro::dispatch {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double MsSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

Result<void> CheckInput(const ForwardInput& in, const ForwardOptions& opt) {
  if (in.n_tok < 0 || in.d_model <= 0 || static_cast<int>(in.routing.size()) != in.n_tok)
    return Error::InvalidArgument("forward: {} tokens, d_model {}, {} routings", in.n_tok, in.d_model,
                                  in.routing.size());
  const size_t n_val = static_cast<size_t>(in.n_tok) * in.d_model;
  for (size_t i = 0; i < n_val; ++i)
    if (!std::isfinite(in.x[i]))
      return Error::InvalidArgument("hidden state: token {} column {} is {}", i / in.d_model, i % in.d_model,
                                    std::isnan(in.x[i]) ? "NaN" : "Inf");
  if (opt.max_rounds < 1) return Error::InvalidArgument("forward: max_rounds {} < 1", opt.max_rounds);
  return Ok();
}

// Tokens (and their slot) per expert, as the local block groups them.
Result<std::map<int, runtime::ExpertTokens>> TokensByExpert(const ForwardInput& in,
                                                            const std::vector<size_t>& slot_of) {
  std::map<int, runtime::ExpertTokens> by_expert;
  for (int t = 0; t < in.n_tok; ++t)
    for (size_t k = 0; k < in.routing[t].experts.size(); ++k) {
      const int e = in.routing[t].experts[k].expert;
      if (e < 0) return Error::InvalidArgument("token {} is routed to expert {}", t, e);
      by_expert[e].push_back({t, slot_of[t] + k});
    }
  return by_expert;
}

std::vector<int> TokensOf(const runtime::ExpertTokens& toks) {
  std::vector<int> tokens;
  for (const auto& [t, slot] : toks) tokens.push_back(t);
  return tokens;
}

// The report line of a call; `start`: of the forward.
HolderCall ReportCall(const Call& c, int round, Clock::time_point start) {
  HolderCall hc;
  hc.round = round;
  hc.target = c.target();
  hc.experts = static_cast<int>(c.req.experts.size());
  hc.rows = c.batch.rows;
  hc.sent_ms = std::chrono::duration<double, std::milli>(c.sent - start).count();
  hc.rtt_ms = c.rtt_ms;
  hc.hedge = c.hedge;
  hc.lost = c.lost;
  if (!c.resp) {
    hc.error = c.resp.error();
    return hc;
  }
  hc.compute_ms = c.resp->compute_us / 1000.0;
  if (c.resp->error) hc.error = *c.resp->error;  // an error frame has no entries
  for (const ExecResult& r : c.resp->experts)
    if (r.error) ++hc.failed_experts;
  return hc;
}

}  // namespace

// One forward's working state.
struct Dispatcher::ForwardState {
  ForwardState(const ForwardInput& i, const ForwardOptions& o) : in(i), opt(o), start(Clock::now()) {}
  const ForwardInput& in;
  const ForwardOptions& opt;
  const Clock::time_point start;
  std::map<int, runtime::ExpertTokens> by_expert;
  std::vector<float> ys;                   // rows by routing slot
  std::vector<swarm::Declaration> live;    // read once, every round plans from it
  std::map<int, std::pair<HolderTarget, uint64_t>> answered;  // remote results (holder, request id)
  ForwardReport report;

  PlanItem ItemOf(int e) const { return {in.layer, e, TokensOf(by_expert.at(e))}; }
};

Dispatcher::Dispatcher(Sources sources, std::shared_ptr<Executor> local, std::shared_ptr<Executor> http,
                       std::shared_ptr<Executor> quic, DispatcherOptions options)
    : sources_(std::move(sources)),
      local_(std::move(local)),
      http_(std::move(http)),
      quic_(std::move(quic)),
      call_pool_(std::make_unique<ThreadPool>(std::max<size_t>(1, options.call_threads), "calls")) {}

Executor* Dispatcher::ExecutorFor(Transport t) const {
  switch (t) {
    case Transport::kLocal: return local_.get();
    case Transport::kQuic: return quic_.get();
    case Transport::kHttp: return http_.get();
  }
  return nullptr;
}

Result<Plan> Dispatcher::PlanWork(const std::string& model, const std::vector<PlanItem>& work,
                                  const std::set<std::tuple<std::string, int, int>>& excluded_items) {
  std::vector<swarm::Declaration> live;
  if (sources_.live) {
    TENZRO_TRY(live, sources_.live(model));
  }
  return PlanWith(model, work, live, excluded_items);
}

Plan Dispatcher::PlanWith(const std::string& model, const std::vector<PlanItem>& work,
                          const std::vector<swarm::Declaration>& live,
                          const std::set<std::tuple<std::string, int, int>>& excluded_items) {
  PlanInput in;
  in.self_node_id = sources_.self_node_id;
  if (sources_.local) in.local = sources_.local(model);
  in.live_view = &live;
  const auto now = Clock::now();
  in.stats = stats_.Snapshot(now);
  // Banned by id, or declared at an address banned for wrong outputs.
  in.excluded = stats_.Excluded(live, sources_.self_node_id, now);
  in.excluded_items = excluded_items;
  in.quic = quic_ != nullptr;
  return PlanDispatch(work, in);
}

Result<ForwardReport> Dispatcher::Forward(const ForwardInput& in, const ForwardOptions& opt, float* out) {
  ForwardState s(in, opt);
  TENZRO_CHECK_OK(CheckInput(in, opt));
  const std::vector<size_t> slot_of = runtime::RoutingSlots(in.routing);
  TENZRO_TRY(s.by_expert, TokensByExpert(in, slot_of));
  s.ys.assign(slot_of[in.n_tok] * in.d_model, 0.0f);
  std::map<int, std::vector<int>> tokens;
  for (const auto& [e, toks] : s.by_expert) tokens[e] = TokensOf(toks);
  FailoverPolicy policy(in.model, in.layer, std::move(tokens), {opt.on_missing, opt.max_rounds, opt.ban});

  // The declarations, once: every round plans from the same set.
  const auto t_live = Clock::now();
  if (sources_.live && !s.by_expert.empty()) {
    auto l = sources_.live(in.model);
    if (l) s.live = std::move(*l);
    else policy.SetDiscoveryError(l.error());  // what this node holds still runs
  }
  s.report.plan_ms += MsSince(t_live);

  while (policy.BeginRound() && RunRound(s, policy)) {
  }
  if (opt.spot_check.fraction > 0 && !s.answered.empty() && !policy.failing())
    for (const auto& [e, err] : SpotCheck(s, policy)) policy.Lost(e, err);

  // Missing experts: fail naming them, or drop and renormalise.
  TENZRO_TRY(const auto missing, policy.Finish());  // expert -> why
  std::vector<runtime::TokenRouting> routing = in.routing;
  for (const auto& [e, err] : missing) s.report.dropped.push_back({s.ItemOf(e), err});
  s.report.tokens_without_experts = RenormalizeRouting(routing, missing);

  const auto t_comb = Clock::now();
  runtime::CombineMoeBlock(routing, slot_of, s.ys.data(), in.shared, in.d_model, out);
  s.report.combine_ms = MsSince(t_comb);
  s.report.total_ms = MsSince(s.start);
  return std::move(s.report);
}

bool Dispatcher::RunRound(ForwardState& s, FailoverPolicy& policy) {
  const int round = policy.rounds() - 1;
  s.report.rounds = policy.rounds();
  const auto t_plan = Clock::now();
  Plan plan = PlanWith(s.in.model, policy.Work(), s.live, policy.excluded_items());
  s.report.plan_ms += MsSince(t_plan);
  if (policy.OnPlan(plan) == PlanStep::kStop) return false;

  // Deadlines adapted to what each holder is expected to take, except in the
  // last round. This node's own experts see their rows rounded to the wire
  // dtype, in and out (below), as a holder's do: a forward then computes the
  // same bits whichever of its experts are local (runtime/wire_rows.h).
  std::vector<Call> calls =
      MakeCalls(std::move(plan.batches), s.in, s.opt, /*adaptive=*/!policy.last_round());
  HedgePolicy hedge;
  hedge.after = [&](const Call& c) {
    return stats_.HedgeAfter(c.batch.node_id, c.batch.rows, s.opt.hedge_factor, s.opt.hedge_min);
  };
  hedge.make = [&](const Call& c) -> std::optional<Call> {
    // The same experts, never on that holder again in this hedge.
    std::set<FailoverPolicy::ItemKey> excluded = policy.excluded_items();
    for (const PlanItem& it : c.batch.items) excluded.insert({c.batch.node_id, it.layer, it.expert});
    Plan p = PlanWith(s.in.model, c.batch.items, s.live, excluded);
    if (p.batches.size() != 1 || !p.unheld.empty() || p.batches[0].transport == Transport::kLocal)
      return std::nullopt;
    std::vector<Call> h = MakeCalls(std::move(p.batches), s.in, s.opt, !policy.last_round());
    return std::move(h[0]);
  };
  const auto t_exec = Clock::now();
  RunCalls(calls, s.opt.hedge ? &hedge : nullptr);
  s.report.exec_ms += MsSince(t_exec);

  std::vector<CallOutcome> outcomes;
  for (const Call& c : calls) {
    if (c.hedge) ++hedges_sent_;
    if (c.hedge && !c.lost) ++hedges_won_;
    if (!c.lost) outcomes.push_back(c.Outcome());
  }
  const RoundDecision decision = policy.OnResults(outcomes, Clock::now());
  for (const HolderBan& b : decision.bans) Ban(b);
  // The answered rows into their slots.
  const size_t d = static_cast<size_t>(s.in.d_model);
  for (Call& c : calls) {
    s.report.calls.push_back(ReportCall(c, round, s.start));
    if (c.lost || !c.resp || c.resp->error) continue;
    for (ExecResult& r : c.resp->experts) {
      if (!decision.done.count(r.expert)) continue;
      if (!c.remote()) RoundRows(r.rows, s.opt.dtype);  // a holder's answer comes back rounded
      const runtime::ExpertTokens& toks = s.by_expert.at(r.expert);
      for (size_t i = 0; i < toks.size(); ++i)
        std::memcpy(s.ys.data() + toks[i].second * d, r.rows.data() + i * d, d * sizeof(float));
      if (c.remote()) s.answered[r.expert] = {c.target(), c.req.request_id};
    }
  }
  return true;
}

std::vector<Call> Dispatcher::MakeCalls(std::vector<HolderBatch> batches, const ForwardInput& in,
                                        const ForwardOptions& opt, bool adaptive) {
  const auto stats = stats_.Snapshot();
  std::vector<Call> calls(batches.size());
  for (size_t b = 0; b < batches.size(); ++b) {
    Call& c = calls[b];
    c.batch = std::move(batches[b]);
    c.timeout = CallTimeout(c.batch, stats, opt, adaptive,
                            RowBytesOnWire(opt.dtype, c.batch.rows * static_cast<uint64_t>(in.d_model)));
    FillRequest(c, in, opt.dtype, next_request_id_++);
  }
  return calls;
}

void Dispatcher::RunCalls(std::vector<Call>& calls, const HedgePolicy* hedge) {
  dispatch::RunCalls(calls, [this](Transport t) { return ExecutorFor(t); }, stats_, *call_pool_, hedge);
}

void Dispatcher::Ban(const HolderBan& ban) {
  stats_.Ban(ban.node_id, ban.until);
  ++bans_failure_;
}

Dispatcher::Counters Dispatcher::counters() const {
  Counters c;
  c.spot_agree = spot_agree_;
  c.spot_mismatch = spot_mismatch_;
  c.spot_inconclusive = spot_inconclusive_;
  c.spot_skipped = spot_skipped_;
  c.bans_failure = bans_failure_;
  c.bans_wrong_output = bans_wrong_output_;
  c.hedges_sent = hedges_sent_;
  c.hedges_won = hedges_won_;
  return c;
}

std::map<int, Error> Dispatcher::SpotCheck(ForwardState& s, const FailoverPolicy& policy) {
  SpotCheckHooks hooks;
  // Re-runs on replicas not in avoid[e] (this node first), local inputs
  // rounded to the wire dtype; the calls go to report.spot_calls.
  hooks.rerun = [&](const std::vector<int>& experts, const SpotAvoid& avoid) {
    std::vector<PlanItem> work;
    std::set<FailoverPolicy::ItemKey> excluded = policy.excluded_items();
    for (int e : experts) {
      work.push_back(s.ItemOf(e));
      for (const std::string& n : avoid.at(e)) excluded.insert({n, s.in.layer, e});
    }
    Plan plan = PlanWith(s.in.model, work, s.live, excluded);
    std::vector<Call> calls =
        MakeCalls(std::move(plan.batches), s.in, s.opt, /*adaptive=*/true);
    RunCalls(calls);
    std::map<int, SpotAnswer> got;
    for (Call& c : calls) {
      if (auto ban = BanAfter(c.Outcome(), Clock::now(), s.opt.ban)) Ban(*ban);
      s.report.spot_calls.push_back(ReportCall(c, s.report.rounds, s.start));
      if (!c.resp) continue;
      for (ExecResult& r : c.resp->experts)
        if (!r.error) got[r.expert] = {c.target(), std::move(r.rows)};
    }
    return got;
  };
  hooks.ban = [&](const std::set<std::string>& liars, const std::map<std::string, std::set<std::string>>& at) {
    const auto until = Clock::now() + s.opt.spot_check.ban;
    for (const std::string& n : liars) {
      stats_.Ban(n, until);
      // And the address that served the wrong rows: a new key there gets no
      // work either (holder_stats.h).
      if (auto it = at.find(n); it != at.end())
        for (const std::string& ep : it->second) stats_.BanAddress(ep, until);
      ++bans_wrong_output_;
      s.report.banned_wrong_output.push_back(n);
    }
  };
  const SpotCheckJob job{s.in.model, s.in.layer,       static_cast<size_t>(s.in.d_model), &s.by_expert,
                         &s.answered, s.opt.spot_check, s.opt.dtype};
  SpotCheckRun run = RunSpotChecks(job, s.ys, hooks);
  for (const SpotCheckRecord& r : run.records) {
    switch (r.outcome) {
      case SpotOutcome::kAgree: ++spot_agree_; break;
      case SpotOutcome::kMismatch: ++spot_mismatch_; break;
      case SpotOutcome::kInconclusive: ++spot_inconclusive_; break;
      case SpotOutcome::kSkipped: ++spot_skipped_; break;
    }
    s.report.spot_checks.push_back(r);
  }
  s.report.spot_recomputed += run.recomputed;
  return run.lost;
}

}  // namespace tenzro::dispatch
