#include "tokenizer/unicode.h"

#include <array>
#include <memory>

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>

namespace tenzro::tokenizer {
namespace {

uint8_t ClassFromIcu(char32_t cp) {
  uint32_t gc = U_GET_GC_MASK(static_cast<UChar32>(cp));
  uint8_t c = 0;
  if (gc & U_GC_L_MASK) c |= kClassLetter;
  if (gc & U_GC_N_MASK) c |= kClassNumber;
  if (gc & U_GC_M_MASK) c |= kClassMark;
  if (u_isUWhiteSpace(static_cast<UChar32>(cp))) c |= kClassSpace;
  if (cp == '\r' || cp == '\n') c |= kClassNewline;
  return c;
}

// The BMP's classes, computed once (64 KiB): the hot path does no ICU call.
const std::array<uint8_t, 0x10000>& BmpTable() {
  static const auto* table = [] {
    auto* t = new std::array<uint8_t, 0x10000>();
    for (char32_t cp = 0; cp < 0x10000; ++cp) (*t)[cp] = ClassFromIcu(cp);
    return t;
  }();
  return *table;
}

struct Step {
  char32_t cp = 0;
  uint8_t len = 1;         // bytes consumed (the maximal subpart when !ok)
  bool ok = false;
  bool truncated = false;  // ill-formed only because the input ended
};

// One step of a UTF-8 decoder (Unicode 15, table 3-7 well-formed sequences).
Step Next(std::string_view s, size_t pos) {
  auto b0 = static_cast<uint8_t>(s[pos]);
  if (b0 < 0x80) return {b0, 1, true, false};
  int need;
  uint8_t lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return {kInvalidCodePoint, 1, false, false};
  }
  char32_t cp = b0 & (0x3F >> need);
  for (int k = 1; k <= need; ++k) {
    if (pos + k >= s.size()) return {kInvalidCodePoint, static_cast<uint8_t>(k), false, true};
    auto b = static_cast<uint8_t>(s[pos + k]);
    if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF))
      return {kInvalidCodePoint, static_cast<uint8_t>(k), false, false};
    cp = (cp << 6) | (b & 0x3F);
  }
  return {cp, static_cast<uint8_t>(need + 1), true, false};
}

}  // namespace

uint8_t ClassOf(char32_t cp) {
  if (cp < 0x10000) return BmpTable()[cp];
  if (cp > 0x10FFFF) return 0;
  return ClassFromIcu(cp);
}

char32_t DecodeUtf8(std::string_view text, size_t pos, size_t& len) {
  Step st = Next(text, pos);
  len = st.ok ? st.len : 1;
  return st.ok ? st.cp : kInvalidCodePoint;
}

void AppendUtf8(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string SanitizeUtf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t pos = 0; pos < bytes.size();) {
    Step st = Next(bytes, pos);
    if (st.ok) out.append(bytes.substr(pos, st.len));
    else out += "\xEF\xBF\xBD";
    pos += st.len;
  }
  return out;
}

size_t CompletePrefixLength(std::string_view bytes) {
  for (size_t pos = 0; pos < bytes.size();) {
    Step st = Next(bytes, pos);
    if (st.truncated) return pos;
    pos += st.len;
  }
  return bytes.size();
}

std::string NormalizeNfc(std::string_view text) {
  bool ascii = true;
  for (char c : text) ascii = ascii && static_cast<uint8_t>(c) < 0x80;
  if (ascii) return std::string(text);
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(status);
  if (U_FAILURE(status)) return std::string(text);
  std::string out;
  out.reserve(text.size());
  auto flush = [&](std::string_view seg) {
    if (seg.empty()) return;
    icu::StringPiece piece(seg.data(), static_cast<int32_t>(seg.size()));
    UErrorCode qc = U_ZERO_ERROR;
    if (nfc->isNormalizedUTF8(piece, qc) && U_SUCCESS(qc)) {  // the common case: no copy through ICU
      out.append(seg);
      return;
    }
    std::string norm;
    icu::StringByteSink<std::string> sink(&norm);
    UErrorCode st = U_ZERO_ERROR;
    nfc->normalizeUTF8(0, piece, sink, nullptr, st);
    if (U_FAILURE(st)) out.append(seg);
    else out += norm;
  };
  size_t seg_start = 0;
  for (size_t pos = 0; pos < text.size();) {
    Step st = Next(text, pos);
    if (st.ok) {
      pos += st.len;
      continue;
    }
    flush(text.substr(seg_start, pos - seg_start));
    out.append(text.substr(pos, st.len));
    pos += st.len;
    seg_start = pos;
  }
  flush(text.substr(seg_start));
  return out;
}

}  // namespace tenzro::tokenizer
