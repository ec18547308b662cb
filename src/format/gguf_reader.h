// tenzro format: GGUF reader (versions 2 and 3), zero-copy.
//
// Parses the header, key/values and tensor infos of a GGUF file as ggml's
// gguf.cpp writes them (docs/formats/gguf.md) and validates everything before
// handing out a view: magic, version, every count against the bytes left,
// string lengths, dims, element-count overflow, ggml type ids, row length vs
// block size, alignment, offsets aligned/inside the file/not overlapping,
// duplicate keys and tensor names. Errors are kCorruption (kUnsupported for a
// newer version) and name the file, the field and the offset.
//
// Tensor bytes are views into the mapped file (Open) or into the caller's
// buffer (Parse), valid as long as the GgufFile (resp. that buffer) lives.
// Thread-safety: immutable after construction.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/bytes.h"
#include "core/file.h"
#include "core/result.h"
#include "format/gguf_value.h"
#include "quant/types.h"

namespace tenzro::format {

struct GgufTensorInfo {
  std::string name;
  quant::GgmlType type;
  std::vector<int64_t> ne;  // n_dims entries, ggml order
  uint64_t offset = 0;      // relative to the data section
  uint64_t nbytes = 0;      // exact size (unpadded)
};

class GgufFile {
 public:
  // Maps and parses `path`.
  static Result<std::unique_ptr<GgufFile>> Open(const std::string& path);
  // Parses an in-memory image; `name` is used in errors. `data` is borrowed
  // and must outlive the result. Used by the fuzzers and tests.
  static Result<std::unique_ptr<GgufFile>> Parse(ByteSpan data, std::string name);

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  // Absolute file offset of the data section.
  uint64_t data_offset() const { return data_offset_; }
  uint64_t file_size() const { return data_.size(); }

  // Key/values in file order.
  const std::vector<std::pair<std::string, GgufValue>>& kv() const { return kv_; }
  const GgufValue* Find(std::string_view key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* FindTensor(std::string_view name) const;
  // The tensor's bytes (validated at parse time to lie inside the file).
  ByteSpan TensorBytes(const GgufTensorInfo& t) const { return data_.subspan(data_offset_ + t.offset, t.nbytes); }

 private:
  GgufFile() = default;
  Result<void> ParseAll();
  Result<void> ParseTensorInfo(ByteReader& r, size_t index);
  Result<void> CheckLayout();

  std::shared_ptr<MappedFile> map_;  // null for Parse()
  ByteSpan data_;
  std::string path_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kGgufDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::map<std::string, size_t, std::less<>> kv_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace tenzro::format
