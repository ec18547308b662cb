#include "core/file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <random>

namespace tenzro {

Result<std::shared_ptr<MappedFile>> MappedFile::Open(const std::string& path, bool follow_symlinks) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (follow_symlinks ? 0 : O_NOFOLLOW));
  if (fd < 0) {
    if (errno == ENOENT) return Error::NotFound("{}: no such file", path);
    if (errno == ELOOP && !follow_symlinks)
      return Error::PermissionDenied("{}: is a symbolic link, where only a regular file is accepted", path);
    return Error::FromErrno(errno, "open " + path);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return Error::FromErrno(e, "stat " + path);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error::InvalidArgument("{}: not a regular file", path);
  }
  uint64_t size = static_cast<uint64_t>(st.st_size);
  const uint8_t* data = nullptr;
  if (size > 0) {
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      return Error::FromErrno(e, "mmap " + path);
    }
    data = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
  return std::shared_ptr<MappedFile>(new MappedFile(path, data, size));
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

Result<Bytes> ReadFile(const std::string& path, uint64_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Error::NotFound("{}: no such file", path);
    return Error::FromErrno(errno, "open " + path);
  }
  Bytes out;
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    if (static_cast<uint64_t>(st.st_size) > max_bytes) {
      ::close(fd);
      return Error::ResourceExhausted("{}: {} bytes exceeds the limit of {}", path, st.st_size, max_bytes);
    }
    out.reserve(static_cast<size_t>(st.st_size));
  }
  uint8_t buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      return Error::FromErrno(e, "read " + path);
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > max_bytes) {
      ::close(fd);
      return Error::ResourceExhausted("{}: exceeds the limit of {} bytes", path, max_bytes);
    }
    out.insert(out.end(), buf, buf + n);
  }
  ::close(fd);
  return out;
}

Result<std::string> ReadTextFile(const std::string& path, uint64_t max_bytes) {
  TENZRO_TRY(Bytes b, ReadFile(path, max_bytes));
  return std::string(b.begin(), b.end());
}

Result<std::unique_ptr<AtomicFileWriter>> AtomicFileWriter::Create(const std::string& target, uint32_t mode) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string temp = fmt::format("{}.tmp.{:016x}", target, rng());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return Error::FromErrno(errno, "create " + temp);
  return std::unique_ptr<AtomicFileWriter>(new AtomicFileWriter(target, temp, fd));
}

AtomicFileWriter::~AtomicFileWriter() { Abort(); }

Result<void> AtomicFileWriter::Append(ByteSpan data) {
  if (done_) return Error::Internal("append to a finished writer for {}", target_);
  const uint8_t* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == ENOSPC || errno == EDQUOT)
        return Error::ResourceExhausted("write {}: disk full", temp_);
      return Error::FromErrno(errno, "write " + temp_);
    }
    p += n;
    left -= static_cast<size_t>(n);
    written_ += static_cast<uint64_t>(n);
  }
  return Ok();
}

Result<void> AtomicFileWriter::Commit() {
  if (done_) return Error::Internal("commit of a finished writer for {}", target_);
  if (::fsync(fd_) != 0) {
    int e = errno;
    Abort();
    if (e == ENOSPC || e == EDQUOT) return Error::ResourceExhausted("fsync {}: disk full", temp_);
    return Error::FromErrno(e, "fsync " + temp_);
  }
  ::close(fd_);
  fd_ = -1;
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    int e = errno;
    ::unlink(temp_.c_str());
    done_ = true;
    return Error::FromErrno(e, "rename to " + target_);
  }
  done_ = true;
  auto parent = std::filesystem::path(target_).parent_path().string();
  return SyncDir(parent.empty() ? "." : parent);
}

void AtomicFileWriter::Abort() {
  if (done_) return;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(temp_.c_str());
  done_ = true;
}

Result<void> WriteFileAtomic(const std::string& path, ByteSpan data, uint32_t mode) {
  TENZRO_TRY(auto w, AtomicFileWriter::Create(path, mode));
  TENZRO_CHECK_OK(w->Append(data));
  return w->Commit();
}

Result<void> MakeDirs(const std::string& path, uint32_t mode) {
  if (path.empty()) return Error::InvalidArgument("mkdir: empty path");
  // Each missing component is created with `mode` (less the umask); existing
  // ones are left as they are.
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos < path.size() && path[pos] != '/') continue;
    const std::string prefix = path.substr(0, pos);
    if (prefix.empty() || prefix.back() == '/') continue;
    if (::mkdir(prefix.c_str(), static_cast<mode_t>(mode)) == 0) continue;
    const int err = errno;
    struct stat st;
    if (err == EEXIST && ::stat(prefix.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) continue;
    return Error::FromErrno(err == EEXIST ? ENOTDIR : err, "mkdir " + prefix);
  }
  return Ok();
}

bool PathExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

Result<void> SyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Error::FromErrno(errno, "open dir " + dir);
  ::fsync(fd);
  ::close(fd);
  return Ok();
}

}  // namespace tenzro
