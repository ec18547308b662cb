#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/unicode.h"

namespace tenzro::tokenizer {
namespace {

struct Tables {
  std::array<char32_t, 256> to_char{};
  std::array<int16_t, 0x144> to_byte{};  // every character of the alphabet is below U+0144
};

const Tables& GetTables() {
  static const Tables t = [] {
    Tables x;
    x.to_byte.fill(-1);
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      x.to_char[b] = printable ? static_cast<char32_t>(b) : next++;
      x.to_byte[x.to_char[b]] = static_cast<int16_t>(b);
    }
    return x;
  }();
  return t;
}

}  // namespace

char32_t ByteToChar(uint8_t b) { return GetTables().to_char[b]; }

int CharToByte(char32_t c) {
  const auto& t = GetTables().to_byte;
  return c < t.size() ? t[c] : -1;
}

std::string BytesToSymbols(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char b : bytes) AppendUtf8(ByteToChar(static_cast<uint8_t>(b)), out);
  return out;
}

std::optional<std::string> SymbolsToBytes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    size_t len;
    char32_t cp = DecodeUtf8(text, pos, len);
    int b = cp == kInvalidCodePoint ? -1 : CharToByte(cp);
    if (b < 0) return std::nullopt;
    out += static_cast<char>(b);
    pos += len;
  }
  return out;
}

}  // namespace tenzro::tokenizer
