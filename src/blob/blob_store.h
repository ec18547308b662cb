// tenzro blob: a content-addressed store of blobs in one directory
// (docs/formats/blob-store.md).
//
// Each blob is `<dir>/<hash>.data` (the bytes) plus, when it is larger than
// one 16 KiB chunk group, `<dir>/<hash>.obao4` (its pre-order bao outboard,
// bao-stream.md), where <hash> is the 64 lower-case hex BLAKE3 hash. A blob is
// visible exactly when its .data file exists; it only appears through an
// atomic rename after its content was hashed/verified and its outboard was
// committed, so a crash never leaves a partial blob visible. Temp files
// (`*.tmp.*`, `staging-*`) and orphan outboards left by a crash are ignored
// and deleted by Open once older than BlobStoreOptions::stale_age.
//
// Only regular files count: a symbolic link planted in the directory is
// neither listed nor served (opened with O_NOFOLLOW), and Open refuses a
// world-writable directory.
//
// Thread-safety: every method is safe to call concurrently, from several
// threads and several processes on the same directory. Readers get a mapping
// that stays valid even if the blob is removed meanwhile; writers of the same
// blob race benignly (identical content, last rename wins). Hashes come in as
// Blake3Hash values, so no caller string ever reaches a path unvalidated.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "blob/blake3.h"
#include "blob/chunk_ranges.h"
#include "blob/decoder.h"
#include "blob/encoder.h"
#include "core/bytes.h"
#include "core/env.h"
#include "core/file.h"
#include "core/result.h"

namespace tenzro::blob {

struct BlobInfo {
  Blake3Hash hash;
  uint64_t size = 0;
};

// A blob opened for reading: read-only mappings of data and outboard.
struct Blob {
  Blake3Hash hash;
  uint64_t size = 0;
  std::shared_ptr<MappedFile> data;
  std::shared_ptr<MappedFile> outboard;  // null when the outboard is empty
  ByteSpan bytes() const { return data ? data->bytes() : ByteSpan(); }
  ByteSpan outboard_bytes() const { return outboard ? outboard->bytes() : ByteSpan(); }
};

struct BlobStoreOptions {
  // Temp/staging files and orphan outboards older than this are deleted on
  // Open (younger ones may belong to a concurrent writer in another process).
  std::chrono::seconds stale_age{3600};
  // The file system (core/env.h); null = Env::Default(). Must outlive the store.
  Env* env = nullptr;
};

class BlobImport;

class BlobStore {
 public:
  // Creates `dir` if needed and cleans stale leftovers. kPermissionDenied
  // when `dir` is world-writable.
  static Result<std::unique_ptr<BlobStore>> Open(const std::string& dir, BlobStoreOptions options = {});

  // Stores `data` (idempotent). Returns its hash and size.
  Result<BlobInfo> Put(ByteSpan data);
  // Copies the file at `path` into the store, hashing the copy it commits.
  Result<BlobInfo> PutFile(const std::string& path);
  // Starts a verified import of the blob `hash` from a verified stream of the
  // whole blob (ChunkRanges::All()). See BlobImport.
  Result<std::unique_ptr<BlobImport>> BeginImport(const Blake3Hash& hash, uint64_t max_size = UINT64_MAX);

  // kNotFound if absent; kCorruption if the outboard is missing or mis-sized;
  // kPermissionDenied if either file is a symbolic link.
  Result<Blob> Get(const Blake3Hash& hash) const;
  bool Has(const Blake3Hash& hash) const;
  // All visible blobs, sorted by hash.
  Result<std::vector<BlobInfo>> List() const;
  // kNotFound if absent.
  Result<void> Remove(const Blake3Hash& hash);
  // Re-hashes the data and recomputes the outboard: kCorruption naming the
  // file if either differs, kNotFound if absent.
  Result<void> Verify(const Blake3Hash& hash) const;
  // A verified-stream encoder over a stored blob; it keeps the blob mapped.
  Result<std::unique_ptr<StreamEncoder>> Encode(const Blake3Hash& hash, const ChunkRanges& ranges) const;

  std::string DataPath(const Blake3Hash& hash) const;
  std::string OutboardPath(const Blake3Hash& hash) const;
  const std::string& dir() const { return dir_; }
  // Leftover files deleted by Open.
  int cleaned_on_open() const { return cleaned_; }

 private:
  friend class BlobImport;
  BlobStore(std::string dir, Env& env) : dir_(std::move(dir)), env_(env) {}
  // Hashes `data`, fails with kCorruption if `expect` is set and differs,
  // and commits the outboard (if non-empty). Returns the hash.
  Result<Blake3Hash> CommitOutboard(ByteSpan data, const std::optional<Blake3Hash>& expect);
  std::string dir_;
  Env& env_;
  int cleaned_ = 0;
};

// A streaming import: Feed() the bytes of a verified stream of the whole blob
// as they arrive; verified data goes to a temp file; Finish() commits the blob
// only if the stream was complete and verified. Destroying an unfinished or
// failed import deletes the temp file, leaving nothing visible.
// Not thread-safe (one import is driven by one thread).
class BlobImport {
 public:
  ~BlobImport();
  // kCorruption on a verification failure; kIo on disk errors.
  Result<void> Feed(ByteSpan bytes);
  // Verifies completeness, writes the outboard and makes the blob visible.
  Result<BlobInfo> Finish();
  const StreamDecoder& decoder() const { return *decoder_; }

 private:
  friend class BlobStore;
  BlobImport() = default;
  BlobStore* store_ = nullptr;
  Blake3Hash hash_;
  std::unique_ptr<FileWriter> writer_;
  std::unique_ptr<StreamDecoder> decoder_;
  bool finished_ = false;
};

}  // namespace tenzro::blob
