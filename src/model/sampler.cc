#include "model/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tenzro::model {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Descending logit, then ascending id: a strict total order, so every sort
// and selection below is deterministic.
bool Better(const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}

uint64_t SplitMix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

Result<void> SamplingParams::Validate() const {
  if (!std::isfinite(temperature) || temperature < 0)
    return Error::InvalidArgument("temperature must be finite and >= 0, got {}", temperature);
  if (top_k < 0) return Error::InvalidArgument("top_k must be >= 0 (0 = off), got {}", top_k);
  if (!(top_p > 0 && top_p <= 1)) return Error::InvalidArgument("top_p must be in (0, 1], got {}", top_p);
  if (!(min_p >= 0 && min_p < 1)) return Error::InvalidArgument("min_p must be in [0, 1), got {}", min_p);
  if (!std::isfinite(repetition_penalty) || repetition_penalty <= 0)
    return Error::InvalidArgument("repetition_penalty must be finite and > 0, got {}", repetition_penalty);
  if (!(presence_penalty >= -2 && presence_penalty <= 2))
    return Error::InvalidArgument("presence_penalty must be in [-2, 2], got {}", presence_penalty);
  if (!(frequency_penalty >= -2 && frequency_penalty <= 2))
    return Error::InvalidArgument("frequency_penalty must be in [-2, 2], got {}", frequency_penalty);
  if (penalty_last_n < 0) return Error::InvalidArgument("penalty_last_n must be >= 0, got {}", penalty_last_n);
  return Ok();
}

Rng::Rng(uint64_t seed) {
  for (auto& w : s_) w = SplitMix64(seed);
}

uint64_t Rng::Next() {
  const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = Rotl(s_[3], 45);
  return result;
}

Result<Sampler> Sampler::Create(const SamplingParams& params) {
  TENZRO_CHECK_OK(params.Validate());
  Sampler s(params);
  s.ring_.reserve(static_cast<size_t>(params.penalty_last_n));
  return s;
}

void Sampler::Accept(int32_t token) {
  if (token < 0 || params_.penalty_last_n == 0) return;
  const size_t cap = static_cast<size_t>(params_.penalty_last_n);
  if (ring_.size() < cap) {
    ring_.push_back(token);
  } else {
    ring_[ring_head_] = token;
    ring_head_ = (ring_head_ + 1) % cap;
  }
}

void Sampler::ResetHistory() {
  ring_.clear();
  ring_head_ = 0;
}

std::vector<int32_t> Sampler::History() const {
  std::vector<int32_t> out(ring_.begin() + static_cast<ptrdiff_t>(ring_head_), ring_.end());
  out.insert(out.end(), ring_.begin(), ring_.begin() + static_cast<ptrdiff_t>(ring_head_));
  return out;
}

bool Sampler::HasPenalties() const {
  return !ring_.empty() && (params_.repetition_penalty != 1 || params_.presence_penalty != 0 ||
                            params_.frequency_penalty != 0);
}

void Sampler::LoadPenalized(std::span<const float> in) {
  logits_.resize(in.size());
  for (size_t i = 0; i < in.size(); ++i) logits_[i] = std::isnan(in[i]) ? kNegInf : in[i];
  if (!HasPenalties()) return;
  // Each distinct token of the window once, with its count.
  window_.assign(ring_.begin(), ring_.end());
  std::sort(window_.begin(), window_.end());
  for (size_t i = 0; i < window_.size();) {
    size_t j = i;
    while (j < window_.size() && window_[j] == window_[i]) ++j;
    const auto id = static_cast<size_t>(window_[i]);
    const auto count = static_cast<float>(j - i);
    i = j;
    if (id >= logits_.size()) continue;  // a token this row's vocabulary lacks
    float& l = logits_[id];
    if (params_.repetition_penalty != 1) l = l > 0 ? l / params_.repetition_penalty : l * params_.repetition_penalty;
    l -= params_.presence_penalty + params_.frequency_penalty * count;
  }
}

int32_t Sampler::Greedy() const {
  int32_t best = -1;
  float best_l = kNegInf;
  for (size_t i = 0; i < logits_.size(); ++i) {
    if (logits_[i] > best_l) {  // strict: ties keep the lowest id
      best_l = logits_[i];
      best = static_cast<int32_t>(i);
    }
  }
  return best;
}

Result<int32_t> Sampler::Sample(std::span<const float> logits) {
  if (logits.empty()) return Error::InvalidArgument("logits: empty row");
  LoadPenalized(logits);
  if (params_.temperature == 0) {
    const int32_t t = Greedy();
    if (t < 0) return Error::InvalidArgument("logits: no finite value among {}", logits.size());
    return t;
  }
  return Stochastic();
}

Result<int32_t> Sampler::SampleDraft(std::span<const float> logits, int32_t draft) {
  if (params_.temperature == 0) return Sample(logits);
  if (logits.empty()) return Error::InvalidArgument("logits: empty row");
  LoadPenalized(logits);
  TENZRO_TRY(double total, Distribution());
  double p_draft = 0;
  for (size_t i = 0; i < cand_.size(); ++i)
    if (cand_[i].second == draft) p_draft = probs_[i];
  // Accept with probability p(draft) ...
  if (rng_.NextDouble() * total < p_draft) return draft;
  // ... else draw from p without the draft, renormalised.
  const double rest = total - p_draft;
  const double u = rng_.NextDouble() * rest;
  double cum = 0;
  int32_t last = -1;
  for (size_t i = 0; i < cand_.size(); ++i) {
    if (cand_[i].second == draft) continue;
    last = cand_[i].second;
    cum += probs_[i];
    if (u < cum) return last;
  }
  return last >= 0 ? last : draft;  // rounding left u at the very top (or only the draft had mass)
}

size_t Sampler::TopPKeep(bool sorted, float max_l) {
  double total = 0;
  for (auto& c : cand_) total += std::exp(static_cast<double>(c.first) - max_l);
  const double target = static_cast<double>(params_.top_p) * total;
  // The smallest prefix (in Better order) whose mass reaches top_p, at least
  // one token. Unsorted candidates are sorted only as far as needed: the best
  // 1024 first (enough for any peaked distribution), then 8x more each round, all at once past half.
  size_t m = sorted ? cand_.size() : std::min<size_t>(cand_.size(), 1024);
  for (;;) {
    if (!sorted)
      std::partial_sort(cand_.begin(), cand_.begin() + static_cast<ptrdiff_t>(m), cand_.end(), Better);
    double cum = 0;
    for (size_t i = 0; i < m; ++i) {
      cum += std::exp(static_cast<double>(cand_[i].first) - max_l);
      if (cum >= target) return i + 1;
    }
    if (m == cand_.size()) return m;  // rounding kept the sum just under target
    m *= 8;
    if (m * 2 >= cand_.size()) {  // most of it: one full sort is cheaper than a big heap
      std::sort(cand_.begin(), cand_.end(), Better);
      sorted = true;
      m = cand_.size();
    }
  }
}

Result<double> Sampler::Distribution() {
  cand_.clear();
  for (size_t i = 0; i < logits_.size(); ++i)
    if (logits_[i] != kNegInf) cand_.emplace_back(logits_[i], static_cast<int32_t>(i));
  if (cand_.empty()) return Error::InvalidArgument("logits: no finite value among {}", logits_.size());
  // +inf logits: they share all the mass; keep only them (as 0 after the shift).
  if (cand_.size() > 0 && std::any_of(cand_.begin(), cand_.end(), [](auto& c) { return std::isinf(c.first); })) {
    std::erase_if(cand_, [](auto& c) { return !std::isinf(c.first); });
    for (auto& c : cand_) c.first = 0;
  }

  bool sorted = false;
  const size_t k = static_cast<size_t>(params_.top_k);
  if (k > 0 && k < cand_.size()) {
    std::partial_sort(cand_.begin(), cand_.begin() + static_cast<ptrdiff_t>(k), cand_.end(), Better);
    cand_.resize(k);
    sorted = true;
  } else if (k > 0) {
    std::sort(cand_.begin(), cand_.end(), Better);  // k >= candidates: at most k entries
    sorted = true;
  }

  const float max_l = sorted ? cand_.front().first
                             : std::max_element(cand_.begin(), cand_.end(), [](auto& a, auto& b) {
                                 return a.first < b.first;
                               })->first;
  if (params_.top_p < 1 && cand_.size() > 1) cand_.resize(TopPKeep(sorted, max_l));
  if (params_.min_p > 0 && cand_.size() > 1) {
    // p_i >= min_p * p_max  <=>  l_i >= l_max + log(min_p); order is kept.
    const double threshold = static_cast<double>(max_l) + std::log(static_cast<double>(params_.min_p));
    std::erase_if(cand_, [&](auto& c) { return static_cast<double>(c.first) < threshold; });
  }

  // Temperature, softmax and the draw, in double.
  const double inv_t = 1.0 / static_cast<double>(params_.temperature);
  probs_.resize(cand_.size());
  double total = 0;
  for (size_t i = 0; i < cand_.size(); ++i) {
    probs_[i] = std::exp((static_cast<double>(cand_[i].first) - max_l) * inv_t);
    total += probs_[i];
  }
  return total;
}

Result<int32_t> Sampler::Stochastic() {
  TENZRO_TRY(double total, Distribution());
  const double u = rng_.NextDouble() * total;
  double cum = 0;
  for (size_t i = 0; i < cand_.size(); ++i) {
    cum += probs_[i];
    if (u < cum) return cand_[i].second;
  }
  return cand_.back().second;  // rounding left u at the very top
}

Result<LogprobResult> Logprobs(std::span<const float> logits, int32_t chosen, int n_top) {
  if (chosen < 0 || static_cast<size_t>(chosen) >= logits.size())
    return Error::InvalidArgument("logprobs: chosen token {} outside the vocabulary of {}", chosen, logits.size());
  if (n_top < 0) return Error::InvalidArgument("logprobs: n_top must be >= 0, got {}", n_top);
  auto at = [&](size_t i) { return std::isnan(logits[i]) ? static_cast<double>(kNegInf) : logits[i]; };
  double max_l = -std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < logits.size(); ++i) max_l = std::max(max_l, at(i));
  if (!std::isfinite(max_l)) return Error::InvalidArgument("logprobs: no finite logit among {}", logits.size());
  double sum = 0;
  for (size_t i = 0; i < logits.size(); ++i) sum += std::exp(at(i) - max_l);
  // logprob = (x - max) - log(sum): subtracting max + log(sum) in one go would
  // lose log(sum) next to a huge max.
  const double log_sum = std::log(sum);
  auto logprob = [&](double x) { return static_cast<float>((x - max_l) - log_sum); };

  LogprobResult r;
  r.chosen = {chosen, logprob(at(static_cast<size_t>(chosen)))};
  // The n best by one scan, kept sorted by Better (n is small: OpenAI allows 20).
  const size_t n = std::min(static_cast<size_t>(n_top), logits.size());
  std::vector<std::pair<float, int32_t>> best;
  best.reserve(n + 1);
  for (size_t i = 0; i < logits.size() && n > 0; ++i) {
    std::pair<float, int32_t> c{static_cast<float>(at(i)), static_cast<int32_t>(i)};
    if (best.size() == n && !Better(c, best.back())) continue;
    best.insert(std::upper_bound(best.begin(), best.end(), c, Better), c);
    if (best.size() > n) best.pop_back();
  }
  for (auto& [l, id] : best) r.top.push_back({id, logprob(l)});
  return r;
}

}  // namespace tenzro::model
