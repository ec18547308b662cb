// tenzro model: token sampling for one sequence.
//
// Pure logic, no I/O. A Sampler turns one row of logits into a token id:
//   greedy (temperature == 0): argmax, ties to the lowest id;
//   stochastic: llama.cpp's default chain, in this order:
//     penalties -> top-k -> top-p -> min-p -> temperature -> softmax -> draw.
// Penalties apply in both modes to the tokens among the last penalty_last_n
// accepted ones (prompt tokens included): repetition (CTRL / llama.cpp: a
// positive logit is divided by it, a negative one multiplied), then OpenAI's
// presence/frequency (logit -= presence * [count > 0] + frequency * count).
// top-p and min-p see the distribution at temperature 1, as in llama.cpp.
// NaN logits count as -inf; a row with no finite logit is kInvalidArgument.
//
// Determinism: the draw uses the Sampler's own xoshiro256** (seeded through
// SplitMix64), a double in [0, 1) from 53 bits, and double softmax sums, so
// the same seed, logits and history give the same tokens on every platform
// (no std::*_distribution, whose output is implementation-defined).
//
// Cost per call: O(V) copy of the row, plus O(V log k) for top-k (no full
// sort); top-p without top-k sorts only the best 1024 candidates unless
// their mass falls short of top_p (then 8x more, up to all). Buffers are
// reused: no allocation per call once they have grown to the vocabulary size.
// Thread-safety: a Sampler is one sequence's state; not thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "core/result.h"

namespace tenzro::model {

struct SamplingParams {
  float temperature = 0;          // 0 = greedy; >= 0, finite
  int top_k = 0;                  // 0 = off; >= 0
  float top_p = 1;                // (0, 1]; 1 = off
  float min_p = 0;                // [0, 1); 0 = off
  float repetition_penalty = 1;   // > 0, finite; 1 = off
  float presence_penalty = 0;     // [-2, 2] (OpenAI's range)
  float frequency_penalty = 0;    // [-2, 2]
  int penalty_last_n = 64;        // history window for all penalties; >= 0, 0 = off
  uint64_t seed = 0;

  // kInvalidArgument naming the first bad field and its value.
  Result<void> Validate() const;
};

// xoshiro256** seeded by SplitMix64 (the generator's authors' recipe).
class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t Next();
  // Uniform in [0, 1): the top 53 bits of Next() times 2^-53.
  double NextDouble() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  std::array<uint64_t, 4> s_;
};

class Sampler {
 public:
  // kInvalidArgument when params.Validate() fails.
  static Result<Sampler> Create(const SamplingParams& params);

  // Picks the next token from `logits` (one entry per vocabulary id; the
  // vocabulary size may vary between calls). Does not Accept it: the caller
  // does, once the token is final. kInvalidArgument when `logits` is empty
  // or has no finite entry (after NaN -> -inf).
  Result<int32_t> Sample(std::span<const float> logits);

  // Speculative decoding: verifies a drafted token against `logits`. Greedy:
  // Sample(logits) (the draft stands iff it is that token). Stochastic, with
  // p the distribution Sample would draw from: keeps `draft` with
  // probability p(draft), else draws from p with the draft removed and
  // renormalised — the standard rule for a deterministic draft, so the
  // token returned is distributed exactly as Sample's (not the same draws:
  // one or two RNG values). Returns the token (== draft when accepted);
  // Sample's errors. Does not Accept it.
  Result<int32_t> SampleDraft(std::span<const float> logits, int32_t draft);

  // Appends `token` to the history the penalties look at. Call it for every
  // prompt token and every generated token. Negative ids are ignored.
  void Accept(int32_t token);
  // Forgets the history (the RNG keeps its state).
  void ResetHistory();

  const SamplingParams& params() const { return params_; }
  // The penalty window, oldest first (at most penalty_last_n tokens).
  std::vector<int32_t> History() const;

 private:
  explicit Sampler(const SamplingParams& p) : params_(p), rng_(p.seed) {}
  bool HasPenalties() const;
  // Fills logits_ from `in` (NaN -> -inf) and applies the penalties.
  void LoadPenalized(std::span<const float> in);
  int32_t Greedy() const;  // -1 when no finite logit
  Result<int32_t> Stochastic();
  // Fills cand_ and probs_ (unnormalised weights after top-k, top-p, min-p
  // and temperature) from logits_; returns their sum.
  Result<double> Distribution();
  // How many candidates top-p keeps; sorts cand_ (Better order) that far.
  size_t TopPKeep(bool sorted, float max_l);

  SamplingParams params_;
  Rng rng_;
  std::vector<int32_t> ring_;   // penalty window, ring of capacity penalty_last_n
  size_t ring_head_ = 0;        // next slot to overwrite once full
  std::vector<float> logits_;   // reused: the penalized row
  std::vector<std::pair<float, int32_t>> cand_;  // reused: candidates
  std::vector<int32_t> window_; // reused: sorted copy of the window
  std::vector<double> probs_;   // reused: candidate weights
};

struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0;
};

struct LogprobResult {
  TokenLogprob chosen;
  std::vector<TokenLogprob> top;  // the n_top most likely, descending, ties to the lowest id
};

// log-softmax of the raw `logits` (no penalties, temperature 1: the model's
// own distribution, as OpenAI's `logprobs` reports), computed in double with
// the max subtracted. NaN counts as -inf (logprob -inf). n_top is clamped to
// the vocabulary size. kInvalidArgument when `chosen` is out of range,
// n_top < 0, or no logit is finite.
Result<LogprobResult> Logprobs(std::span<const float> logits, int32_t chosen, int n_top);

}  // namespace tenzro::model
