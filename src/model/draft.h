// tenzro model: drafts for speculative decoding by prompt lookup (n-gram).
//
// Pure logic, no I/O. As llama.cpp's `lookup` / "prompt lookup decoding":
// take the last n tokens of the history (n from ngram_max down to
// ngram_min), find their most recent earlier occurrence, and propose the up
// to draft_max tokens that followed it. Text that repeats its own context
// (code, quoting, lists, summaries of the prompt) gets long accepted drafts;
// elsewhere the draft is usually empty and decoding goes on one token per
// step.
//
// Cost per call: at most scan_max start positions per n-gram size, each
// compared over at most ngram_max tokens — O(scan_max * ngram_max^2) token
// compares, whatever the history's length (only its last scan_max + ngram_max
// tokens are looked at). No allocation beyond the returned draft.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/result.h"

namespace tenzro::model {

struct DraftOptions {
  int draft_max = 0;     // tokens proposed at most; 0 = no drafts
  int ngram_min = 1;     // shortest suffix matched (>= 1)
  int ngram_max = 3;     // longest (>= ngram_min, <= 16)
  int scan_max = 4096;   // earlier positions examined per n-gram size (>= 1)

  // kInvalidArgument naming the first bad field. draft_max is at most 63
  // (a verify step feeds it plus one token: Session::kMaxRollbackTokens).
  Result<void> Validate() const;
};

// The draft for `history` (prompt and generated tokens, oldest first):
// empty when no suffix of ngram_min..ngram_max tokens occurred before within
// the scanned window. REQUIRES: options.Validate() passed.
std::vector<int32_t> PromptLookupDraft(std::span<const int32_t> history, const DraftOptions& options);

}  // namespace tenzro::model
