// tenzro format: GGUF v3 writer, as ggml's gguf_write_to_file lays it out.
//
//   header | kv pairs | tensor infos | pad to alignment | tensor data, each
//   padded to alignment
//
// Files are written atomically (core/file.h AtomicFileWriter). The writer
// refuses what llama.cpp's reader would refuse (names >= 64 bytes, more than
// 4 dims, row lengths not a multiple of the block size, duplicate names), so
// its output loads in llama.cpp. Nested arrays are written if given, but
// ggml does not read them. Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/bytes.h"
#include "core/result.h"
#include "format/gguf_value.h"
#include "quant/types.h"

namespace tenzro::format {

class GgufWriter {
 public:
  // `alignment` must be a power of two <= 1 MiB; anything but 32 is recorded
  // as general.alignment (u32).
  explicit GgufWriter(uint32_t alignment = kGgufDefaultAlignment);

  // Sets (or replaces, keeping its position) a key.
  void Set(std::string key, GgufValue value);
  void Remove(std::string_view key);

  // Adds a tensor; `data` is borrowed until the last Write/Serialize call and
  // must be exactly the tensor's size. kInvalidArgument names the problem.
  Result<void> AddTensor(std::string name, quant::GgmlType type, std::vector<int64_t> ne, ByteSpan data);

  // The whole file image in memory (tests, fuzz seeds).
  Result<Bytes> Serialize() const;
  // Writes the file atomically.
  Result<void> Write(const std::string& path) const;

  struct Tensor {
    std::string name;
    quant::GgmlType type;
    std::vector<int64_t> ne;
    ByteSpan data;
  };
  uint32_t alignment() const { return alignment_; }
  const std::vector<std::pair<std::string, GgufValue>>& kv() const { return kv_; }
  const std::vector<Tensor>& tensor_list() const { return tensors_; }

 private:
  // Header, kv, tensor infos and the padding up to the data section.
  Bytes Meta() const;
  uint64_t Padded(uint64_t n) const { return (n + alignment_ - 1) / alignment_ * alignment_; }

  uint32_t alignment_;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<Tensor> tensors_;
};

// "<prefix>-00002-of-00003.gguf" for split_no 1 (0-based) of 3, as llama.cpp
// names split files (llama_split_path).
std::string GgufSplitPath(std::string_view prefix, int split_no, int split_count);

// Writes `w` as `split_count` files in llama.cpp's gguf-split layout: tensors
// distributed in order, the first file carries all metadata, every file
// carries split.no (u16), split.count (u16), split.tensors.count (i32).
// Returns the paths written. kInvalidArgument unless
// 1 <= split_count <= max(1, tensor count).
Result<std::vector<std::string>> WriteGgufSplit(const GgufWriter& w, std::string_view prefix, int split_count);

}  // namespace tenzro::format
