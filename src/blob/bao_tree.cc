#include "blob/bao_tree.h"

#include <cstring>

namespace tenzro::blob {
namespace {

inline uint64_t LeftChunks(uint64_t n) { return uint64_t{1} << (63 - __builtin_clzll(n - 1)); }
inline int Level(uint64_t n) { return 63 - __builtin_clzll(n - 1); }

// Writes the pairs of the subtree [start, start+chunks) in pre-order at
// out[*pos...] and returns its CV.
Blake3Hash OutboardRec(ByteSpan data, uint64_t start, uint64_t chunks, bool is_root, uint8_t* out,
                       size_t* pos) {
  if (chunks <= kGroupChunks) return SubtreeCv(data, start, is_root);
  uint64_t lc = LeftChunks(chunks);
  size_t slot = (*pos)++;
  ByteSpan l = data.first(lc * kChunkSize), r = data.subspan(lc * kChunkSize);
  Blake3Hash lh = OutboardRec(l, start, lc, false, out, pos);
  Blake3Hash rh = OutboardRec(r, start + lc, chunks - lc, false, out, pos);
  std::memcpy(out + slot * kPairSize, lh.bytes.data(), 32);
  std::memcpy(out + slot * kPairSize + 32, rh.bytes.data(), 32);
  return ParentCv(lh, rh, is_root);
}

}  // namespace

Blake3Hash ComputeOutboard(ByteSpan data, Bytes* outboard) {
  uint64_t chunks = ChunkCount(data.size());
  Bytes scratch;
  Bytes* out = outboard ? outboard : &scratch;
  out->assign(OutboardSize(data.size()), 0);
  size_t pos = 0;
  return OutboardRec(data, 0, chunks, true, out->data(), &pos);
}

Blake3Hash OutboardRoot(ByteSpan outboard) {
  Blake3Hash l, r;
  std::memcpy(l.bytes.data(), outboard.data(), 32);
  std::memcpy(r.bytes.data(), outboard.data() + 32, 32);
  return ParentCv(l, r, true);
}

BaoIter::BaoIter(uint64_t size, const ChunkRanges& ranges)
    : size_(size), total_chunks_(ChunkCount(size)), ranges_(ranges.Normalize(size)) {
  if (!ranges.is_empty()) {
    uint64_t n = total_chunks_ == 0 ? 1 : total_chunks_;
    stack_[top_++] = Node{0, n, n > kGroupChunks ? 0 : -1, true};
  }
}

bool BaoIter::Next(BaoItem* item) {
  if (top_ == 0) return false;
  Node node = stack_[--top_];
  uint64_t end = node.start + node.chunks;
  uint64_t byte_begin = node.start * kChunkSize;
  uint64_t byte_end = end >= total_chunks_ ? size_ : end * kChunkSize;
  item->is_root = node.is_root;
  item->start_chunk = node.start;
  item->chunks = node.chunks;
  item->outboard_index = -1;
  item->left = item->right = false;
  item->left_chunks = 0;
  bool full = ranges_.Covers(node.start, end);
  if (node.chunks <= 1 || (full && Level(node.chunks) < static_cast<int>(kChunkGroupLog))) {
    item->kind = BaoItem::Kind::kLeaf;
    item->size = byte_end - byte_begin;
    return true;
  }
  uint64_t lc = LeftChunks(node.chunks);
  uint64_t mid = node.start + lc;
  bool want_l = ranges_.Intersects(node.start, mid);
  bool want_r = ranges_.Intersects(mid, end);
  item->kind = BaoItem::Kind::kParent;
  item->size = kPairSize;
  item->left = want_l;
  item->right = want_r;
  item->left_chunks = lc;
  item->outboard_index = node.pre;
  // Pre-order indices above group level: left child right after the parent,
  // right child after the (lc / 16 - 1) pairs of the left subtree.
  uint64_t rc = node.chunks - lc;
  int64_t lpre = lc > kGroupChunks ? node.pre + 1 : -1;
  int64_t rpre = rc > kGroupChunks ? node.pre + static_cast<int64_t>(lc / kGroupChunks) : -1;
  if (want_r) stack_[top_++] = Node{mid, rc, rpre, false};
  if (want_l) stack_[top_++] = Node{node.start, lc, lpre, false};
  return true;
}

uint64_t EncodedSize(uint64_t size, const ChunkRanges& ranges) {
  if (ranges.is_empty()) return 0;
  BaoIter it(size, ranges);
  BaoItem item;
  uint64_t total = 8;
  while (it.Next(&item)) total += item.size;
  return total;
}

}  // namespace tenzro::blob
