#include "blob/encoder.h"

#include <algorithm>
#include <cstring>

namespace tenzro::blob {

StreamEncoder::StreamEncoder(ByteSpan data, ByteSpan outboard, const Blake3Hash& root,
                             const ChunkRanges& ranges, std::shared_ptr<const void> keep_alive)
    : data_(data), outboard_(outboard), keep_alive_(std::move(keep_alive)), iter_(data.size(), ranges) {
  stack_[top_++] = root;
  total_size_ = EncodedSize(data.size(), ranges);
  done_ = ranges.is_empty();
}

Result<std::unique_ptr<StreamEncoder>> StreamEncoder::Create(ByteSpan data, ByteSpan outboard,
                                                             const Blake3Hash& root,
                                                             const ChunkRanges& ranges,
                                                             std::shared_ptr<const void> keep_alive) {
  if (outboard.size() != OutboardSize(data.size()))
    return Error::InvalidArgument("outboard is {} bytes, a {}-byte blob needs {}", outboard.size(),
                                  data.size(), OutboardSize(data.size()));
  return std::unique_ptr<StreamEncoder>(new StreamEncoder(data, outboard, root, ranges, std::move(keep_alive)));
}

Result<void> StreamEncoder::Advance() {
  if (!started_) {
    started_ = true;
    StoreU64LE(small_, data_.size());
    pending_ = ByteSpan(small_, 8);
    return Ok();
  }
  BaoItem it;
  if (!iter_.Next(&it)) {
    done_ = true;
    return Ok();
  }
  if (top_ == 0) return Error::Internal("bao encoder: CV stack underflow");
  Blake3Hash expected = stack_[--top_];
  uint64_t begin = it.start_chunk * kChunkSize;
  if (it.kind == BaoItem::Kind::kLeaf) {
    ByteSpan leaf = data_.subspan(begin, it.size);
    if (SubtreeCv(leaf, it.start_chunk, it.is_root) != expected)
      return Error::Corruption("blob data does not match its hash at chunk {} (byte {})", it.start_chunk, begin);
    pending_ = leaf;
    return Ok();
  }
  Blake3Hash l, r;
  if (it.outboard_index >= 0) {
    const uint8_t* p = outboard_.data() + it.outboard_index * kPairSize;
    std::memcpy(l.bytes.data(), p, 32);
    std::memcpy(r.bytes.data(), p + 32, 32);
  } else {
    uint64_t mid = begin + it.left_chunks * kChunkSize;
    uint64_t end = std::min<uint64_t>(data_.size(), (it.start_chunk + it.chunks) * kChunkSize);
    l = SubtreeCv(data_.subspan(begin, mid - begin), it.start_chunk, false);
    r = SubtreeCv(data_.subspan(mid, end - mid), it.start_chunk + it.left_chunks, false);
  }
  if (ParentCv(l, r, it.is_root) != expected) {
    if (it.outboard_index >= 0)
      return Error::Corruption("outboard pair {} (chunk {}) does not match the blob hash", it.outboard_index,
                               it.start_chunk);
    return Error::Corruption("blob data does not match its hash at chunk {} (byte {})", it.start_chunk, begin);
  }
  if (it.right) stack_[top_++] = r;
  if (it.left) stack_[top_++] = l;
  std::memcpy(small_, l.bytes.data(), 32);
  std::memcpy(small_ + 32, r.bytes.data(), 32);
  pending_ = ByteSpan(small_, kPairSize);
  return Ok();
}

Result<size_t> StreamEncoder::Read(std::span<uint8_t> out) {
  if (failed_) return *failed_;
  size_t n = 0;
  while (n < out.size()) {
    if (pending_.empty()) {
      if (done_) break;
      auto r = Advance();
      if (!r) {
        failed_ = r.error();
        return r.error();
      }
      continue;
    }
    size_t k = std::min(pending_.size(), out.size() - n);
    std::memcpy(out.data() + n, pending_.data(), k);
    pending_ = pending_.subspan(k);
    n += k;
  }
  emitted_ += n;
  return n;
}

Result<Bytes> EncodeStream(ByteSpan data, ByteSpan outboard, const Blake3Hash& root,
                           const ChunkRanges& ranges) {
  TENZRO_TRY(auto enc, StreamEncoder::Create(data, outboard, root, ranges));
  Bytes out(enc->total_size());
  size_t off = 0;
  while (!enc->done() || off < out.size()) {
    TENZRO_TRY(size_t n, enc->Read(std::span<uint8_t>(out).subspan(off)));
    if (n == 0) break;
    off += n;
  }
  if (off != out.size()) return Error::Internal("encoded {} bytes, expected {}", off, out.size());
  return out;
}

}  // namespace tenzro::blob
