// tenzro model: generating tokens for one sequence — prefill, then sample,
// feed, repeat.
//
// Generate feeds the prompt in one engine step, then loops: sample the next
// token from the last logits (sampler.h), hand it to `on_token`, stop on an
// end-of-generation id (unless ignore_eog), on max_tokens or when on_token
// returns false (a stop string matched), else feed it and continue. Text,
// stop strings and streaming are the caller's (the CLI and the API decode
// with tokenizer::StreamDecoder and match with StopMatcher).
//
// Logits, when collected, are one row per position fed: every prompt token,
// then every generated token that was fed back (the last one chosen is not
// fed, so rows = prompt + generated - 1, as the shared reference counts them).
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "core/result.h"
#include "model/engine.h"
#include "model/sampler.h"

namespace tenzro::model {

enum class FinishReason : uint8_t {
  kLength,  // max_tokens reached
  kEog,     // an end-of-generation token was sampled (not passed to on_token)
  kStop,    // on_token returned false
};
const char* FinishReasonName(FinishReason r);  // "length", "eos", "stop"

struct GenerateOptions {
  int max_tokens = 128;           // >= 0
  SamplingParams sampling;        // greedy by default
  std::vector<int32_t> eog;       // end-of-generation ids
  bool ignore_eog = false;
  bool collect_logits = false;
};

struct GenerateResult {
  std::vector<int32_t> tokens;    // generated, in order (the eog token excluded)
  FinishReason finish = FinishReason::kLength;
  int prompt_tokens = 0;
  double prefill_ms = 0;          // the prompt step (includes the first logits)
  double decode_ms = 0;           // all later steps
  std::vector<float> logits;      // collect_logits: rows x n_vocab
};

// Runs on a fresh session (n_past() == 0). Errors: the sampler's
// kInvalidArgument for bad params, the engine's (a prompt that does not fit
// the session: kResourceExhausted), kInvalidArgument for an empty prompt.
Result<GenerateResult> Generate(Engine& engine, Session& session, std::span<const int32_t> prompt,
                                const GenerateOptions& options, const std::function<bool(int32_t)>& on_token);

}  // namespace tenzro::model
