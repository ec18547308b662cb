#include "model/stop_matcher.h"

#include <algorithm>

namespace tenzro::model {
namespace {

// Length of an incomplete UTF-8 sequence at the end of `s` (0 if the text
// ends on a character boundary or with bytes that cannot start one).
size_t IncompleteUtf8Tail(std::string_view s) {
  const size_t n = s.size();
  for (size_t back = 1; back <= std::min<size_t>(3, n); ++back) {
    const auto c = static_cast<unsigned char>(s[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: look further back
    size_t need = 0;
    if ((c & 0xE0) == 0xC0) need = 2;
    else if ((c & 0xF0) == 0xE0) need = 3;
    else if ((c & 0xF8) == 0xF0) need = 4;
    return need > back ? back : 0;
  }
  return 0;
}

}  // namespace

Result<StopMatcher> StopMatcher::Create(std::vector<std::string> stops) {
  if (stops.size() > kMaxStopStrings)
    return Error::InvalidArgument("stop: at most {} strings, got {}", kMaxStopStrings, stops.size());
  for (size_t i = 0; i < stops.size(); ++i)
    if (stops[i].empty()) return Error::InvalidArgument("stop[{}]: empty string", i);
  return StopMatcher(std::move(stops));
}

size_t StopMatcher::HoldBack() const {
  const std::string_view h = held_;
  size_t hold = IncompleteUtf8Tail(h);
  for (const auto& s : stops_) {
    // Longest proper prefix of s that is a suffix of held_.
    for (size_t len = std::min(s.size() - 1, h.size()); len > hold; --len) {
      if (h.substr(h.size() - len) == std::string_view(s).substr(0, len)) {
        hold = len;
        break;
      }
    }
  }
  return hold;
}

StopMatcher::Output StopMatcher::Feed(std::string_view text) {
  Output out;
  if (stopped_) {
    out.stopped = true;
    return out;
  }
  held_.append(text);
  size_t first = std::string::npos;
  for (const auto& s : stops_) first = std::min(first, held_.find(s));
  if (first != std::string::npos) {
    out.emit = held_.substr(0, first);
    out.stopped = stopped_ = true;
    held_.clear();
    return out;
  }
  const size_t emit = held_.size() - HoldBack();
  out.emit = held_.substr(0, emit);
  held_.erase(0, emit);
  return out;
}

std::string StopMatcher::Flush() {
  std::string out;
  out.swap(held_);
  return out;
}

}  // namespace tenzro::model
