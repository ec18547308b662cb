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
//
// Speculative decoding (draft.draft_max > 0; the session must be created
// with rollback steps, Engine::NewSession's rollback_tokens >= 2; drafts are
// cut to rollback_tokens - 1): each decode step feeds the last token plus a
// prompt-lookup draft (draft.h) with all logits, verifies the draft row by
// row — greedy: a drafted token stands iff it is the argmax; at a
// temperature, Sampler::SampleDraft's rule — delivers the accepted tokens
// and the first corrected (or, all accepted, the next) token, and rolls the
// session back to the tokens kept (Engine::Rollback). Greedy output is
// token for token the non-speculative output, and collected logits are the
// same rows bit for bit; sampled output has the same distribution. A step
// never feeds past max_tokens or the session's capacity.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "core/result.h"
#include "model/draft.h"
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
  DraftOptions draft;             // draft.draft_max 0: no speculative decoding
  // Another draft source in place of prompt lookup (tests, future drafters):
  // given the history (prompt, generated, the token about to be fed), up to
  // `max` tokens (more are cut). Used only when draft.draft_max > 0.
  std::function<std::vector<int32_t>(std::span<const int32_t> history, int max)> drafter;
};

struct GenerateResult {
  std::vector<int32_t> tokens;    // generated, in order (the eog token excluded)
  FinishReason finish = FinishReason::kLength;
  int prompt_tokens = 0;
  double prefill_ms = 0;          // the prompt step (includes the first logits)
  double decode_ms = 0;           // all later steps
  std::vector<float> logits;      // collect_logits: rows x n_vocab
  int steps = 0;                  // decode steps (engine steps after the prompt's)
  int drafted = 0;                // drafted tokens fed
  int accepted = 0;               // of those, accepted
};

// Runs on a fresh session (n_past() == 0). Errors: the sampler's
// kInvalidArgument for bad params, kInvalidArgument for bad draft options or
// drafts asked on a session without rollback, the engine's (a prompt that does not fit
// the session: kResourceExhausted), kInvalidArgument for an empty prompt.
Result<GenerateResult> Generate(Engine& engine, Session& session, std::span<const int32_t> prompt,
                                const GenerateOptions& options, const std::function<bool(int32_t)>& on_token);

}  // namespace tenzro::model
