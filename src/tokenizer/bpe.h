// tenzro tokenizer: byte-level BPE merging of one pre-token.
//
// MergeTable maps a pair of token ids to (rank, merged id) in an
// open-addressing hash table (no per-entry allocation; ~16 bytes a merge).
// BpeMerge turns a pre-token's bytes into ids: each byte becomes its byte
// symbol, then the adjacent pair of lowest rank is merged until no pair has a
// rank (GPT-2's algorithm; equal pairs merge leftmost first, as the priority
// queues of llama.cpp and Hugging Face do). O(n log n) in the piece length.
// Thread-safety: a built MergeTable is immutable; BpeScratch is per caller.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tenzro::tokenizer {

struct Merge {
  int32_t rank = -1;    // -1: no such merge
  int32_t result = -1;  // the merged token's id
};

class MergeTable {
 public:
  // REQUIRES: called before the first Insert; n = the number of merges.
  void Reserve(size_t n);
  // Adds (left, right) -> merge unless the pair is present (the first, i.e.
  // lowest-ranked, entry wins). Returns false when it was present.
  bool Insert(int32_t left, int32_t right, Merge m);
  Merge Find(int32_t left, int32_t right) const;
  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t key = kEmpty;
    Merge value;
  };
  static constexpr uint64_t kEmpty = ~0ull;
  static uint64_t Key(int32_t l, int32_t r) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32) | static_cast<uint32_t>(r);
  }
  size_t SlotOf(uint64_t key) const { return (key * 0x9E3779B97F4A7C15ull) >> shift_; }
  std::vector<Slot> slots_;
  int shift_ = 64;
  size_t size_ = 0;
};

// Reusable buffers for BpeMerge (one per encoding call or thread), and a
// memo of the pieces merged so far: a long text repeats its words, and a
// memo hit costs one hash of the piece instead of a merge loop. Bounded:
// at most kMemoPieces pieces of at most kMemoPieceBytes bytes.
struct BpeScratch {
  static constexpr size_t kMemoPieces = 8192;
  static constexpr size_t kMemoPieceBytes = 64;
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Sym {
    int32_t id, prev, next;
  };
  struct Cand {
    int32_t rank, pos, left, right, result;
  };
  std::vector<Sym> syms;
  std::vector<Cand> heap;
  std::unordered_map<std::string, std::pair<uint32_t, uint32_t>, Hash, std::equal_to<>> memo;  // -> memo_ids range
  std::vector<int32_t> memo_ids;
};

// Appends the ids of `piece` (non-empty bytes) to `out`. `byte_ids[b]` is the
// id of byte b's symbol.
void BpeMerge(std::string_view piece, const std::array<int32_t, 256>& byte_ids, const MergeTable& merges,
              BpeScratch& scratch, std::vector<int32_t>& out);
// BpeMerge through scratch.memo (same result).
void BpeMergeMemo(std::string_view piece, const std::array<int32_t, 256>& byte_ids, const MergeTable& merges,
                  BpeScratch& scratch, std::vector<int32_t>& out);

}  // namespace tenzro::tokenizer
