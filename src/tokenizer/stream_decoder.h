// tenzro tokenizer: incremental decoding for streamed output.
//
// A token may end in the middle of a UTF-8 character (byte-level BPE tokens
// such as E3 81), so printing each token's bytes as they come would show
// broken characters. StreamDecoder keeps the bytes of a trailing incomplete
// but so far well-formed sequence and returns only complete text; bytes that
// can never become a character are returned as U+FFFD at once (the same
// replacement Tokenizer::Decode makes). The concatenation of every Feed()
// and the final Flush() equals Tokenizer::Decode of all the ids.
// Thread-safety: one StreamDecoder per stream; the Tokenizer must outlive it.
#pragma once

#include <cstdint>
#include <string>

#include "tokenizer/tokenizer.h"

namespace tenzro::tokenizer {

class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}

  // Adds one token; returns the text that became complete (may be empty).
  // An id out of range adds U+FFFD.
  std::string Feed(int32_t id);
  // Ends the stream: returns the held bytes (as U+FFFD) and resets.
  std::string Flush();
  // Bytes held back, waiting for the rest of a character (0..3).
  size_t pending() const { return pending_.size(); }

 private:
  const Tokenizer& tokenizer_;
  std::string pending_;
};

}  // namespace tenzro::tokenizer
