// The blob and request table shared by bao_fuzz and its seed writer
// (fuzz_seeds.cc), so seeds and harness agree on what byte 0 selects.
#pragma once

#include <cstdint>

#include "blob/blake3.h"
#include "blob/chunk_ranges.h"
#include "core/bytes.h"

namespace tenzro::fuzz {

// A real small blob: 40 KiB + 5 bytes (three 16 KiB chunk groups, so the
// stream has parent pairs and a partial last chunk).
inline Bytes BaoBlob() {
  Bytes b(40 * 1024 + 5);
  uint32_t x = 2463534242u;
  for (auto& v : b) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    v = static_cast<uint8_t>(x);
  }
  return b;
}

// Byte 0 of an input: bits 0-1 the root (0: the empty blob's hash, 1: the
// real blob's, 2-3: a fixed hash of no known blob), bits 2-4 the ranges.
inline constexpr int kBaoRanges = 8;
inline blob::ChunkRanges BaoRanges(int i) {
  switch (i % kBaoRanges) {
    case 0: return blob::ChunkRanges::All();
    case 1: return blob::ChunkRanges::LastChunk();
    case 2: return blob::ChunkRanges::Range(0, 1);
    case 3: return blob::ChunkRanges::Range(15, 18);   // across the first group boundary
    case 4: return blob::ChunkRanges::From(33);
    case 5: return blob::ChunkRanges::Range(1000, 2000);  // past the end: size proof
    case 6: return blob::ChunkRanges::Bytes(20000, 20001);
    default: return blob::ChunkRanges::Range(16, 32);
  }
}

}  // namespace tenzro::fuzz
