#include "tokenizer/stream_decoder.h"

#include "tokenizer/unicode.h"

namespace tenzro::tokenizer {

std::string StreamDecoder::Feed(int32_t id) {
  if (tokenizer_.IsValid(id)) pending_ += tokenizer_.TokenBytes(id);
  else pending_ += "\xEF\xBF\xBD";
  size_t n = CompletePrefixLength(pending_);
  std::string out = SanitizeUtf8(std::string_view(pending_).substr(0, n));
  pending_.erase(0, n);
  return out;
}

std::string StreamDecoder::Flush() {
  std::string out = SanitizeUtf8(pending_);
  pending_.clear();
  return out;
}

}  // namespace tenzro::tokenizer
