#include "tokenizer/bpe.h"

#include <algorithm>
#include <bit>

namespace tenzro::tokenizer {

void MergeTable::Reserve(size_t n) {
  size_t cap = std::bit_ceil(std::max<size_t>(16, n * 2));
  slots_.assign(cap, Slot{});
  shift_ = 64 - std::countr_zero(cap);
  size_ = 0;
}

bool MergeTable::Insert(int32_t left, int32_t right, Merge m) {
  if (slots_.empty() || (size_ + 1) * 2 > slots_.size()) {
    // Grow (only when Reserve was too small): rehash into twice the slots.
    std::vector<Slot> old = std::move(slots_);
    size_t cap = std::bit_ceil(std::max<size_t>(16, old.size() * 2));
    slots_.assign(cap, Slot{});
    shift_ = 64 - std::countr_zero(cap);
    for (const Slot& s : old) {
      if (s.key == kEmpty) continue;
      size_t i = SlotOf(s.key);
      while (slots_[i].key != kEmpty) i = (i + 1) & (slots_.size() - 1);
      slots_[i] = s;
    }
  }
  uint64_t key = Key(left, right);
  size_t i = SlotOf(key);
  while (slots_[i].key != kEmpty) {
    if (slots_[i].key == key) return false;
    i = (i + 1) & (slots_.size() - 1);
  }
  slots_[i] = {key, m};
  ++size_;
  return true;
}

Merge MergeTable::Find(int32_t left, int32_t right) const {
  if (slots_.empty()) return {};
  uint64_t key = Key(left, right);
  for (size_t i = SlotOf(key);; i = (i + 1) & (slots_.size() - 1)) {
    if (slots_[i].key == key) return slots_[i].value;
    if (slots_[i].key == kEmpty) return {};
  }
}

namespace {

// Min-heap order on (rank, position): lowest rank first, leftmost on ties.
bool Later(const BpeScratch::Cand& a, const BpeScratch::Cand& b) {
  return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
}

void Push(BpeScratch& s, const MergeTable& merges, int32_t pos) {
  if (pos < 0) return;
  int32_t next = s.syms[pos].next;
  if (next < 0) return;
  Merge m = merges.Find(s.syms[pos].id, s.syms[next].id);
  if (m.rank < 0) return;
  s.heap.push_back({m.rank, pos, s.syms[pos].id, s.syms[next].id, m.result});
  std::push_heap(s.heap.begin(), s.heap.end(), Later);
}

}  // namespace

void BpeMerge(std::string_view piece, const std::array<int32_t, 256>& byte_ids, const MergeTable& merges,
              BpeScratch& s, std::vector<int32_t>& out) {
  const auto n = static_cast<int32_t>(piece.size());
  if (n == 1) {
    out.push_back(byte_ids[static_cast<uint8_t>(piece[0])]);
    return;
  }
  s.syms.resize(n);
  for (int32_t i = 0; i < n; ++i) s.syms[i] = {byte_ids[static_cast<uint8_t>(piece[i])], i - 1, i + 1 < n ? i + 1 : -1};
  s.heap.clear();
  for (int32_t i = 0; i + 1 < n; ++i) Push(s, merges, i);
  while (!s.heap.empty()) {
    std::pop_heap(s.heap.begin(), s.heap.end(), Later);
    BpeScratch::Cand c = s.heap.back();
    s.heap.pop_back();
    BpeScratch::Sym& left = s.syms[c.pos];
    // Stale when either side was merged since (a merged symbol changes id;
    // the left one's neighbour changes only by absorbing it).
    if (left.id != c.left || left.next < 0 || s.syms[left.next].id != c.right) continue;
    int32_t right = left.next;
    left.id = c.result;
    left.next = s.syms[right].next;
    if (left.next >= 0) s.syms[left.next].prev = c.pos;
    s.syms[right].id = -1;
    Push(s, merges, left.prev);
    Push(s, merges, c.pos);
  }
  for (int32_t i = 0; i >= 0; i = s.syms[i].next) out.push_back(s.syms[i].id);
}

void BpeMergeMemo(std::string_view piece, const std::array<int32_t, 256>& byte_ids, const MergeTable& merges,
                  BpeScratch& s, std::vector<int32_t>& out) {
  if (piece.size() < 2 || piece.size() > BpeScratch::kMemoPieceBytes) {
    BpeMerge(piece, byte_ids, merges, s, out);
    return;
  }
  if (auto it = s.memo.find(piece); it != s.memo.end()) {
    auto [begin, n] = it->second;
    out.insert(out.end(), s.memo_ids.begin() + begin, s.memo_ids.begin() + begin + n);
    return;
  }
  size_t before = out.size();
  BpeMerge(piece, byte_ids, merges, s, out);
  if (s.memo.size() >= BpeScratch::kMemoPieces) return;
  auto begin = static_cast<uint32_t>(s.memo_ids.size());
  s.memo_ids.insert(s.memo_ids.end(), out.begin() + before, out.end());
  s.memo.emplace(std::string(piece), std::make_pair(begin, static_cast<uint32_t>(out.size() - before)));
}

}  // namespace tenzro::tokenizer
