// tenzro core: file access.
//
// MappedFile gives a read-only, zero-copy view of a whole file (mmap). All
// writes that must never be seen half-done go through AtomicFileWriter /
// WriteFileAtomic: data lands in a temp file beside the target, is fsync'ed,
// then renamed over the target and the directory fsync'ed, so a crash leaves
// either the old file or the complete new one, never a partial one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/bytes.h"
#include "core/result.h"

namespace tenzro {

class MappedFile {
 public:
  // Maps `path` read-only. An empty file maps to an empty span. Only regular
  // files map (kInvalidArgument otherwise); with follow_symlinks false a
  // symbolic link as the last path component is refused (kPermissionDenied).
  static Result<std::shared_ptr<MappedFile>> Open(const std::string& path, bool follow_symlinks = true);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  ByteSpan bytes() const { return {data_, size_}; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile(std::string path, const uint8_t* data, uint64_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  std::string path_;
  const uint8_t* data_;
  uint64_t size_;
};

// Reads a whole file; kNotFound if absent, kResourceExhausted past max_bytes.
Result<Bytes> ReadFile(const std::string& path, uint64_t max_bytes = UINT64_MAX);
Result<std::string> ReadTextFile(const std::string& path, uint64_t max_bytes = 64ull << 20);

// Streams a new file into `<target>.tmp.<random>`; Commit() fsyncs and renames
// it over `target`. Destroying an uncommitted writer deletes the temp file.
// Not thread-safe.
class AtomicFileWriter {
 public:
  static Result<std::unique_ptr<AtomicFileWriter>> Create(const std::string& target, uint32_t mode = 0644);
  ~AtomicFileWriter();

  Result<void> Append(ByteSpan data);
  Result<void> Append(const void* data, size_t n) { return Append(ByteSpan(static_cast<const uint8_t*>(data), n)); }
  uint64_t bytes_written() const { return written_; }
  const std::string& temp_path() const { return temp_; }
  // Makes the file visible under the target name. Call at most once.
  Result<void> Commit();
  // Deletes the temp file; the target is untouched.
  void Abort();

 private:
  AtomicFileWriter(std::string target, std::string temp, int fd) : target_(std::move(target)), temp_(std::move(temp)), fd_(fd) {}
  std::string target_, temp_;
  int fd_;
  uint64_t written_ = 0;
  bool done_ = false;
};

Result<void> WriteFileAtomic(const std::string& path, ByteSpan data, uint32_t mode = 0644);
inline Result<void> WriteFileAtomic(const std::string& path, std::string_view text, uint32_t mode = 0644) {
  return WriteFileAtomic(path, ByteSpan(reinterpret_cast<const uint8_t*>(text.data()), text.size()), mode);
}

// mkdir -p: every missing component is created with `mode` (less the
// umask); existing directories are fine and keep their mode.
Result<void> MakeDirs(const std::string& path, uint32_t mode = 0755);
bool PathExists(const std::string& path);
// fsyncs a directory so a rename inside it is durable.
Result<void> SyncDir(const std::string& dir);

}  // namespace tenzro
