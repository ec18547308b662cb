#include "runtime/gating.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "runtime/matmul.h"

namespace tenzro::runtime {
namespace {

// Indices of the k largest scores (ties: lower index first), best first.
// Entries with mask[i] == false are skipped.
std::vector<int> TopK(const std::vector<double>& score, int k, const std::vector<bool>* mask = nullptr) {
  std::vector<int> idx;
  idx.reserve(score.size());
  for (int i = 0; i < static_cast<int>(score.size()); ++i)
    if (!mask || (*mask)[i]) idx.push_back(i);
  k = std::min<int>(k, static_cast<int>(idx.size()));
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int a, int b) {
    if (score[a] != score[b]) return score[a] > score[b];
    return a < b;
  });
  idx.resize(k);
  return idx;
}

Result<void> CheckConfig(const RoutingConfig& c, int n_expert) {
  if (c.top_k < 1 || c.top_k > n_expert)
    return Error::InvalidArgument("top_k {} is outside [1, {}]", c.top_k, n_expert);
  if (c.kind == RoutingKind::kSigmoidGroupTopK) {
    if (c.n_group < 1 || n_expert % c.n_group != 0)
      return Error::InvalidArgument("n_group {} does not divide {} experts", c.n_group, n_expert);
    if (c.topk_group < 1 || c.topk_group > c.n_group)
      return Error::InvalidArgument("topk_group {} is outside [1, n_group {}]", c.topk_group, c.n_group);
    if (static_cast<int64_t>(c.topk_group) * (n_expert / c.n_group) < c.top_k)
      return Error::InvalidArgument("topk_group {} groups of {} experts cannot supply top_k {}", c.topk_group,
                                    n_expert / c.n_group, c.top_k);
    if (n_expert / c.n_group < 2 && c.n_group > 1)
      return Error::InvalidArgument("groups of one expert cannot be scored by their top 2");
  }
  return Ok();
}

}  // namespace

Result<void> RouterWeights::Validate() const {
  TENZRO_CHECK_OK(w.Validate("router"));
  if (!logit_bias.empty() && logit_bias.size() != static_cast<size_t>(w.rows))
    return Error::InvalidArgument("router logit bias has {} values, expected {}", logit_bias.size(), w.rows);
  if (!selection_bias.empty() && selection_bias.size() != static_cast<size_t>(w.rows))
    return Error::InvalidArgument("router selection bias has {} values, expected {}", selection_bias.size(),
                                  w.rows);
  return Ok();
}

Result<TokenRouting> SelectExperts(const float* logits, int n_expert, const RoutingConfig& c,
                                   const std::vector<float>& selection_bias) {
  TENZRO_CHECK_OK(CheckConfig(c, n_expert));
  if (!selection_bias.empty() && selection_bias.size() != static_cast<size_t>(n_expert))
    return Error::InvalidArgument("selection bias has {} values, expected {}", selection_bias.size(), n_expert);
  TokenRouting out;
  std::vector<double> weights;
  std::vector<int> chosen;
  switch (c.kind) {
    case RoutingKind::kSoftmaxTopK: {
      std::vector<double> p(logits, logits + n_expert);
      const double mx = *std::max_element(p.begin(), p.end());
      double sum = 0;
      for (double& v : p) { v = std::exp(v - mx); sum += v; }
      for (double& v : p) v /= sum;
      chosen = TopK(p, c.top_k);
      for (int e : chosen) weights.push_back(p[e]);
      if (c.norm_topk_prob) {
        const double s = std::accumulate(weights.begin(), weights.end(), 0.0);
        for (double& w : weights) w /= s;
      }
      break;
    }
    case RoutingKind::kSigmoidGroupTopK: {
      std::vector<double> s(n_expert), b(n_expert);
      for (int e = 0; e < n_expert; ++e) {
        s[e] = 1.0 / (1.0 + std::exp(-static_cast<double>(logits[e])));
        b[e] = s[e] + (selection_bias.empty() ? 0.0 : selection_bias[e]);
      }
      std::vector<bool> mask(n_expert, true);
      if (c.n_group > 1) {
        const int gsize = n_expert / c.n_group;
        std::vector<double> gscore(c.n_group);
        for (int g = 0; g < c.n_group; ++g) {
          std::vector<double> members(b.begin() + g * gsize, b.begin() + (g + 1) * gsize);
          std::partial_sort(members.begin(), members.begin() + 2, members.end(), std::greater<double>());
          gscore[g] = members[0] + members[1];
        }
        const std::vector<int> groups = TopK(gscore, c.topk_group);
        std::fill(mask.begin(), mask.end(), false);
        for (int g : groups)
          for (int e = g * gsize; e < (g + 1) * gsize; ++e) mask[e] = true;
      }
      chosen = TopK(b, c.top_k, &mask);
      for (int e : chosen) weights.push_back(s[e]);
      if (c.norm_topk_prob) {
        const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
        for (double& w : weights) w /= sum + 1e-20;
      }
      for (double& w : weights) w *= c.routed_scaling_factor;
      break;
    }
    case RoutingKind::kTopKSoftmax: {
      std::vector<double> l(logits, logits + n_expert);
      chosen = TopK(l, c.top_k);
      const double mx = l[chosen[0]];
      double sum = 0;
      for (int e : chosen) { weights.push_back(std::exp(l[e] - mx)); sum += weights.back(); }
      for (double& w : weights) w /= sum;
      break;
    }
  }
  out.experts.resize(chosen.size());
  for (size_t i = 0; i < chosen.size(); ++i) out.experts[i] = {chosen[i], static_cast<float>(weights[i])};
  return out;
}

Result<std::vector<TokenRouting>> Route(const RouterWeights& router, const RoutingConfig& config, const float* x,
                                        int n_tok, ThreadPool* pool) {
  TENZRO_CHECK_OK(router.Validate());
  const int n_expert = router.n_expert();
  TENZRO_CHECK_OK(CheckConfig(config, n_expert));
  if (n_tok < 0) return Error::InvalidArgument("negative token count {}", n_tok);
  std::vector<float> logits(static_cast<size_t>(n_tok) * n_expert);
  TENZRO_CHECK_OK(MatMul(router.w, x, n_tok, logits.data(), pool));
  std::vector<TokenRouting> out(n_tok);
  for (int t = 0; t < n_tok; ++t) {
    float* l = logits.data() + static_cast<size_t>(t) * n_expert;
    for (size_t e = 0; e < router.logit_bias.size(); ++e) l[e] += router.logit_bias[e];
    TENZRO_TRY(out[t], SelectExperts(l, n_expert, config, router.selection_bias));
  }
  return out;
}

}  // namespace tenzro::runtime
