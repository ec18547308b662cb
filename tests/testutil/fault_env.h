// A file system that fills up (core/env.h), for tests of the blob store and
// the expert cache's cold tier: no mount, no root.
//
// DiskFullEnv forwards to the real file system but counts the bytes appended
// through its writers against `free_bytes`: the write that would pass it
// fails the way ENOSPC does in core/file.cc (kResourceExhausted, "disk
// full"), having written nothing. `refuse_links` makes hard links fail like a
// link across file systems (EXDEV), so callers take their copy path.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "core/env.h"

namespace tenzro::testing {

class DiskFullEnv : public EnvWrapper {
 public:
  explicit DiskFullEnv(uint64_t free_bytes, Env& base = Env::Default()) : EnvWrapper(base), free_(free_bytes) {}
  void set_free_bytes(uint64_t n) { free_ = n; }
  void set_refuse_links(bool on) { refuse_links_ = on; }
  uint64_t full_errors() const { return full_errors_; }

  Result<std::unique_ptr<FileWriter>> NewAtomicWriter(const std::string& target, uint32_t mode) override {
    TENZRO_TRY(std::unique_ptr<FileWriter> w, base_.NewAtomicWriter(target, mode));
    return std::unique_ptr<FileWriter>(std::make_unique<Writer>(std::move(w), *this));
  }
  Result<void> LinkFile(const std::string& from, const std::string& to) override {
    if (refuse_links_) return Error::FromErrno(EXDEV, "link " + from + " -> " + to);
    return base_.LinkFile(from, to);
  }

 private:
  class Writer : public FileWriter {
   public:
    Writer(std::unique_ptr<FileWriter> inner, DiskFullEnv& env) : inner_(std::move(inner)), env_(env) {}
    Result<void> Append(ByteSpan data) override {
      uint64_t left = env_.free_.load();
      do {
        if (data.size() > left) {
          ++env_.full_errors_;
          return Error::ResourceExhausted("write {}: disk full (DiskFullEnv: {} bytes free)", inner_->temp_path(),
                                          left);
        }
      } while (!env_.free_.compare_exchange_weak(left, left - data.size()));
      return inner_->Append(data);
    }
    uint64_t bytes_written() const override { return inner_->bytes_written(); }
    const std::string& temp_path() const override { return inner_->temp_path(); }
    Result<void> Commit() override { return inner_->Commit(); }
    void Abort() override { inner_->Abort(); }

   private:
    std::unique_ptr<FileWriter> inner_;
    DiskFullEnv& env_;
  };

  std::atomic<uint64_t> free_;
  std::atomic<bool> refuse_links_{false};
  std::atomic<uint64_t> full_errors_{0};
};

}  // namespace tenzro::testing
