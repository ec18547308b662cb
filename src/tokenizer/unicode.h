// tenzro tokenizer: the Unicode facts the pre-tokenizer and the decoders need.
//
// Classes come from ICU (Debian 12's libicu72, Unicode 15.0): \p{L} is a
// general category L*, \p{N} N*, \p{M} M*, and \s the White_Space property,
// as in the regex engines the reference tokenizers use (docs/tokenizer.md).
// UTF-8 is decoded leniently: a byte that does not start a well-formed
// sequence is returned as one unit of kInvalid class, so the pre-tokenizer can
// keep every byte of any input (round trip), and the decoders replace
// ill-formed input with U+FFFD one maximal subpart at a time (WHATWG / ICU /
// JS TextDecoder behaviour).
// Thread-safety: all functions are pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tenzro::tokenizer {

inline constexpr char32_t kInvalidCodePoint = 0xFFFFFFFF;

// Bit set of the classes the split regexes test.
enum CharClass : uint8_t {
  kClassLetter = 1,      // \p{L}
  kClassNumber = 2,      // \p{N}
  kClassMark = 4,        // \p{M}
  kClassSpace = 8,       // \s (White_Space)
  kClassNewline = 16,    // \r or \n
};

// The classes of `cp`; 0 for anything else (punctuation, symbols, controls
// that are not White_Space, kInvalidCodePoint).
uint8_t ClassOf(char32_t cp);

// Decodes the code point at text[pos]. Sets `len` to the bytes it takes
// (>= 1). A byte that does not begin a well-formed UTF-8 sequence (stray
// continuation, overlong, surrogate, > U+10FFFF, truncated) yields
// kInvalidCodePoint with len = 1.
// REQUIRES: pos < text.size().
char32_t DecodeUtf8(std::string_view text, size_t pos, size_t& len);

// Appends the UTF-8 encoding of `cp` (REQUIRES: a scalar value).
void AppendUtf8(char32_t cp, std::string& out);

// `bytes` with every maximal ill-formed subpart replaced by U+FFFD.
std::string SanitizeUtf8(std::string_view bytes);

// The length of the longest prefix of `bytes` that ends on a character
// boundary when `bytes` may be continued: a trailing incomplete but so far
// well-formed sequence (e.g. E3 81 of a 3-byte character) is excluded.
size_t CompletePrefixLength(std::string_view bytes);

// NFC of `text` (ICU's normalizer). Ill-formed bytes are kept as they are
// (each well-formed stretch between them is normalized on its own). Should
// ICU fail (it cannot on valid input) the stretch is kept unchanged.
std::string NormalizeNfc(std::string_view text);

}  // namespace tenzro::tokenizer
