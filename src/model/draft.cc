#include "model/draft.h"

#include <algorithm>

#include "model/session.h"

namespace tenzro::model {

Result<void> DraftOptions::Validate() const {
  if (draft_max < 0 || draft_max > Session::kMaxRollbackTokens - 1)
    return Error::InvalidArgument("draft_max {} outside [0, {}]", draft_max, Session::kMaxRollbackTokens - 1);
  if (ngram_min < 1) return Error::InvalidArgument("ngram_min {} < 1", ngram_min);
  if (ngram_max < ngram_min || ngram_max > 16)
    return Error::InvalidArgument("ngram_max {} outside [ngram_min {}, 16]", ngram_max, ngram_min);
  if (scan_max < 1) return Error::InvalidArgument("scan_max {} < 1", scan_max);
  return Ok();
}

std::vector<int32_t> PromptLookupDraft(std::span<const int32_t> history, const DraftOptions& options) {
  std::vector<int32_t> draft;
  const int64_t size = static_cast<int64_t>(history.size());
  if (options.draft_max <= 0) return draft;
  for (int n = options.ngram_max; n >= options.ngram_min; --n) {
    if (size <= n) continue;
    const int32_t* key = history.data() + size - n;
    // Candidate starts i: the n-gram at i is followed by at least one token,
    // so i <= size - n - 1; the most recent first, scan_max of them.
    const int64_t last = size - n - 1, first = std::max<int64_t>(0, last - options.scan_max + 1);
    for (int64_t i = last; i >= first; --i) {
      if (!std::equal(key, key + n, history.data() + i)) continue;
      const int64_t from = i + n, to = std::min<int64_t>(size, from + options.draft_max);
      draft.assign(history.begin() + from, history.begin() + to);
      return draft;
    }
  }
  return draft;
}

}  // namespace tenzro::model
