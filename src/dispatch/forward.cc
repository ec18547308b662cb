#include "dispatch/forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <thread>

#include "runtime/routed_batches.h"

namespace tenzro::dispatch {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double MsSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

std::string TokenList(const std::vector<int>& t) {
  constexpr size_t kShow = 16;
  std::string s = fmt::format("{}", fmt::join(t.begin(), t.begin() + std::min(t.size(), kShow), ","));
  if (t.size() > kShow) s += fmt::format(",... ({} tokens)", t.size());
  return s;
}

// The answer must be for this request: same id and the experts in order.
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

struct Call {
  HolderBatch batch;
  ExecRequest req;
  std::chrono::milliseconds timeout{0};
  Result<ExecResponse> resp = Error::Internal("not run");
  Clock::time_point sent{};
  double rtt_ms = 0;
};

// The deadline of a call: holder_timeout, or (adaptive) sooner for a
// measured remote holder: max(min_timeout, timeout_factor x its expected time).
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

// The request of `c.batch`: experts in item order, rows gathered from x.
// Local calls take f32 rows; with `round_local` they are first rounded to
// the wire dtype, so a local re-run sees what a remote holder saw.
void FillRequest(Call& c, const ForwardInput& in, RowType wire, uint64_t request_id, bool round_local) {
  const bool local = c.batch.transport == Transport::kLocal;
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

// Runs every call at once (one thread per remote call, the local one on
// the calling thread); remote calls feed the holder stats.
void RunCalls(std::vector<Call>& calls, const std::function<Executor*(Transport)>& executor_for,
              HolderStatsTable& stats) {
  auto run = [&](Call& c) {
    const HolderTarget target{c.batch.node_id, c.batch.transport, c.batch.endpoint};
    Executor* ex = executor_for(c.batch.transport);
    const bool remote = c.batch.transport != Transport::kLocal;  // the planner never weighs this node
    if (remote) stats.Begin(c.batch.node_id, c.batch.rows);
    const auto t0 = c.sent = Clock::now();
    c.resp = ex ? ex->Exec(target, c.req, c.timeout)
                : Result<ExecResponse>(Error::Unsupported("no {} executor", TransportName(c.batch.transport)));
    if (c.resp) {
      if (auto m = MatchAnswer(c.req, *c.resp); !m) c.resp = m.error();
    }
    c.rtt_ms = MsSince(t0);
    const double compute_ms = c.resp ? c.resp->compute_us / 1000.0 : 0;
    if (remote) stats.End(c.batch.node_id, c.batch.rows, c.resp && !c.resp->error, c.rtt_ms, compute_ms);
  };
  std::vector<std::thread> threads;
  Call* local_call = nullptr;
  for (Call& c : calls) {
    if (c.batch.transport == Transport::kLocal) local_call = &c;
    else threads.emplace_back([&run, &c] { run(c); });
  }
  if (local_call) run(*local_call);
  for (std::thread& t : threads) t.join();
}

json CallToJson(const HolderCall& c) {
  json h = {{"round", c.round},
            {"node_id", c.target.node_id},
            {"transport", std::string(TransportName(c.target.transport))},
            {"endpoint", c.target.endpoint},
            {"experts", c.experts},
            {"rows", c.rows},
            {"sent_ms", c.sent_ms},
            {"rtt_ms", c.rtt_ms},
            {"compute_ms", c.compute_ms},
            {"network_ms", std::max(0.0, c.rtt_ms - c.compute_ms)},
            {"failed_experts", c.failed_experts}};
  if (c.error) h["error"] = c.error->ToString();
  return h;
}

}  // namespace

// What the spot-check step works on (Dispatcher::SpotCheck).
struct Dispatcher::SpotState {
  const ForwardInput& in;
  const ForwardOptions& opt;
  const std::map<int, runtime::ExpertTokens>& by_expert;
  const std::vector<swarm::Declaration>& live;
  const std::set<std::tuple<std::string, int, int>>& excluded_items;
  // Who answered each remotely computed expert, in which call.
  std::map<int, std::pair<HolderTarget, uint64_t>>& answered;
  std::vector<float>& ys;  // rows by routing slot
  ForwardReport& report;
  std::map<int, Error>& failed;  // out: experts whose rows are lost (holder lied, no recomputation)
  Clock::time_point start;       // of the forward, for HolderCall::sent_ms
};

std::string_view OnMissingName(OnMissing m) { return m == OnMissing::kFail ? "fail" : "renormalize"; }

Result<OnMissing> ParseOnMissing(std::string_view s) {
  if (s == "fail") return OnMissing::kFail;
  if (s == "renormalize") return OnMissing::kRenormalize;
  return Error::InvalidArgument("--on-missing '{}' must be 'fail' or 'renormalize'", s);
}

json ReportToJson(const ForwardReport& r) {
  json holders = json::array();
  double max_compute = 0;
  for (const HolderCall& c : r.calls) {
    max_compute = std::max(max_compute, c.compute_ms);
    holders.push_back(CallToJson(c));
  }
  json dropped = json::array();
  for (const DroppedItem& d : r.dropped) {
    json j = PlanItemToJson(d.item);
    j["reason"] = d.reason.ToString();
    dropped.push_back(std::move(j));
  }
  std::map<SpotOutcome, int> outcomes;
  json items = json::array(), spot_calls = json::array();
  for (const SpotCheckRecord& c : r.spot_checks) {
    ++outcomes[c.outcome];
    json j = {{"expert", c.expert},
              {"holder", c.holder},
              {"verifier", c.verifier},
              {"rel_l2", std::isfinite(c.rel_l2) ? json(c.rel_l2) : json("inf")},
              {"outcome", std::string(SpotOutcomeName(c.outcome))}};
    if (!c.third.empty()) j["third"] = c.third;
    items.push_back(std::move(j));
  }
  for (const HolderCall& c : r.spot_calls) spot_calls.push_back(CallToJson(c));
  json spot = {{"checked", r.spot_checks.size()},
               {"agree", outcomes[SpotOutcome::kAgree]},
               {"mismatch", outcomes[SpotOutcome::kMismatch]},
               {"inconclusive", outcomes[SpotOutcome::kInconclusive]},
               {"skipped", outcomes[SpotOutcome::kSkipped]},
               {"banned", r.banned_wrong_output},
               {"recomputed", r.spot_recomputed},
               {"items", items},
               {"calls", spot_calls}};
  return {{"plan_ms", r.plan_ms},
          {"exec_ms", r.exec_ms},
          {"combine_ms", r.combine_ms},
          {"total_ms", r.total_ms},
          {"rounds", r.rounds},
          {"max_holder_compute_ms", max_compute},
          {"holders", holders},
          {"dropped", dropped},
          {"tokens_without_experts", r.tokens_without_experts},
          {"spot_checks", spot}};
}

Dispatcher::Dispatcher(Sources sources, std::shared_ptr<Executor> local, std::shared_ptr<Executor> http,
                       std::shared_ptr<Executor> quic)
    : sources_(std::move(sources)), local_(std::move(local)), http_(std::move(http)), quic_(std::move(quic)) {}

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
  return PlanWith(model, work, std::move(live), excluded_items);
}

Plan Dispatcher::PlanWith(const std::string& model, const std::vector<PlanItem>& work,
                          std::vector<swarm::Declaration> live,
                          const std::set<std::tuple<std::string, int, int>>& excluded_items) {
  PlanInput in;
  in.self_node_id = sources_.self_node_id;
  if (sources_.local) in.local = sources_.local(model);
  in.live = std::move(live);
  const auto now = Clock::now();
  in.stats = stats_.Snapshot(now);
  in.excluded = stats_.Banned(now);
  in.excluded_items = excluded_items;
  in.quic = quic_ != nullptr;
  return PlanDispatch(work, in);
}

Result<ForwardReport> Dispatcher::Forward(const ForwardInput& in, const ForwardOptions& opt, float* out) {
  const auto t_start = Clock::now();
  if (in.n_tok < 0 || in.d_model <= 0 || static_cast<int>(in.routing.size()) != in.n_tok)
    return Error::InvalidArgument("forward: {} tokens, d_model {}, {} routings", in.n_tok, in.d_model,
                                  in.routing.size());
  const size_t n_val = static_cast<size_t>(in.n_tok) * in.d_model;
  for (size_t i = 0; i < n_val; ++i)
    if (!std::isfinite(in.x[i]))
      return Error::InvalidArgument("hidden state: token {} column {} is {}", i / in.d_model, i % in.d_model,
                                    std::isnan(in.x[i]) ? "NaN" : "Inf");
  if (opt.max_rounds < 1) return Error::InvalidArgument("forward: max_rounds {} < 1", opt.max_rounds);

  // Tokens (and their slot) per expert, as the local block groups them.
  const std::vector<size_t> slot_of = runtime::RoutingSlots(in.routing);
  std::map<int, runtime::ExpertTokens> by_expert;
  for (int t = 0; t < in.n_tok; ++t)
    for (size_t k = 0; k < in.routing[t].experts.size(); ++k) {
      const int e = in.routing[t].experts[k].expert;
      if (e < 0) return Error::InvalidArgument("token {} is routed to expert {}", t, e);
      by_expert[e].push_back({t, slot_of[t] + k});
    }
  std::vector<float> ys(slot_of[in.n_tok] * in.d_model, 0.0f);

  ForwardReport report;
  const auto executor_for = [this](Transport t) { return ExecutorFor(t); };
  std::map<int, std::pair<HolderTarget, uint64_t>> answered;  // remote results, for spot checks
  std::set<int> pending;
  for (const auto& [e, toks] : by_expert) pending.insert(e);
  std::map<int, Error> last_error, missing;
  std::set<std::tuple<std::string, int, int>> excluded_items;
  auto item_of = [&](int e) {
    PlanItem it{in.layer, e, {}};
    for (const auto& [t, slot] : by_expert.at(e)) it.tokens.push_back(t);
    return it;
  };

  // The declarations, once: every round plans from the same set.
  const auto t_live = Clock::now();
  std::vector<swarm::Declaration> live;
  std::optional<Error> discovery_error;
  if (sources_.live && !pending.empty()) {
    auto l = sources_.live(in.model);
    if (l) live = std::move(*l);
    else discovery_error = l.error();  // what this node holds still runs
  }
  report.plan_ms += MsSince(t_live);

  for (int round = 0; round < opt.max_rounds && !pending.empty(); ++round) {
    report.rounds = round + 1;
    const auto t_plan = Clock::now();
    std::vector<PlanItem> work;
    for (int e : pending) work.push_back(item_of(e));
    if (discovery_error)
      for (int e : pending) last_error.try_emplace(e, *discovery_error);
    Plan plan = PlanWith(in.model, work, live, excluded_items);
    report.plan_ms += MsSince(t_plan);
    for (const PlanItem& u : plan.unheld) {
      auto it = last_error.find(u.expert);
      if (it != last_error.end()) {
        missing.insert_or_assign(u.expert, it->second);
      } else if (plan.unheld_banned.count({u.layer, u.expert})) {
        missing.insert_or_assign(u.expert, Error::Unavailable("every live holder of {} layer {} expert {} failed "
                                                              "recently and is banned for a few seconds",
                                                              in.model, in.layer, u.expert));
      } else {
        missing.insert_or_assign(
            u.expert, Error::NotFound("no live holder of {} layer {} expert {}", in.model, in.layer, u.expert));
      }
      pending.erase(u.expert);
    }
    // Failing anyway: do not compute the rest.
    if (opt.on_missing == OnMissing::kFail && !missing.empty()) {
      pending.clear();
      break;
    }
    if (plan.batches.empty()) break;

    // Requests: experts in item order, rows gathered from x; the deadline
    // adapted to what each holder is expected to take (not in the last round).
    const auto stats = stats_.Snapshot();
    const bool last_round = round + 1 == opt.max_rounds;
    std::vector<Call> calls(plan.batches.size());
    for (size_t b = 0; b < plan.batches.size(); ++b) {
      Call& c = calls[b];
      c.batch = std::move(plan.batches[b]);
      c.timeout = CallTimeout(c.batch, stats, opt, /*adaptive=*/!last_round);
      FillRequest(c, in, opt.dtype, next_request_id_++, /*round_local=*/false);
    }
    const auto t_exec = Clock::now();
    RunCalls(calls, executor_for, stats_);
    report.exec_ms += MsSince(t_exec);

    // Results: scatter rows into their slots; failures back to pending.
    for (Call& c : calls) {
      HolderCall hc;
      hc.round = round;
      hc.target = {c.batch.node_id, c.batch.transport, c.batch.endpoint};
      hc.experts = static_cast<int>(c.req.experts.size());
      hc.rows = c.batch.rows;
      hc.sent_ms = std::chrono::duration<double, std::milli>(c.sent - t_start).count();
      hc.rtt_ms = c.rtt_ms;
      auto fail_all = [&](const Error& err) {
        hc.error = err;
        for (const ExecBatch& eb : c.req.experts) {
          last_error.insert_or_assign(eb.expert, err);
          excluded_items.insert({c.batch.node_id, in.layer, eb.expert});
        }
      };
      if (!c.resp) {
        fail_all(c.resp.error());
        if (c.batch.transport != Transport::kLocal) {
          stats_.Ban(c.batch.node_id, Clock::now() + opt.ban);
          ++bans_failure_;
        }
      } else if (c.resp->error) {
        hc.compute_ms = c.resp->compute_us / 1000.0;
        fail_all(*c.resp->error);
      } else {
        hc.compute_ms = c.resp->compute_us / 1000.0;
        for (ExecResult& r : c.resp->experts) {
          if (r.error) {
            ++hc.failed_experts;
            last_error.insert_or_assign(
                r.expert, r.error->WithContext(fmt::format("holder {}", c.batch.node_id.substr(0, 12))));
            excluded_items.insert({c.batch.node_id, in.layer, r.expert});
            continue;
          }
          const runtime::ExpertTokens& toks = by_expert.at(r.expert);
          for (size_t i = 0; i < toks.size(); ++i)
            std::memcpy(ys.data() + toks[i].second * in.d_model, r.rows.data() + i * in.d_model,
                        in.d_model * sizeof(float));
          if (c.batch.transport != Transport::kLocal) answered[r.expert] = {hc.target, c.req.request_id};
          pending.erase(r.expert);
        }
      }
      report.calls.push_back(std::move(hc));
    }
  }
  if (opt.spot_check.fraction > 0 && !answered.empty() && (missing.empty() || opt.on_missing != OnMissing::kFail)) {
    std::map<int, Error> lost;
    SpotState st{in, opt, by_expert, live, excluded_items, answered, ys, report, lost, t_start};
    SpotCheck(st);
    for (auto& [e, err] : lost) {
      pending.insert(e);
      last_error.insert_or_assign(e, err);
    }
  }
  for (int e : pending) {
    auto it = last_error.find(e);
    missing.insert_or_assign(e, it != last_error.end() ? it->second
                                                       : Error::Unavailable("expert {} was not computed", e));
  }

  // Missing experts: fail naming them, or drop and renormalise.
  std::vector<runtime::TokenRouting> routing = in.routing;
  if (!missing.empty()) {
    if (opt.on_missing == OnMissing::kFail) {
      std::vector<std::string> parts;
      for (const auto& [e, err] : missing)
        parts.push_back(fmt::format("expert {} (tokens {}): {}", e, TokenList(item_of(e).tokens), err.ToString()));
      return Error(missing.begin()->second.code(),
                   fmt::format("{} layer {}: {} of {} routed experts could not be computed: {} (pass --on-missing "
                               "renormalize to drop them)",
                               in.model, in.layer, missing.size(), by_expert.size(), fmt::join(parts, "; ")));
    }
    for (const auto& [e, err] : missing) report.dropped.push_back({item_of(e), err});
    for (int t = 0; t < in.n_tok; ++t) {
      auto& ex = routing[t].experts;
      double all = 0, alive = 0;
      bool any_dropped = false;
      for (const auto& c : ex) {
        all += c.weight;
        if (missing.count(c.expert)) any_dropped = true;
        else alive += c.weight;
      }
      if (!any_dropped) continue;
      const bool none_left = alive == 0;
      if (none_left) report.tokens_without_experts.push_back(t);
      for (auto& c : ex)
        c.weight = missing.count(c.expert) || none_left ? 0.0f : static_cast<float>(c.weight * (all / alive));
    }
  }

  const auto t_comb = Clock::now();
  runtime::CombineMoeBlock(routing, slot_of, ys.data(), in.shared, in.d_model, out);
  report.combine_ms = MsSince(t_comb);
  report.total_ms = MsSince(t_start);
  return report;
}

Dispatcher::Counters Dispatcher::counters() const {
  Counters c;
  c.spot_agree = spot_agree_;
  c.spot_mismatch = spot_mismatch_;
  c.spot_inconclusive = spot_inconclusive_;
  c.spot_skipped = spot_skipped_;
  c.bans_failure = bans_failure_;
  c.bans_wrong_output = bans_wrong_output_;
  return c;
}

void Dispatcher::SpotCheck(SpotState& s) {
  const ForwardInput& in = s.in;
  const SpotCheckOptions& so = s.opt.spot_check;
  const double tol = so.tolerance > 0 ? so.tolerance : DefaultSpotTolerance(s.opt.dtype);
  const size_t d = static_cast<size_t>(in.d_model);
  auto rows_of = [&](int e) {  // an expert's rows in ys, in token order
    const runtime::ExpertTokens& toks = s.by_expert.at(e);
    std::vector<float> r(toks.size() * d);
    for (size_t i = 0; i < toks.size(); ++i)
      std::memcpy(r.data() + i * d, s.ys.data() + toks[i].second * d, d * sizeof(float));
    return r;
  };
  auto put_rows = [&](int e, const std::vector<float>& r) {
    const runtime::ExpertTokens& toks = s.by_expert.at(e);
    for (size_t i = 0; i < toks.size(); ++i)
      std::memcpy(s.ys.data() + toks[i].second * d, r.data() + i * d, d * sizeof(float));
  };
  const auto executor_for = [this](Transport t) { return ExecutorFor(t); };

  // Re-runs `experts`, each on a replica not in avoid[e] (this node first);
  // the answers that came back.
  struct Answer {
    HolderTarget by;
    std::vector<float> rows;
  };
  using Avoid = std::map<int, std::set<std::string>>;
  auto rerun = [&](const std::vector<int>& experts, const Avoid& avoid) {
    std::map<int, Answer> got;
    if (experts.empty()) return got;
    std::vector<PlanItem> work;
    std::set<std::tuple<std::string, int, int>> excl = s.excluded_items;
    for (int e : experts) {
      PlanItem it{in.layer, e, {}};
      for (const auto& [t, slot] : s.by_expert.at(e)) it.tokens.push_back(t);
      work.push_back(std::move(it));
      for (const std::string& n : avoid.at(e)) excl.insert({n, in.layer, e});
    }
    Plan plan = PlanWith(in.model, work, s.live, excl);
    const auto stats = stats_.Snapshot();
    std::vector<Call> calls(plan.batches.size());
    for (size_t b = 0; b < plan.batches.size(); ++b) {
      calls[b].batch = std::move(plan.batches[b]);
      calls[b].timeout = CallTimeout(calls[b].batch, stats, s.opt, /*adaptive=*/true);
      FillRequest(calls[b], in, s.opt.dtype, next_request_id_++, /*round_local=*/true);
    }
    RunCalls(calls, executor_for, stats_);
    for (Call& c : calls) {
      HolderCall hc;
      hc.round = s.report.rounds;
      hc.target = {c.batch.node_id, c.batch.transport, c.batch.endpoint};
      hc.experts = static_cast<int>(c.req.experts.size());
      hc.rows = c.batch.rows;
      hc.sent_ms = std::chrono::duration<double, std::milli>(c.sent - s.start).count();
      hc.rtt_ms = c.rtt_ms;
      if (!c.resp) {
        hc.error = c.resp.error();
        if (c.batch.transport != Transport::kLocal) {
          stats_.Ban(c.batch.node_id, Clock::now() + s.opt.ban);
          ++bans_failure_;
        }
      } else {
        hc.compute_ms = c.resp->compute_us / 1000.0;
        if (c.resp->error) hc.error = *c.resp->error;
        for (ExecResult& r : c.resp->experts) {
          if (r.error) ++hc.failed_experts;
          else got[r.expert] = {hc.target, std::move(r.rows)};
        }
      }
      s.report.spot_calls.push_back(std::move(hc));
    }
    return got;
  };

  // 1. Which results to check; 2. a second opinion on each.
  std::vector<int> selected;
  Avoid avoid;
  std::map<int, std::vector<float>> holder_rows;
  for (const auto& [e, who] : s.answered)
    if (SpotCheckSelected(so.seed, who.second, who.first.node_id, in.layer, e, so.fraction)) {
      selected.push_back(e);
      avoid[e] = {who.first.node_id};
      holder_rows[e] = rows_of(e);
    }
  if (selected.empty()) return;
  std::map<int, Answer> second = rerun(selected, avoid);

  // 3. Disagreements with a remote verifier need a third opinion.
  std::map<int, SpotCheckRecord> rec;
  std::map<int, SpotVerdict> verdict;
  std::vector<int> disputed;
  for (int e : selected) {
    SpotCheckRecord& r = rec[e];
    r.expert = e;
    r.holder = s.answered.at(e).first.node_id;
    auto it = second.find(e);
    if (it == second.end()) {
      r.outcome = SpotOutcome::kSkipped;
      continue;
    }
    r.verifier = it->second.by.node_id;
    r.rel_l2 = SpotRelL2(holder_rows[e], it->second.rows);
    verdict[e] = DecideSpotCheck(r.rel_l2, it->second.by.transport == Transport::kLocal, std::nullopt, tol);
    r.outcome = verdict[e].outcome;
    if (r.outcome == SpotOutcome::kInconclusive) {
      disputed.push_back(e);
      avoid[e].insert(r.verifier);
    }
  }
  std::map<int, Answer> third = rerun(disputed, avoid);
  for (int e : disputed) {
    auto it = third.find(e);
    if (it == third.end()) continue;  // stays inconclusive
    ThirdOpinion t;
    t.holder_vs_third = SpotRelL2(holder_rows[e], it->second.rows);
    t.verifier_vs_third = SpotRelL2(second.at(e).rows, it->second.rows);
    t.third_is_local = it->second.by.transport == Transport::kLocal;
    verdict[e] = DecideSpotCheck(rec[e].rel_l2, false, t, tol);
    rec[e].third = it->second.by.node_id;
    rec[e].outcome = verdict[e].outcome;
  }

  // 4. Ban who lied; the verified rows replace the wrong ones.
  std::set<std::string> liars;
  std::set<int> fixed;
  for (int e : selected) {
    SpotCheckRecord& r = rec[e];
    switch (r.outcome) {
      case SpotOutcome::kAgree: ++spot_agree_; break;
      case SpotOutcome::kMismatch: ++spot_mismatch_; break;
      case SpotOutcome::kInconclusive: ++spot_inconclusive_; break;
      case SpotOutcome::kSkipped: ++spot_skipped_; break;
    }
    s.report.spot_checks.push_back(r);
    if (r.outcome != SpotOutcome::kMismatch) continue;
    const SpotVerdict& v = verdict[e];
    if (v.verifier_wrong) liars.insert(r.verifier);
    if (v.holder_wrong) {
      liars.insert(r.holder);
      put_rows(e, v.verifier_wrong ? third.at(e).rows : second.at(e).rows);
      fixed.insert(e);
    }
  }
  if (liars.empty()) return;
  const auto until = Clock::now() + so.ban;
  for (const std::string& n : liars) {
    stats_.Ban(n, until);
    ++bans_wrong_output_;
    s.report.banned_wrong_output.push_back(n);
  }

  // 5. Whatever else a liar answered in this forward is recomputed elsewhere.
  std::vector<int> redo;
  Avoid avoid_liars;
  for (const auto& [e, who] : s.answered)
    if (liars.count(who.first.node_id) && !fixed.count(e)) {
      redo.push_back(e);
      avoid_liars[e] = liars;
    }
  std::map<int, Answer> again = rerun(redo, avoid_liars);
  for (int e : redo) {
    auto it = again.find(e);
    if (it != again.end()) {
      put_rows(e, it->second.rows);
      ++s.report.spot_recomputed;
    } else {
      s.failed.insert_or_assign(e, Error::Unavailable("holder {} of {} layer {} expert {} was caught returning wrong "
                                                      "outputs and no other replica recomputed its rows",
                                                      s.answered.at(e).first.node_id.substr(0, 12), in.model,
                                                      in.layer, e));
    }
  }
}

}  // namespace tenzro::dispatch
