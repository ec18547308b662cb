// tenzro blob: producer of verified streams (docs/formats/bao-stream.md).
//
// StreamEncoder turns (data, pre-order outboard, root, ranges) into the byte
// stream `u64 LE size || items`, pulled a buffer at a time so a server writes
// it chunk by chunk without holding it. Like bao-tree's
// encode_ranges_validated it checks every pair and leaf it emits against the
// root before emitting it: a corrupt store yields kCorruption, never a stream
// the client would reject halfway. Not thread-safe; one encoder per response.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "blob/bao_tree.h"
#include "blob/blake3.h"
#include "blob/chunk_ranges.h"
#include "core/bytes.h"
#include "core/result.h"

namespace tenzro::blob {

class StreamEncoder {
 public:
  // `data` and `outboard` are borrowed: they must stay valid for the
  // encoder's life unless `keep_alive` owns them (e.g. a Blob's mappings).
  // kInvalidArgument if the outboard size does not fit data.size().
  // Empty ranges give an empty stream (not even the size header).
  static Result<std::unique_ptr<StreamEncoder>> Create(ByteSpan data, ByteSpan outboard,
                                                       const Blake3Hash& root, const ChunkRanges& ranges,
                                                       std::shared_ptr<const void> keep_alive = nullptr);

  // Copies up to out.size() next bytes of the stream into `out`; returns how
  // many (0 only when done or out is empty). kCorruption if data or outboard
  // do not match the root; the encoder is then failed for good.
  Result<size_t> Read(std::span<uint8_t> out);
  bool done() const { return done_; }
  // Total stream length, known up front (e.g. for Content-Length).
  uint64_t total_size() const { return total_size_; }
  uint64_t bytes_emitted() const { return emitted_; }

 private:
  StreamEncoder(ByteSpan data, ByteSpan outboard, const Blake3Hash& root, const ChunkRanges& ranges,
                std::shared_ptr<const void> keep_alive);
  // Loads and validates the next item into pending_.
  Result<void> Advance();

  ByteSpan data_, outboard_;
  std::shared_ptr<const void> keep_alive_;
  BaoIter iter_;
  Blake3Hash stack_[130];
  int top_ = 0;
  uint8_t small_[kPairSize];  // header or parent pair
  ByteSpan pending_;          // validated bytes not yet emitted
  uint64_t total_size_ = 0, emitted_ = 0;
  bool started_ = false, done_ = false;
  std::optional<Error> failed_;
};

// The whole stream in memory (tests, small blobs).
Result<Bytes> EncodeStream(ByteSpan data, ByteSpan outboard, const Blake3Hash& root,
                           const ChunkRanges& ranges);

}  // namespace tenzro::blob
