#include "core/env.h"

#include <cerrno>

#include <unistd.h>

namespace tenzro {
namespace {

// AtomicFileWriter behind the FileWriter interface.
class PosixWriter : public FileWriter {
 public:
  explicit PosixWriter(std::unique_ptr<AtomicFileWriter> w) : w_(std::move(w)) {}
  Result<void> Append(ByteSpan data) override { return w_->Append(data); }
  uint64_t bytes_written() const override { return w_->bytes_written(); }
  const std::string& temp_path() const override { return w_->temp_path(); }
  Result<void> Commit() override { return w_->Commit(); }
  void Abort() override { w_->Abort(); }

 private:
  std::unique_ptr<AtomicFileWriter> w_;
};

class PosixEnv : public Env {
 public:
  Result<std::unique_ptr<FileWriter>> NewAtomicWriter(const std::string& target, uint32_t mode) override {
    TENZRO_TRY(std::unique_ptr<AtomicFileWriter> w, AtomicFileWriter::Create(target, mode));
    return std::unique_ptr<FileWriter>(std::make_unique<PosixWriter>(std::move(w)));
  }
  Result<std::shared_ptr<MappedFile>> MapFile(const std::string& path, bool follow_symlinks) override {
    return MappedFile::Open(path, follow_symlinks);
  }
  Result<Bytes> ReadFile(const std::string& path, uint64_t max_bytes) override {
    return tenzro::ReadFile(path, max_bytes);
  }
  Result<void> MakeDirs(const std::string& path, uint32_t mode) override { return tenzro::MakeDirs(path, mode); }
  Result<void> SyncDir(const std::string& dir) override { return tenzro::SyncDir(dir); }
  Result<void> LinkFile(const std::string& from, const std::string& to) override {
    if (::link(from.c_str(), to.c_str()) != 0) return Error::FromErrno(errno, "link " + from + " -> " + to);
    return Ok();
  }
  Result<void> RenameFile(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return Error::FromErrno(errno, "rename " + from + " -> " + to);
    return Ok();
  }
  Result<void> RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return Error::FromErrno(errno, "unlink " + path);
    return Ok();
  }
};

}  // namespace

Env& Env::Default() {
  static PosixEnv env;
  return env;
}

Result<void> Env::WriteFileAtomic(const std::string& path, ByteSpan data, uint32_t mode) {
  TENZRO_TRY(std::unique_ptr<FileWriter> w, NewAtomicWriter(path, mode));
  TENZRO_CHECK_OK(w->Append(data));
  return w->Commit();
}

}  // namespace tenzro
