#include "blob/decoder.h"

#include <algorithm>
#include <cstring>

namespace tenzro::blob {

StreamDecoder::StreamDecoder(const Blake3Hash& root, ChunkRanges ranges, DataSink sink, uint64_t max_size)
    : root_(root), ranges_(std::move(ranges)), sink_(std::move(sink)), max_size_(max_size) {
  if (ranges_.is_empty()) done_ = true;
}

void StreamDecoder::NextItem() {
  if (!iter_->Next(&item_)) {
    done_ = true;
    need_ = 0;
    return;
  }
  need_ = item_.size;
}

Result<void> StreamDecoder::Process(ByteSpan bytes) {
  if (!have_header_) {
    size_ = LoadU64LE(bytes.data());
    if (size_ > max_size_)
      return Error::ResourceExhausted("stream claims a {}-byte blob, limit is {}", size_, max_size_);
    have_header_ = true;
    total_chunks_ = ChunkCount(size_);
    iter_.emplace(size_, ranges_);
    stack_[top_++] = root_;
    NextItem();
    return Ok();
  }
  if (top_ == 0) return Error::Internal("bao decoder: CV stack underflow");
  Blake3Hash expected = stack_[--top_];
  if (item_.kind == BaoItem::Kind::kParent) {
    Blake3Hash l, r;
    std::memcpy(l.bytes.data(), bytes.data(), 32);
    std::memcpy(r.bytes.data(), bytes.data() + 32, 32);
    if (ParentCv(l, r, item_.is_root) != expected)
      return Error::Corruption("verified stream: parent pair for chunk {} at stream offset {} does not match",
                               item_.start_chunk, consumed_);
    if (item_.right) stack_[top_++] = r;
    if (item_.left) stack_[top_++] = l;
  } else {
    if (SubtreeCv(bytes, item_.start_chunk, item_.is_root) != expected)
      return Error::Corruption("verified stream: data for chunk {} at stream offset {} does not match",
                               item_.start_chunk, consumed_);
    if (item_.start_chunk + item_.chunks >= total_chunks_) verified_size_ = size_;
    data_bytes_ += bytes.size();
    if (sink_ && !bytes.empty()) TENZRO_CHECK_OK(sink_(item_.start_chunk * kChunkSize, bytes));
  }
  NextItem();
  return Ok();
}

Result<void> StreamDecoder::Feed(ByteSpan bytes) {
  if (failed_) return *failed_;
  while (!bytes.empty()) {
    if (done_) {
      failed_ = Error::Corruption("verified stream: {} unexpected bytes after the end at offset {}",
                                  bytes.size(), consumed_);
      return *failed_;
    }
    Result<void> r;
    if (buffered_ == 0 && bytes.size() >= need_) {
      // Whole item available: verify in place.
      ByteSpan item = bytes.first(need_);
      bytes = bytes.subspan(need_);
      r = Process(item);
      consumed_ += item.size();
    } else {
      size_t k = std::min(bytes.size(), need_ - buffered_);
      std::memcpy(buf_ + buffered_, bytes.data(), k);
      buffered_ += k;
      bytes = bytes.subspan(k);
      if (buffered_ < need_) break;
      size_t n = buffered_;
      buffered_ = 0;
      r = Process(ByteSpan(buf_, n));
      consumed_ += n;
    }
    if (!r) {
      failed_ = r.error();
      return *failed_;
    }
  }
  // A zero-byte item (the empty blob's leaf) completes without input.
  while (!done_ && have_header_ && need_ == 0 && buffered_ == 0) {
    auto r = Process(ByteSpan());
    if (!r) {
      failed_ = r.error();
      return *failed_;
    }
  }
  return Ok();
}

Result<void> StreamDecoder::Finish() {
  if (failed_) return *failed_;
  if (!done_)
    return Error::Corruption("verified stream truncated after {} bytes{}", consumed_,
                             have_header_ ? "" : " (no size header)");
  return Ok();
}

Result<Bytes> DecodeStream(const Blake3Hash& root, const ChunkRanges& ranges, ByteSpan stream, uint64_t max_size) {
  Bytes out;
  StreamDecoder dec(root, ranges, [&](uint64_t off, ByteSpan b) -> Result<void> {
    if (out.size() < off + b.size()) out.resize(off + b.size());
    if (!b.empty()) std::memcpy(out.data() + off, b.data(), b.size());  // the empty blob: both null
    return Ok();
  }, max_size);
  TENZRO_CHECK_OK(dec.Feed(stream));
  TENZRO_CHECK_OK(dec.Finish());
  if (dec.verified_size()) out.resize(*dec.verified_size());
  return out;
}

}  // namespace tenzro::blob
