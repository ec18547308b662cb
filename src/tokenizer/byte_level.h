// tenzro tokenizer: GPT-2's byte-level alphabet (`bytes_to_unicode`).
//
// Byte-level BPE vocabularies store every token as printable characters: byte
// b is the character ByteToChar(b) (0x21..0x7E, 0xA1..0xAC and 0xAE..0xFF map
// to themselves; the other 68 bytes, in byte order, to U+0100..U+0143). So a
// space is `Ġ` (U+0120) and '\n' is `Ċ` (U+010A).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tenzro::tokenizer {

char32_t ByteToChar(uint8_t b);
// The byte a character stands for; -1 when it is not in the alphabet.
int CharToByte(char32_t c);

// `bytes` spelled in the alphabet (UTF-8 of the characters).
std::string BytesToSymbols(std::string_view bytes);
// The bytes a token's text spells; nullopt when a character is outside the
// alphabet or the text is not well-formed UTF-8.
std::optional<std::string> SymbolsToBytes(std::string_view text);

}  // namespace tenzro::tokenizer
