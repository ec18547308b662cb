// tenzro blob: sets of 1 KiB chunk indices, as requested in verified streams.
//
// A ChunkRanges is a sorted list of disjoint half-open chunk intervals
// [start, end); the last interval may be open ([start, infinity)). It is stored
// like iroh's/range-collections' RangeSet: a strictly increasing list of
// boundaries where even positions start and odd positions end an interval, an
// odd count meaning the last interval is open. LastChunk() = {u64::MAX..} is
// iroh's "size proof" request: anything at or past the end of a blob selects
// its last chunk (see Normalize and docs/formats/bao-stream.md).
// Text form: "0..4,10..12,100.." ("" = empty, ".." not allowed, "all" = "0..").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace tenzro::blob {

class ChunkRanges {
 public:
  ChunkRanges() = default;  // empty
  static ChunkRanges All() { return ChunkRanges({0}); }
  static ChunkRanges LastChunk() { return ChunkRanges({UINT64_MAX}); }
  // [start, infinity)
  static ChunkRanges From(uint64_t start) { return ChunkRanges({start}); }
  // [start, end); empty if end <= start.
  static ChunkRanges Range(uint64_t start, uint64_t end);
  // The chunks that cover bytes [begin, end).
  static ChunkRanges Bytes(uint64_t begin, uint64_t end);
  // From raw boundaries; kInvalidArgument unless strictly increasing.
  static Result<ChunkRanges> FromBoundaries(std::vector<uint64_t> boundaries);
  // Parses the text form.
  static Result<ChunkRanges> Parse(std::string_view text);

  ChunkRanges Union(const ChunkRanges& other) const;
  ChunkRanges Intersect(const ChunkRanges& other) const;
  bool Contains(uint64_t chunk) const;
  // True if every chunk in [start, end) is in the set.
  bool Covers(uint64_t start, uint64_t end) const;
  // True if some chunk in [start, end) is in the set.
  bool Intersects(uint64_t start, uint64_t end) const;

  bool is_empty() const { return b_.empty(); }
  bool is_all() const { return b_.size() == 1 && b_[0] == 0; }
  const std::vector<uint64_t>& boundaries() const { return b_; }
  std::string ToString() const;
  bool operator==(const ChunkRanges&) const = default;

  // The ranges as the tree of a blob of `size` bytes sees them (bao-tree's
  // truncate_ranges): chunks before the last one are kept as is, and if any
  // requested chunk is at or past the last chunk, the last chunk is selected
  // (the result then ends with an open interval starting at or before it).
  ChunkRanges Normalize(uint64_t size) const;

 private:
  explicit ChunkRanges(std::vector<uint64_t> b) : b_(std::move(b)) {}
  std::vector<uint64_t> b_;
};

// Number of 1 KiB chunks in a blob of `size` bytes (0 for the empty blob).
inline uint64_t ChunkCount(uint64_t size) { return size / 1024 + (size % 1024 != 0); }

}  // namespace tenzro::blob
