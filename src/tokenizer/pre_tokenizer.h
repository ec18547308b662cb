// tenzro tokenizer: the split step before byte-level BPE, written by hand.
//
// Each kind reproduces one regex of llama.cpp / Hugging Face exactly (leftmost
// alternative wins, greedy quantifiers with backtracking), without a regex
// engine; character classes come from tokenizer/unicode.h.
//   kQwen2  (`qwen2`, also Qwen3's tokenizer.json):
//     (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}
//     | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   kQwen35 (`qwen35`): kQwen2 with combining marks kept with letters:
//     ...|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|...
//   kGpt2   (`gpt2`, `default`): GPT-2's
//     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// The contractions are matched with ASCII case folding only ('S matches, the
// long s U+017F does not), as llama.cpp spells them ('[sS]) and as
// transformers.js rewrites (?i:...); a full case-folding engine (Hugging
// Face's Rust tokenizers) also takes 'ſ as 's. Bytes that are not well-formed
// UTF-8 are single characters of no class, so every byte lands in a piece.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace tenzro::tokenizer {

enum class PreTokenizerKind : uint8_t { kQwen2, kQwen35, kGpt2 };

// Calls `piece(std::string_view)` for each piece of `text` in order; the
// pieces are non-empty and concatenate to `text`.
template <typename Fn>
void PreTokenize(PreTokenizerKind kind, std::string_view text, Fn&& piece);

// The piece lengths of `text` (the same split as PreTokenize), for callers
// that want them as a list.
std::vector<std::string_view> PreTokenizeToVector(PreTokenizerKind kind, std::string_view text);

// The length in bytes of the piece starting at text[pos]. REQUIRES: pos < size.
size_t NextPieceLength(PreTokenizerKind kind, std::string_view text, size_t pos);

template <typename Fn>
void PreTokenize(PreTokenizerKind kind, std::string_view text, Fn&& piece) {
  for (size_t pos = 0; pos < text.size();) {
    size_t n = NextPieceLength(kind, text, pos);
    piece(text.substr(pos, n));
    pos += n;
  }
}

}  // namespace tenzro::tokenizer
