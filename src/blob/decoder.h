// tenzro blob: streaming verifier of verified streams (docs/formats/bao-stream.md).
//
// StreamDecoder is fed the bytes of a response as they arrive (HTTP body
// today, a QUIC stream later), in pieces of any size. Knowing only the
// expected root hash and the requested ranges, it checks every parent pair and
// every leaf against the CVs proven so far before handing the leaf's data to
// the sink, so the sink only ever sees verified bytes, in stream order
// (ascending offsets). The first mismatch returns kCorruption and the decoder
// stays failed. Memory is bounded: one 16 KiB leaf buffer plus O(tree depth).
//
// The 8-byte size header is a claim until the leaf holding the last chunk
// verifies (which any request touching the end, e.g. ChunkRanges::LastChunk(),
// includes); only then is verified_size() set.
//
//   StreamDecoder dec(hash, ChunkRanges::All(), [&](uint64_t off, ByteSpan b) {
//     return file->Append(b);   // off == bytes written so far for All()
//   });
//   while (read body piece) TENZRO_CHECK_OK(dec.Feed(piece));
//   TENZRO_CHECK_OK(dec.Finish());   // kCorruption if truncated
//
// Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "blob/bao_tree.h"
#include "blob/blake3.h"
#include "blob/chunk_ranges.h"
#include "core/bytes.h"
#include "core/result.h"

namespace tenzro::blob {

// Receives verified data: `data` starts at byte `offset` of the blob. An error
// returned by the sink stops the decoder and is returned from Feed.
using DataSink = std::function<Result<void>(uint64_t offset, ByteSpan data)>;

class StreamDecoder {
 public:
  // `max_size`: a claimed size above it fails with kResourceExhausted.
  StreamDecoder(const Blake3Hash& root, ChunkRanges ranges, DataSink sink, uint64_t max_size = UINT64_MAX);

  // Consumes the next bytes of the stream. kCorruption on a hash mismatch or
  // bytes after the end of the stream.
  Result<void> Feed(ByteSpan bytes);
  // Declares the end of input: kCorruption if the stream is incomplete.
  Result<void> Finish();

  bool done() const { return done_; }
  bool has_size() const { return have_header_; }
  // The size from the header (unverified). REQUIRES: has_size().
  uint64_t claimed_size() const { return size_; }
  // The size, once the last chunk has been verified.
  std::optional<uint64_t> verified_size() const { return verified_size_; }
  uint64_t bytes_consumed() const { return consumed_; }
  // Bytes of verified data handed to the sink.
  uint64_t data_bytes() const { return data_bytes_; }

 private:
  Result<void> Process(ByteSpan item);
  void NextItem();

  Blake3Hash root_;
  ChunkRanges ranges_;
  DataSink sink_;
  uint64_t max_size_;
  std::optional<BaoIter> iter_;
  BaoItem item_{};
  Blake3Hash stack_[130];
  int top_ = 0;
  uint8_t buf_[kGroupSize];
  size_t buffered_ = 0;
  size_t need_ = 8;  // bytes of the current item (header first)
  uint64_t size_ = 0, total_chunks_ = 0, consumed_ = 0, data_bytes_ = 0;
  bool have_header_ = false, done_ = false;
  std::optional<uint64_t> verified_size_;
  std::optional<Error> failed_;
};

// Alias under the name the HTTP client uses.
using FetchVerifier = StreamDecoder;

// Decodes a whole in-memory stream; returns the verified data laid out at
// their offsets in a buffer of the verified size (unrequested bytes zero).
// For tests and small blobs only.
Result<Bytes> DecodeStream(const Blake3Hash& root, const ChunkRanges& ranges, ByteSpan stream,
                           uint64_t max_size = UINT64_MAX);

}  // namespace tenzro::blob
