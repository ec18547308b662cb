// tenzro core: bounds-checked little-endian decoding and encoding.
//
// ByteReader walks a borrowed byte span; every Read* checks the bytes left
// before touching memory and returns kCorruption naming `what` on underflow.
// It never allocates based on a value read from the input: callers must check
// counts against remaining() first (CheckCount helps).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace tenzro {

using Bytes = std::vector<uint8_t>;
using ByteSpan = std::span<const uint8_t>;

class ByteReader {
 public:
  // `context` prefixes every error message (typically the file name).
  explicit ByteReader(ByteSpan data, std::string context = {})
      : data_(data), context_(std::move(context)) {}

  size_t offset() const { return pos_; }
  size_t remaining() const { return data_.size() - pos_; }
  size_t size() const { return data_.size(); }
  ByteSpan data() const { return data_; }

  Result<uint8_t> U8(std::string_view what);
  Result<uint16_t> U16(std::string_view what);
  Result<uint32_t> U32(std::string_view what);
  Result<uint64_t> U64(std::string_view what);
  Result<int32_t> I32(std::string_view what) ;
  Result<int64_t> I64(std::string_view what);
  Result<float> F32(std::string_view what);
  Result<double> F64(std::string_view what);
  // Borrowed view of the next n bytes.
  Result<ByteSpan> Take(uint64_t n, std::string_view what);
  Result<std::string> String(uint64_t n, std::string_view what);
  Result<void> Skip(uint64_t n, std::string_view what);
  Result<void> Seek(uint64_t offset, std::string_view what);

  // kCorruption unless count * min_elem_bytes <= remaining() (overflow-safe).
  Result<void> CheckCount(uint64_t count, uint64_t min_elem_bytes, std::string_view what) const;

  // A corruption error "<context>: <what> at offset N: <detail>".
  Error Corrupt(std::string_view what, std::string_view detail) const;

 private:
  ByteSpan data_;
  size_t pos_ = 0;
  std::string context_;
};

// Appends little-endian values to a byte vector.
class ByteWriter {
 public:
  explicit ByteWriter(Bytes* out) : out_(out) {}
  void U8(uint8_t v) { out_->push_back(v); }
  void U16(uint16_t v) { Raw(&v, 2); }
  void U32(uint32_t v) { Raw(&v, 4); }
  void U64(uint64_t v) { Raw(&v, 8); }
  void I32(int32_t v) { Raw(&v, 4); }
  void I64(int64_t v) { Raw(&v, 8); }
  void F32(float v) { Raw(&v, 4); }
  void F64(double v) { Raw(&v, 8); }
  void Raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out_->insert(out_->end(), b, b + n);
  }
  void Zeros(size_t n) { out_->insert(out_->end(), n, 0); }
  size_t size() const { return out_->size(); }

 private:
  Bytes* out_;  // not owned
};

static_assert(std::endian::native == std::endian::little, "tenzro assumes a little-endian host");

inline uint64_t LoadU64LE(const uint8_t* p) { uint64_t v; std::memcpy(&v, p, 8); return v; }
inline void StoreU64LE(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }

// Lower-case hex of `data`.
std::string ToHex(ByteSpan data);
// Parses exactly 2*out.size() hex digits (either case) into out.
Result<void> FromHex(std::string_view hex, std::span<uint8_t> out);

// Checked arithmetic: false on overflow.
inline bool MulOverflow(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_mul_overflow(a, b, out); }
inline bool AddOverflow(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_add_overflow(a, b, out); }

// Parses a byte size such as "2GiB", "512MiB", "1.5GB", "4096" (case-insensitive).
Result<uint64_t> ParseByteSize(std::string_view text);
// "1.50 GiB", "5.06 MiB", "123 B".
std::string FormatBytes(uint64_t bytes);

}  // namespace tenzro
