// tenzro core: Env — the file-system calls of the blob store and the expert
// cache's cold tier behind one interface (the idea of LevelDB's Env), so a
// test can make them fail the way a full disk, a failed fsync or a
// cross-device link does, without mounting anything.
//
// Env::Default() is the real file system (core/file.h); every store and
// cache uses it unless its options name another Env. EnvWrapper forwards
// every call to a base Env: a test Env derives from it and overrides the
// calls it breaks (tests/testutil/fault_env.h).
//
// The calls keep core/file.h's contracts: an atomic writer makes its file
// visible only on Commit and leaves nothing behind when destroyed
// uncommitted; a full disk is kResourceExhausted with "disk full" in the
// message. Thread-safety: an Env may be called from any thread; one
// FileWriter is driven by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/bytes.h"
#include "core/file.h"
#include "core/result.h"

namespace tenzro {

// A file being written under a temporary name (core/file.h AtomicFileWriter).
class FileWriter {
 public:
  virtual ~FileWriter() = default;
  virtual Result<void> Append(ByteSpan data) = 0;
  virtual uint64_t bytes_written() const = 0;
  virtual const std::string& temp_path() const = 0;
  // fsync, rename over the target, fsync its directory. At most once.
  virtual Result<void> Commit() = 0;
  // Deletes the temp file; the target is untouched.
  virtual void Abort() = 0;
};

class Env {
 public:
  virtual ~Env() = default;
  // The real file system; lives for the whole process.
  static Env& Default();

  virtual Result<std::unique_ptr<FileWriter>> NewAtomicWriter(const std::string& target, uint32_t mode = 0644) = 0;
  virtual Result<std::shared_ptr<MappedFile>> MapFile(const std::string& path, bool follow_symlinks = true) = 0;
  virtual Result<Bytes> ReadFile(const std::string& path, uint64_t max_bytes = UINT64_MAX) = 0;
  virtual Result<void> MakeDirs(const std::string& path, uint32_t mode = 0755) = 0;
  virtual Result<void> SyncDir(const std::string& dir) = 0;
  // A hard link `to` -> `from`'s inode; kUnsupported-like errors (another
  // file system, no permission) are the caller's cue to copy instead.
  virtual Result<void> LinkFile(const std::string& from, const std::string& to) = 0;
  virtual Result<void> RenameFile(const std::string& from, const std::string& to) = 0;
  virtual Result<void> RemoveFile(const std::string& path) = 0;

  // NewAtomicWriter + Append + Commit.
  Result<void> WriteFileAtomic(const std::string& path, ByteSpan data, uint32_t mode = 0644);
};

// Forwards every call to `base` (which must outlive the wrapper).
class EnvWrapper : public Env {
 public:
  explicit EnvWrapper(Env& base) : base_(base) {}
  Result<std::unique_ptr<FileWriter>> NewAtomicWriter(const std::string& target, uint32_t mode) override {
    return base_.NewAtomicWriter(target, mode);
  }
  Result<std::shared_ptr<MappedFile>> MapFile(const std::string& path, bool follow_symlinks) override {
    return base_.MapFile(path, follow_symlinks);
  }
  Result<Bytes> ReadFile(const std::string& path, uint64_t max_bytes) override {
    return base_.ReadFile(path, max_bytes);
  }
  Result<void> MakeDirs(const std::string& path, uint32_t mode) override { return base_.MakeDirs(path, mode); }
  Result<void> SyncDir(const std::string& dir) override { return base_.SyncDir(dir); }
  Result<void> LinkFile(const std::string& from, const std::string& to) override { return base_.LinkFile(from, to); }
  Result<void> RenameFile(const std::string& from, const std::string& to) override {
    return base_.RenameFile(from, to);
  }
  Result<void> RemoveFile(const std::string& path) override { return base_.RemoveFile(path); }

 protected:
  Env& base_;
};

}  // namespace tenzro
