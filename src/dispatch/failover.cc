#include "dispatch/failover.h"

#include <algorithm>
#include <utility>

namespace tenzro::dispatch {
namespace {

std::string TokenList(const std::vector<int>& t) {
  constexpr size_t kShow = 16;
  std::string s = fmt::format("{}", fmt::join(t.begin(), t.begin() + std::min(t.size(), kShow), ","));
  if (t.size() > kShow) s += fmt::format(",... ({} tokens)", t.size());
  return s;
}

}  // namespace

std::string_view OnMissingName(OnMissing m) { return m == OnMissing::kFail ? "fail" : "renormalize"; }

Result<OnMissing> ParseOnMissing(std::string_view s) {
  if (s == "fail") return OnMissing::kFail;
  if (s == "renormalize") return OnMissing::kRenormalize;
  return Error::InvalidArgument("--on-missing '{}' must be 'fail' or 'renormalize'", s);
}

std::optional<HolderBan> BanAfter(const CallOutcome& call, std::chrono::steady_clock::time_point now,
                                  std::chrono::milliseconds ban) {
  if (call.status != CallStatus::kFailed || !call.remote) return std::nullopt;
  return HolderBan{call.node_id, now + ban};
}

FailoverPolicy::FailoverPolicy(std::string model, int layer, std::map<int, std::vector<int>> tokens,
                               FailoverOptions options)
    : model_(std::move(model)), layer_(layer), tokens_(std::move(tokens)), options_(options) {
  for (const auto& [e, toks] : tokens_) pending_.insert(e);
}

bool FailoverPolicy::BeginRound() {
  if (rounds_ >= options_.max_rounds || pending_.empty()) return false;
  ++rounds_;
  if (discovery_error_)
    for (int e : pending_) last_error_.try_emplace(e, *discovery_error_);
  return true;
}

std::vector<PlanItem> FailoverPolicy::Work() const {
  std::vector<PlanItem> work;
  for (int e : pending_) work.push_back({layer_, e, tokens_.at(e)});
  return work;
}

PlanStep FailoverPolicy::OnPlan(const Plan& plan) {
  for (const PlanItem& u : plan.unheld) {
    auto it = last_error_.find(u.expert);
    if (it != last_error_.end()) {
      missing_.insert_or_assign(u.expert, it->second);
    } else if (plan.unheld_banned.count({u.layer, u.expert})) {
      missing_.insert_or_assign(u.expert, Error::Unavailable("every live holder of {} layer {} expert {} failed "
                                                             "recently and is banned for a few seconds",
                                                             model_, layer_, u.expert));
    } else {
      missing_.insert_or_assign(
          u.expert, Error::NotFound("no live holder of {} layer {} expert {}", model_, layer_, u.expert));
    }
    pending_.erase(u.expert);
  }
  if (failing()) {  // failing anyway: do not compute the rest
    pending_.clear();
    return PlanStep::kStop;
  }
  return plan.batches.empty() ? PlanStep::kStop : PlanStep::kRun;
}

void FailoverPolicy::Fail(const std::string& node_id, int expert, const Error& err) {
  last_error_.insert_or_assign(expert, err);
  excluded_items_.insert({node_id, layer_, expert});
}

RoundDecision FailoverPolicy::OnResults(const std::vector<CallOutcome>& calls, TimePoint now) {
  RoundDecision d;
  for (const CallOutcome& c : calls) {
    if (c.status != CallStatus::kAnswered) {
      const Error err = c.error ? *c.error : Error::Internal("call to {} failed without an error", c.node_id);
      for (const ExpertOutcome& x : c.experts) {
        Fail(c.node_id, x.expert, err);
        d.replan.insert(x.expert);
      }
      if (auto ban = BanAfter(c, now, options_.ban)) d.bans.push_back(std::move(*ban));
      continue;
    }
    for (const ExpertOutcome& x : c.experts) {
      if (x.error) {
        Fail(c.node_id, x.expert, x.error->WithContext(fmt::format("holder {}", c.node_id.substr(0, 12))));
        d.replan.insert(x.expert);
      } else {
        d.done.insert(x.expert);
        pending_.erase(x.expert);
      }
    }
  }
  return d;
}

void FailoverPolicy::Lost(int expert, const Error& err) {
  pending_.insert(expert);
  last_error_.insert_or_assign(expert, err);
}

Result<std::map<int, Error>> FailoverPolicy::Finish() const {
  std::map<int, Error> missing = missing_;
  for (int e : pending_) {
    auto it = last_error_.find(e);
    missing.insert_or_assign(e, it != last_error_.end() ? it->second
                                                        : Error::Unavailable("expert {} was not computed", e));
  }
  if (missing.empty() || options_.on_missing != OnMissing::kFail) return missing;
  std::vector<std::string> parts;
  for (const auto& [e, err] : missing)
    parts.push_back(fmt::format("expert {} (tokens {}): {}", e, TokenList(tokens_.at(e)), err.ToString()));
  return Error(missing.begin()->second.code(),
               fmt::format("{} layer {}: {} of {} routed experts could not be computed: {} (pass --on-missing "
                           "renormalize to drop them)",
                           model_, layer_, missing.size(), tokens_.size(), fmt::join(parts, "; ")));
}

std::vector<int> RenormalizeRouting(std::vector<runtime::TokenRouting>& routing,
                                    const std::map<int, Error>& missing) {
  std::vector<int> without;
  if (missing.empty()) return without;
  for (size_t t = 0; t < routing.size(); ++t) {
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
    if (none_left) without.push_back(static_cast<int>(t));
    for (auto& c : ex)
      c.weight = missing.count(c.expert) || none_left ? 0.0f : static_cast<float>(c.weight * (all / alive));
  }
  return without;
}

}  // namespace tenzro::dispatch
