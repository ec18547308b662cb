#include "blob/blob_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include "blob/bao_tree.h"

namespace tenzro::blob {
namespace {

constexpr std::string_view kDataExt = ".data";
constexpr std::string_view kOutboardExt = ".obao4";
constexpr std::string_view kStagingPrefix = "staging-";

bool IsLowerHex64(std::string_view s) {
  if (s.size() != 64) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool EndsWith(std::string_view s, std::string_view suf) {
  return s.size() >= suf.size() && s.substr(s.size() - suf.size()) == suf;
}

std::vector<std::string> ListDir(const std::string& dir, Error* err) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (!d) {
    *err = Error::FromErrno(errno, "opendir " + dir);
    return names;
  }
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(std::move(n));
  }
  closedir(d);
  return names;
}

}  // namespace

Result<std::unique_ptr<BlobStore>> BlobStore::Open(const std::string& dir, BlobStoreOptions options) {
  Env& env = options.env ? *options.env : Env::Default();
  TENZRO_CHECK_OK(env.MakeDirs(dir));
  struct stat dst;
  if (stat(dir.c_str(), &dst) != 0) return Error::FromErrno(errno, "stat " + dir);
  if (dst.st_mode & S_IWOTH)
    return Error::PermissionDenied(
        "blob store {} is writable by every user (mode {:o}): anyone could plant blobs there; chmod o-w it",
        dir, dst.st_mode & 07777);
  std::unique_ptr<BlobStore> store(new BlobStore(dir, env));
  Error err(ErrorCode::kInternal, "");
  std::vector<std::string> names = ListDir(dir, &err);
  if (!err.message().empty()) return err;
  auto now = std::chrono::system_clock::now();
  auto stale = [&](const std::string& path) {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return false;
    auto mtime = std::chrono::system_clock::from_time_t(st.st_mtime);
    return now - mtime >= options.stale_age;
  };
  for (const std::string& n : names) {
    std::string path = dir + "/" + n;
    bool leftover = n.find(".tmp.") != std::string::npos || n.rfind(kStagingPrefix, 0) == 0;
    if (!leftover && EndsWith(n, kOutboardExt)) {
      std::string hex = n.substr(0, n.size() - kOutboardExt.size());
      leftover = IsLowerHex64(hex) && !PathExists(dir + "/" + hex + std::string(kDataExt));
    }
    if (leftover && stale(path) && unlink(path.c_str()) == 0) ++store->cleaned_;
  }
  return store;
}

std::string BlobStore::DataPath(const Blake3Hash& hash) const {
  return dir_ + "/" + hash.ToHex() + std::string(kDataExt);
}
std::string BlobStore::OutboardPath(const Blake3Hash& hash) const {
  return dir_ + "/" + hash.ToHex() + std::string(kOutboardExt);
}

bool BlobStore::Has(const Blake3Hash& hash) const {
  struct stat st;
  return lstat(DataPath(hash).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Result<Blake3Hash> BlobStore::CommitOutboard(ByteSpan data, const std::optional<Blake3Hash>& expect) {
  Bytes outboard;
  Blake3Hash root = ComputeOutboard(data, &outboard);
  if (expect && root != *expect)
    return Error::Corruption("blob content hashes to {}, expected {}", root.ToHex(), expect->ToHex());
  if (!outboard.empty()) TENZRO_CHECK_OK(env_.WriteFileAtomic(OutboardPath(root), ByteSpan(outboard)));
  return root;
}

Result<BlobInfo> BlobStore::Put(ByteSpan data) {
  TENZRO_TRY(Blake3Hash hash, CommitOutboard(data, std::nullopt));
  if (!Has(hash)) TENZRO_CHECK_OK(env_.WriteFileAtomic(DataPath(hash), data));
  return BlobInfo{hash, data.size()};
}

Result<BlobInfo> BlobStore::PutFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Error::NotFound("{}: no such file", path);
    return Error::FromErrno(errno, "open " + path);
  }
  // Copy into a private staging file first, then hash what was copied: the
  // committed bytes are exactly the hashed bytes even if the source changes.
  std::random_device rd;
  std::string staging = fmt::format("{}/{}{:08x}{:08x}", dir_, kStagingPrefix, rd(), rd());
  auto writer = env_.NewAtomicWriter(staging);
  if (!writer) {
    close(fd);
    return writer.error();
  }
  Bytes buf(1 << 20);
  Result<void> status;
  for (;;) {
    ssize_t n = read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      status = Error::FromErrno(errno, "read " + path);
      break;
    }
    if (n == 0) break;
    status = (*writer)->Append(ByteSpan(buf.data(), static_cast<size_t>(n)));
    if (!status) break;
  }
  close(fd);
  if (status) status = (*writer)->Commit();
  if (!status) {
    unlink(staging.c_str());
    return status.error();
  }
  auto finish = [&]() -> Result<BlobInfo> {
    TENZRO_TRY(auto mapped, env_.MapFile(staging));
    TENZRO_TRY(Blake3Hash hash, CommitOutboard(mapped->bytes(), std::nullopt));
    TENZRO_CHECK_OK(env_.RenameFile(staging, DataPath(hash)));
    TENZRO_CHECK_OK(env_.SyncDir(dir_));
    return BlobInfo{hash, mapped->size()};
  };
  auto r = finish();
  if (!r) unlink(staging.c_str());
  return r;
}

Result<Blob> BlobStore::Get(const Blake3Hash& hash) const {
  Blob b;
  b.hash = hash;
  auto data = env_.MapFile(DataPath(hash), /*follow_symlinks=*/false);
  if (!data) {
    if (data.error().code() == ErrorCode::kNotFound)
      return Error::NotFound("blob {} not in store {}", hash.ToHex(), dir_);
    return data.error();
  }
  b.data = *data;
  b.size = b.data->size();
  uint64_t want = OutboardSize(b.size);
  if (want > 0) {
    auto ob = env_.MapFile(OutboardPath(hash), /*follow_symlinks=*/false);
    if (!ob && ob.error().code() == ErrorCode::kPermissionDenied) return ob.error();
    if (!ob) return Error::Corruption("{}: outboard missing for a {}-byte blob", OutboardPath(hash), b.size);
    if ((*ob)->size() != want)
      return Error::Corruption("{}: outboard is {} bytes, expected {}", OutboardPath(hash), (*ob)->size(), want);
    b.outboard = *ob;
  }
  return b;
}

Result<std::vector<BlobInfo>> BlobStore::List() const {
  Error err(ErrorCode::kInternal, "");
  std::vector<std::string> names = ListDir(dir_, &err);
  if (!err.message().empty()) return err;
  std::vector<BlobInfo> out;
  for (const std::string& n : names) {
    if (!EndsWith(n, kDataExt)) continue;
    std::string hex = n.substr(0, n.size() - kDataExt.size());
    if (!IsLowerHex64(hex)) continue;
    struct stat st;
    if (lstat((dir_ + "/" + n).c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;  // removed meanwhile, or planted
    out.push_back(BlobInfo{*Blake3Hash::FromHex(hex), static_cast<uint64_t>(st.st_size)});
  }
  std::sort(out.begin(), out.end(), [](const BlobInfo& a, const BlobInfo& b) { return a.hash < b.hash; });
  return out;
}

Result<void> BlobStore::Remove(const Blake3Hash& hash) {
  if (unlink(DataPath(hash).c_str()) != 0) {
    if (errno == ENOENT) return Error::NotFound("blob {} not in store {}", hash.ToHex(), dir_);
    return Error::FromErrno(errno, "unlink " + DataPath(hash));
  }
  if (unlink(OutboardPath(hash).c_str()) != 0 && errno != ENOENT)
    return Error::FromErrno(errno, "unlink " + OutboardPath(hash));
  return env_.SyncDir(dir_);
}

Result<void> BlobStore::Verify(const Blake3Hash& hash) const {
  TENZRO_TRY(Blob b, Get(hash));
  Bytes outboard;
  Blake3Hash root = ComputeOutboard(b.bytes(), &outboard);
  if (root != hash)
    return Error::Corruption("{}: content hashes to {}", DataPath(hash), root.ToHex());
  ByteSpan stored = b.outboard_bytes();
  if (stored.size() != outboard.size() || !std::equal(stored.begin(), stored.end(), outboard.begin()))
    return Error::Corruption("{}: outboard does not match the data", OutboardPath(hash));
  return Ok();
}

Result<std::unique_ptr<StreamEncoder>> BlobStore::Encode(const Blake3Hash& hash, const ChunkRanges& ranges) const {
  TENZRO_TRY(Blob b, Get(hash));
  auto keep = std::make_shared<Blob>(b);
  return StreamEncoder::Create(keep->bytes(), keep->outboard_bytes(), hash, ranges, keep);
}

Result<std::unique_ptr<BlobImport>> BlobStore::BeginImport(const Blake3Hash& hash, uint64_t max_size) {
  std::unique_ptr<BlobImport> imp(new BlobImport());
  imp->store_ = this;
  imp->hash_ = hash;
  TENZRO_TRY(auto writer, env_.NewAtomicWriter(DataPath(hash)));
  imp->writer_ = std::move(writer);
  FileWriter* w = imp->writer_.get();
  imp->decoder_ = std::make_unique<StreamDecoder>(
      hash, ChunkRanges::All(),
      [w](uint64_t offset, ByteSpan data) -> Result<void> {
        if (offset != w->bytes_written())
          return Error::Internal("import: data at offset {} after {} bytes", offset, w->bytes_written());
        return w->Append(data);
      },
      max_size);
  return imp;
}

BlobImport::~BlobImport() {
  if (!finished_ && writer_) writer_->Abort();
}

Result<void> BlobImport::Feed(ByteSpan bytes) {
  if (finished_) return Error::InvalidArgument("import of {} already finished", hash_.ToHex());
  return decoder_->Feed(bytes);
}

Result<BlobInfo> BlobImport::Finish() {
  if (finished_) return Error::InvalidArgument("import of {} already finished", hash_.ToHex());
  auto fail = [&](Error e) -> Result<BlobInfo> {
    writer_->Abort();
    finished_ = true;
    return e;
  };
  if (auto r = decoder_->Finish(); !r) return fail(r.error());
  if (!decoder_->verified_size() || *decoder_->verified_size() != writer_->bytes_written())
    return fail(Error::Corruption("import of {}: {} verified bytes, size not proven", hash_.ToHex(),
                                  writer_->bytes_written()));
  // Re-read what landed on disk: the outboard is computed from, and the hash
  // re-checked against, the exact bytes being committed.
  auto mapped = store_->env_.MapFile(writer_->temp_path());
  if (!mapped) return fail(mapped.error());
  auto root = store_->CommitOutboard((*mapped)->bytes(), hash_);
  if (!root) return fail(root.error());
  if (auto r = writer_->Commit(); !r) return fail(r.error());
  finished_ = true;
  return BlobInfo{hash_, (*mapped)->size()};
}

}  // namespace tenzro::blob
