// tenzro blob: the bao tree geometry iroh-blobs uses (bao-tree crate with
// BlockSize 4): a BLAKE3 tree over 1 KiB chunks whose outboard keeps only the
// nodes above 16 KiB chunk groups. Spec: docs/formats/bao-stream.md.
//
// A node covers a run of chunks [start, start + n). For n > 1 its left child
// covers the largest power of two of chunks below n, the right child the
// rest (exactly BLAKE3's tree). Its "level" is log2(left chunk count), the
// level bao-tree assigns it, so a full 16 KiB group is a level-3 node.
#pragma once

#include <cstdint>

#include "blob/blake3.h"
#include "blob/chunk_ranges.h"
#include "core/bytes.h"

namespace tenzro::blob {

inline constexpr uint32_t kChunkGroupLog = 4;                   // bao-tree BlockSize(4)
inline constexpr uint64_t kGroupChunks = 1u << kChunkGroupLog;  // 16 chunks
inline constexpr uint64_t kGroupSize = kGroupChunks * kChunkSize;  // 16 KiB
inline constexpr size_t kPairSize = 64;                         // left CV || right CV

// Number of chunk groups (at least 1, as in bao-tree).
inline uint64_t GroupCount(uint64_t size) {
  uint64_t g = size / kGroupSize + (size % kGroupSize != 0);
  return g == 0 ? 1 : g;
}
// Bytes of the pre-order outboard of a blob of `size` bytes: 64 * (groups - 1).
inline uint64_t OutboardSize(uint64_t size) { return (GroupCount(size) - 1) * kPairSize; }

// Computes the BLAKE3 hash of `data` and, if `outboard` is non-null, its
// pre-order outboard (resized to OutboardSize(data.size())).
Blake3Hash ComputeOutboard(ByteSpan data, Bytes* outboard);

// The root hash recorded by an outboard: ParentCv(first pair, root). Only
// meaningful for blobs larger than one group (non-empty outboard).
Blake3Hash OutboardRoot(ByteSpan outboard);

// One item of a verified stream, in stream order (bao-tree's BaoChunk).
struct BaoItem {
  enum class Kind : uint8_t { kParent, kLeaf };
  Kind kind;
  bool is_root;
  uint64_t start_chunk;  // first chunk the node covers
  uint64_t chunks;       // number of real chunks under the node
  // kParent: which children follow in the stream (their CVs are needed).
  bool left = false, right = false;
  // kParent above group level: index of its pair in the pre-order outboard,
  // else -1 (the pair is computed from data).
  int64_t outboard_index = -1;
  // kLeaf: bytes of data; kParent: 64.
  uint64_t size;
  uint64_t left_chunks = 0;  // kParent: chunks under the left child
};

// Walks the items of the stream for a blob of `size` bytes and the requested
// ranges, in pre-order (bao-tree ResponseIter with min_full_level 4):
//   - a node none of whose chunks is requested is skipped;
//   - a node all of whose chunks are requested and whose level is < 4 (it
//     covers at most one 16 KiB group) is one leaf with all its data;
//   - any other node with more than one chunk is a parent pair followed by
//     its requested children; a single chunk is a leaf.
// Memory is O(tree depth). Not thread-safe.
class BaoIter {
 public:
  // `ranges` are normalized for `size` here.
  BaoIter(uint64_t size, const ChunkRanges& ranges);
  // False when done.
  bool Next(BaoItem* item);
  uint64_t size() const { return size_; }
  const ChunkRanges& ranges() const { return ranges_; }

 private:
  struct Node {
    uint64_t start, chunks;
    int64_t pre;  // pre-order outboard index, -1 below group level
    bool is_root;
  };
  uint64_t size_;
  uint64_t total_chunks_;
  ChunkRanges ranges_;
  Node stack_[130];
  int top_ = 0;
};

// Total bytes of the encoded stream (8-byte size header included; 0 for
// empty ranges).
uint64_t EncodedSize(uint64_t size, const ChunkRanges& ranges);

}  // namespace tenzro::blob
