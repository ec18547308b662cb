#include "dispatch/spot_check_runner.h"

#include <cstring>
#include <optional>

namespace tenzro::dispatch {
namespace {

class Runner {
 public:
  Runner(const SpotCheckJob& job, std::span<float> ys, const SpotCheckHooks& hooks)
      : job_(job), ys_(ys), hooks_(hooks), d_(job.d_model) {}

  SpotCheckRun Run();

 private:
  // An expert's rows in ys, in token order.
  std::vector<float> RowsOf(int e) const {
    const runtime::ExpertTokens& toks = job_.by_expert->at(e);
    std::vector<float> r(toks.size() * d_);
    for (size_t i = 0; i < toks.size(); ++i)
      std::memcpy(r.data() + i * d_, ys_.data() + toks[i].second * d_, d_ * sizeof(float));
    return r;
  }
  void PutRows(int e, const std::vector<float>& r) {
    const runtime::ExpertTokens& toks = job_.by_expert->at(e);
    for (size_t i = 0; i < toks.size(); ++i)
      std::memcpy(ys_.data() + toks[i].second * d_, r.data() + i * d_, d_ * sizeof(float));
  }
  std::map<int, SpotAnswer> Rerun(const std::vector<int>& experts, const SpotAvoid& avoid) {
    if (experts.empty()) return {};
    return hooks_.rerun(experts, avoid);
  }
  // Step 5: whatever else a liar answered in this forward.
  void Recompute(const std::set<int>& fixed, SpotCheckRun& run);

  const SpotCheckJob& job_;
  std::span<float> ys_;
  const SpotCheckHooks& hooks_;
  const size_t d_;
};

SpotCheckRun Runner::Run() {
  SpotCheckRun run;
  const SpotCheckOptions& so = job_.options;
  const double tol = so.tolerance > 0 ? so.tolerance : DefaultSpotTolerance(job_.wire);

  // 1. Which results to check; 2. a second opinion on each.
  std::vector<int> selected;
  SpotAvoid avoid;
  std::map<int, std::vector<float>> holder_rows;
  for (const auto& [e, who] : *job_.answered)
    if (SpotCheckSelected(so.seed, who.second, who.first.node_id, job_.layer, e, so.fraction)) {
      selected.push_back(e);
      avoid[e] = {who.first.node_id};
      holder_rows[e] = RowsOf(e);
    }
  if (selected.empty()) return run;
  std::map<int, SpotAnswer> second = Rerun(selected, avoid);

  // 3. Disagreements with a remote verifier need a third opinion.
  std::map<int, SpotCheckRecord> rec;
  std::map<int, SpotVerdict> verdict;
  std::vector<int> disputed;
  for (int e : selected) {
    SpotCheckRecord& r = rec[e];
    r.expert = e;
    r.holder = job_.answered->at(e).first.node_id;
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
  std::map<int, SpotAnswer> third = Rerun(disputed, avoid);
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
  std::set<int> fixed;
  for (int e : selected) {
    const SpotCheckRecord& r = rec[e];
    run.records.push_back(r);
    if (r.outcome != SpotOutcome::kMismatch) continue;
    const SpotVerdict& v = verdict[e];
    if (v.verifier_wrong) {
      run.banned.insert(r.verifier);
      run.banned_endpoints[r.verifier].insert(second.at(e).by.endpoint);
    }
    if (v.holder_wrong) {
      run.banned.insert(r.holder);
      run.banned_endpoints[r.holder].insert(job_.answered->at(e).first.endpoint);
      PutRows(e, v.verifier_wrong ? third.at(e).rows : second.at(e).rows);
      fixed.insert(e);
    }
  }
  if (run.banned.empty()) return run;
  hooks_.ban(run.banned, run.banned_endpoints);
  Recompute(fixed, run);
  return run;
}

void Runner::Recompute(const std::set<int>& fixed, SpotCheckRun& run) {
  std::vector<int> redo;
  SpotAvoid avoid_liars;
  for (const auto& [e, who] : *job_.answered)
    if (run.banned.count(who.first.node_id) && !fixed.count(e)) {
      redo.push_back(e);
      avoid_liars[e] = run.banned;
    }
  std::map<int, SpotAnswer> again = Rerun(redo, avoid_liars);
  for (int e : redo) {
    auto it = again.find(e);
    if (it != again.end()) {
      PutRows(e, it->second.rows);
      ++run.recomputed;
    } else {
      run.lost.insert_or_assign(e, Error::Unavailable("holder {} of {} layer {} expert {} was caught returning "
                                                      "wrong outputs and no other replica recomputed its rows",
                                                      job_.answered->at(e).first.node_id.substr(0, 12),
                                                      job_.model, job_.layer, e));
    }
  }
}

}  // namespace

SpotCheckRun RunSpotChecks(const SpotCheckJob& job, std::span<float> ys, const SpotCheckHooks& hooks) {
  return Runner(job, ys, hooks).Run();
}

}  // namespace tenzro::dispatch
