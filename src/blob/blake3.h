// tenzro blob: BLAKE3 hashing over the official C implementation.
//
// Besides the plain hash, incremental hasher and extended output, this exposes
// the tree primitives that verified streaming needs (docs/formats/bao-stream.md):
// the chaining value (CV) of a chunk, of a parent node, and of a whole subtree
// that starts at a given chunk. A CV computed with is_root = true is the BLAKE3
// hash itself. All functions are pure and thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include <blake3.h>

#include "core/bytes.h"
#include "core/result.h"

namespace tenzro::blob {

inline constexpr size_t kHashSize = 32;
inline constexpr size_t kChunkSize = 1024;  // a BLAKE3 chunk
inline constexpr size_t kBlockLen = 64;     // a BLAKE3 compression block

// A 32-byte BLAKE3 hash or chaining value.
struct Blake3Hash {
  std::array<uint8_t, kHashSize> bytes{};

  // 64 lower-case hex digits.
  std::string ToHex() const;
  // Parses exactly 64 hex digits (either case); kInvalidArgument otherwise.
  static Result<Blake3Hash> FromHex(std::string_view hex);
  ByteSpan span() const { return {bytes.data(), bytes.size()}; }
  bool operator==(const Blake3Hash&) const = default;
  auto operator<=>(const Blake3Hash&) const = default;
};

// BLAKE3 hash of `data`.
Blake3Hash Blake3(ByteSpan data);

// Incremental BLAKE3. Not thread-safe; copyable (a copy forks the state).
class Blake3Hasher {
 public:
  Blake3Hasher();
  void Update(ByteSpan data);
  // The 32-byte hash of everything fed so far; the hasher stays usable.
  Blake3Hash Finalize() const;
  // Extended output: fills `out` with output bytes starting at `seek`.
  void FinalizeXof(std::span<uint8_t> out, uint64_t seek = 0) const;

 private:
  blake3_hasher h_;
};

// ---- tree primitives (hazmat): only for bao outboards and verified streams ----

// CV of one chunk (data.size() <= 1024; empty only for the empty blob) whose
// index in the blob is `chunk_index`. With is_root the result is the hash of a
// blob consisting of this chunk alone (REQUIRES chunk_index == 0 then).
Blake3Hash ChunkCv(ByteSpan data, uint64_t chunk_index, bool is_root);

// CV of a parent node over two child CVs.
Blake3Hash ParentCv(const Blake3Hash& left, const Blake3Hash& right, bool is_root);

// CV of the BLAKE3 subtree covering `data`, which starts at chunk
// `start_chunk`. REQUIRES: start_chunk is a multiple of the subtree's chunk
// count rounded up to a power of two (i.e. `data` is a real subtree of some
// blob), or is_root with start_chunk == 0. Any size works; chunks are hashed
// 16 at a time with the widest SIMD the CPU has.
Blake3Hash SubtreeCv(ByteSpan data, uint64_t start_chunk, bool is_root);

}  // namespace tenzro::blob
