#include "core/bytes.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace tenzro {

Error ByteReader::Corrupt(std::string_view what, std::string_view detail) const {
  if (context_.empty()) return Error::Corruption("{} at offset {}: {}", what, pos_, detail);
  return Error::Corruption("{}: {} at offset {}: {}", context_, what, pos_, detail);
}

#define TENZRO_READ_POD(T, name)                                              \
  Result<T> ByteReader::name(std::string_view what) {                       \
    if (remaining() < sizeof(T))                                            \
      return Corrupt(what, fmt::format("need {} bytes, {} left", sizeof(T), remaining())); \
    T v;                                                                    \
    std::memcpy(&v, data_.data() + pos_, sizeof(T));                        \
    pos_ += sizeof(T);                                                      \
    return v;                                                               \
  }
TENZRO_READ_POD(uint8_t, U8)
TENZRO_READ_POD(uint16_t, U16)
TENZRO_READ_POD(uint32_t, U32)
TENZRO_READ_POD(uint64_t, U64)
TENZRO_READ_POD(int32_t, I32)
TENZRO_READ_POD(int64_t, I64)
TENZRO_READ_POD(float, F32)
TENZRO_READ_POD(double, F64)
#undef TENZRO_READ_POD

Result<ByteSpan> ByteReader::Take(uint64_t n, std::string_view what) {
  if (n > remaining()) return Corrupt(what, fmt::format("need {} bytes, {} left", n, remaining()));
  ByteSpan s = data_.subspan(pos_, n);
  pos_ += n;
  return s;
}

Result<std::string> ByteReader::String(uint64_t n, std::string_view what) {
  TENZRO_TRY(ByteSpan s, Take(n, what));
  return std::string(reinterpret_cast<const char*>(s.data()), s.size());
}

Result<void> ByteReader::Skip(uint64_t n, std::string_view what) {
  if (n > remaining()) return Corrupt(what, fmt::format("cannot skip {} bytes, {} left", n, remaining()));
  pos_ += n;
  return Ok();
}

Result<void> ByteReader::Seek(uint64_t offset, std::string_view what) {
  if (offset > data_.size())
    return Corrupt(what, fmt::format("offset {} is past the end ({} bytes)", offset, data_.size()));
  pos_ = offset;
  return Ok();
}

Result<void> ByteReader::CheckCount(uint64_t count, uint64_t min_elem_bytes, std::string_view what) const {
  uint64_t need;
  if (MulOverflow(count, min_elem_bytes, &need) || need > remaining())
    return Corrupt(what, fmt::format("count {} cannot fit in the {} bytes left", count, remaining()));
  return Ok();
}

std::string ToHex(ByteSpan data) {
  static const char* kDigits = "0123456789abcdef";
  std::string s(data.size() * 2, '0');
  for (size_t i = 0; i < data.size(); ++i) {
    s[2 * i] = kDigits[data[i] >> 4];
    s[2 * i + 1] = kDigits[data[i] & 15];
  }
  return s;
}

static int HexVal(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Result<void> FromHex(std::string_view hex, std::span<uint8_t> out) {
  if (hex.size() != out.size() * 2)
    return Error::InvalidArgument("expected {} hex digits, got {}", out.size() * 2, hex.size());
  for (size_t i = 0; i < out.size(); ++i) {
    int hi = HexVal(hex[2 * i]), lo = HexVal(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return Error::InvalidArgument("invalid hex digit near position {}", 2 * i);
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return Ok();
}

Result<uint64_t> ParseByteSize(std::string_view text) {
  std::string s(text);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  if (s.empty()) return Error::InvalidArgument("empty byte size");
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0) return Error::InvalidArgument("byte size '{}' does not start with a number", text);
  char* end = nullptr;
  std::string num = s.substr(0, i);
  double v = std::strtod(num.c_str(), &end);
  if (end != num.c_str() + num.size() || !std::isfinite(v) || v < 0)
    return Error::InvalidArgument("byte size '{}' has a malformed number", text);
  std::string unit;
  for (size_t j = i; j < s.size(); ++j)
    if (!std::isspace(static_cast<unsigned char>(s[j]))) unit += static_cast<char>(std::tolower(s[j]));
  double mult;
  if (unit.empty() || unit == "b") mult = 1;
  else if (unit == "k" || unit == "kib") mult = 1024.0;
  else if (unit == "m" || unit == "mib") mult = 1024.0 * 1024;
  else if (unit == "g" || unit == "gib") mult = 1024.0 * 1024 * 1024;
  else if (unit == "t" || unit == "tib") mult = 1024.0 * 1024 * 1024 * 1024;
  else if (unit == "kb") mult = 1e3;
  else if (unit == "mb") mult = 1e6;
  else if (unit == "gb") mult = 1e9;
  else if (unit == "tb") mult = 1e12;
  else return Error::InvalidArgument("byte size '{}' has unknown unit '{}' (use B, KiB, MiB, GiB, KB, MB, GB)", text, unit);
  double bytes = v * mult;
  if (bytes > 1.8e19) return Error::InvalidArgument("byte size '{}' is too large", text);
  return static_cast<uint64_t>(std::llround(bytes));
}

std::string FormatBytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) { v /= 1024; ++u; }
  if (u == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.2f} {}", v, units[u]);
}

}  // namespace tenzro
