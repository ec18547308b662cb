// The split regexes of pre_tokenizer.h as hand-written matchers. Each branch
// below is one alternative of the regex, tried in the regex's order; the
// comments give the alternative and why backtracking reduces to the rule.
#include "tokenizer/pre_tokenizer.h"

#include "tokenizer/unicode.h"

namespace tenzro::tokenizer {
namespace {

struct Char {
  uint8_t cls = 0;
  size_t len = 0;  // 0 at the end of the text
  char32_t cp = 0;
};

Char At(std::string_view t, size_t pos) {
  if (pos >= t.size()) return {};
  auto b = static_cast<uint8_t>(t[pos]);
  if (b < 0x80) return {ClassOf(b), 1, b};
  size_t len;
  char32_t cp = DecodeUtf8(t, pos, len);
  return {ClassOf(cp), len, cp};
}

// End of the run of characters whose class intersects `any` from `pos`.
size_t RunEnd(std::string_view t, size_t pos, uint8_t any) {
  while (pos < t.size()) {
    Char c = At(t, pos);
    if (!(c.cls & any)) break;
    pos += c.len;
  }
  return pos;
}

// End of the run of characters whose class does not intersect `none`
// (characters of no class, such as punctuation, included).
size_t RunEndNot(std::string_view t, size_t pos, uint8_t none) {
  while (pos < t.size()) {
    Char c = At(t, pos);
    if (c.cls & none) break;
    pos += c.len;
  }
  return pos;
}

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

// 's|'t|'re|'ve|'m|'ll|'d at pos (t[pos] == '\''): the match length or 0.
size_t Contraction(std::string_view t, size_t pos, bool fold_case) {
  auto at = [&](size_t i) -> char {
    if (pos + i >= t.size()) return 0;
    return fold_case ? Lower(t[pos + i]) : t[pos + i];
  };
  char a = at(1), b = at(2);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// The whitespace alternatives shared by all kinds, at a White_Space char:
//   \s*[\r\n]+   (Qwen only) greedy \s* backs off to the last \r or \n of the
//                whitespace run, and [\r\n]+ ends right after it;
//   \s+(?!\S)    the run, less its last character when a non-space follows;
//   \s+          the run (a single space before a non-space).
size_t Whitespace(std::string_view t, size_t pos, bool newline_rule) {
  size_t end = pos, last_start = pos, last_newline_end = 0;
  while (end < t.size()) {
    Char c = At(t, end);
    if (!(c.cls & kClassSpace)) break;
    last_start = end;
    end += c.len;
    if (c.cls & kClassNewline) last_newline_end = end;
  }
  if (newline_rule && last_newline_end != 0) return last_newline_end - pos;
  if (end == t.size() || last_start == pos) return end - pos;
  return last_start - pos;
}

size_t QwenPiece(std::string_view t, size_t pos, bool marks) {
  const uint8_t body = kClassLetter | (marks ? kClassMark : 0);
  const uint8_t not_other = kClassSpace | kClassLetter | kClassNumber | (marks ? kClassMark : 0);
  Char c = At(t, pos);
  // (?i:'s|'t|'re|'ve|'m|'ll|'d)
  if (c.cp == '\'') {
    if (size_t n = Contraction(t, pos, true)) return n;
  }
  // [^\r\n\p{L}\p{N}]?\p{L}+  (\p{L} is [\p{L}\p{M}] for qwen35)
  if (c.cls & body) return RunEnd(t, pos, body) - pos;
  if (!(c.cls & (kClassNewline | kClassLetter | kClassNumber))) {
    Char next = At(t, pos + c.len);
    if (next.cls & body) return RunEnd(t, pos + c.len, body) - pos;
  }
  // \p{N}
  if (c.cls & kClassNumber) return c.len;
  // ` ?[^\s\p{L}\p{N}]+[\r\n]*`
  size_t p = pos;
  if (c.cp == ' ' && (At(t, pos + 1).cls & not_other) == 0 && pos + 1 < t.size()) p = pos + 1;
  if (p != pos || !(c.cls & not_other)) {
    p = RunEndNot(t, p, not_other);
    while (p < t.size() && (t[p] == '\r' || t[p] == '\n')) ++p;
    return p - pos;
  }
  return Whitespace(t, pos, true);
}

size_t Gpt2Piece(std::string_view t, size_t pos) {
  const uint8_t not_other = kClassSpace | kClassLetter | kClassNumber;
  Char c = At(t, pos);
  if (c.cp == '\'') {
    if (size_t n = Contraction(t, pos, false)) return n;
  }
  // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`
  size_t start = pos;
  Char body = c;
  if (c.cp == ' ' && pos + 1 < t.size()) {
    body = At(t, pos + 1);
    start = pos + 1;
  }
  if (body.cls & kClassLetter) return RunEnd(t, start, kClassLetter) - pos;
  if (body.cls & kClassNumber) return RunEnd(t, start, kClassNumber) - pos;
  if (!(body.cls & not_other)) return RunEndNot(t, start, not_other) - pos;
  return Whitespace(t, pos, false);
}

}  // namespace

size_t NextPieceLength(PreTokenizerKind kind, std::string_view text, size_t pos) {
  switch (kind) {
    case PreTokenizerKind::kQwen2: return QwenPiece(text, pos, false);
    case PreTokenizerKind::kQwen35: return QwenPiece(text, pos, true);
    case PreTokenizerKind::kGpt2: return Gpt2Piece(text, pos);
  }
  return text.size() - pos;
}

std::vector<std::string_view> PreTokenizeToVector(PreTokenizerKind kind, std::string_view text) {
  std::vector<std::string_view> out;
  PreTokenize(kind, text, [&](std::string_view p) { out.push_back(p); });
  return out;
}

}  // namespace tenzro::tokenizer
