// tenzro format: safetensors reader and writer, zero-copy.
//
//   u64 LE header size N | N bytes of JSON header (space padded) | data
//
// The header maps tensor names to {"dtype", "shape", "data_offsets":[b,e]}
// (offsets relative to the data section) plus an optional "__metadata__"
// object of strings. Validation follows the reference implementation:
// N <= 100 MB and inside the file, the header is a JSON object, every dtype is
// known, shape entries are non-negative integers whose product times the dtype
// size equals e - b without overflow, and the tensors tile the data section
// exactly (sorted by offset: no overlap, no hole, nothing after). Errors are
// kCorruption naming the file and the tensor/field (kUnsupported for an
// unknown dtype). Thread-safety: immutable after construction.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/bytes.h"
#include "core/file.h"
#include "core/result.h"
#include "format/safetensors_format.h"

namespace tenzro::format {

struct SafetensorsTensor {
  std::string name;
  StDtype dtype;
  std::vector<int64_t> shape;  // PyTorch order (outermost first)
  uint64_t begin = 0, end = 0; // relative to the data section
};

class SafetensorsFile {
 public:
  static Result<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);
  // Parses an in-memory image; `data` is borrowed and must outlive the result.
  static Result<std::unique_ptr<SafetensorsFile>> Parse(ByteSpan data, std::string name);

  const std::string& path() const { return path_; }
  uint64_t data_offset() const { return data_offset_; }  // absolute: 8 + N
  // Tensors sorted by offset.
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  const SafetensorsTensor* FindTensor(std::string_view name) const;
  const std::map<std::string, std::string, std::less<>>& metadata() const { return metadata_; }
  ByteSpan TensorBytes(const SafetensorsTensor& t) const {
    return data_.subspan(data_offset_ + t.begin, t.end - t.begin);
  }

 private:
  SafetensorsFile() = default;
  Result<void> ParseAll();

  std::shared_ptr<MappedFile> map_;
  ByteSpan data_;
  std::string path_;
  uint64_t data_offset_ = 0;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, size_t, std::less<>> index_;
  std::map<std::string, std::string, std::less<>> metadata_;
};

// Builds a safetensors file. Tensors are laid out in the order added. Not
// thread-safe; tensor data is borrowed until the last Write/Serialize.
class SafetensorsWriter {
 public:
  void SetMetadata(std::string key, std::string value) { metadata_[std::move(key)] = std::move(value); }
  // `shape` in PyTorch order; data must be exactly prod(shape) * dtype size.
  Result<void> AddTensor(std::string name, StDtype dtype, std::vector<int64_t> shape, ByteSpan data);
  Result<Bytes> Serialize() const;
  Result<void> Write(const std::string& path) const;  // atomic

 private:
  // 8-byte size + JSON padded to a multiple of 8; kInvalidArgument when a
  // name or metadata string is not valid UTF-8.
  Result<Bytes> Header() const;
  Bytes HeaderOrThrow() const;

  struct Tensor {
    std::string name;
    StDtype dtype;
    std::vector<int64_t> shape;
    ByteSpan data;
  };
  std::map<std::string, std::string> metadata_;
  std::vector<Tensor> tensors_;
};

}  // namespace tenzro::format
