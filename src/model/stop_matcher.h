// tenzro model: OpenAI-style `stop` strings on streamed text.
//
// Generated text arrives in pieces (one detokenized token at a time). A stop
// string may straddle pieces, so the matcher holds back any tail of the text
// that could still be the start of a stop string and emits the rest. On the
// earliest match it emits the text before the match and reports stopped; the
// stop string and anything after it are never emitted. Matching is on bytes:
// a UTF-8 stop string matches its exact encoding. The matcher also never
// emits a trailing incomplete UTF-8 sequence (it holds it for the next piece),
// so each emitted chunk is whole characters when the input is valid UTF-8.
// Pure logic; not thread-safe (one per sequence).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace tenzro::model {

inline constexpr size_t kMaxStopStrings = 4;  // OpenAI's limit

class StopMatcher {
 public:
  // kInvalidArgument for more than kMaxStopStrings or an empty string. No
  // stop strings is valid (everything passes through, minus UTF-8 holdback).
  static Result<StopMatcher> Create(std::vector<std::string> stops);

  struct Output {
    std::string emit;      // text now safe to send
    bool stopped = false;  // a stop string matched; Feed/Flush return nothing more
  };
  // Appends `text` to the held-back tail and returns what can be emitted.
  // After a stop, returns {"", true} without looking at `text`.
  Output Feed(std::string_view text);
  // End of generation: returns the held-back text (empty after a stop).
  std::string Flush();

  bool stopped() const { return stopped_; }
  size_t held_bytes() const { return held_.size(); }

 private:
  explicit StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}
  // Bytes at the end of held_ that may begin a stop string or are an
  // incomplete UTF-8 sequence.
  size_t HoldBack() const;

  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace tenzro::model
