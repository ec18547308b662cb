#include "blob/chunk_ranges.h"

#include <algorithm>
#include <charconv>

namespace tenzro::blob {
namespace {

// Interval list view of boundaries: [start, end) with end = UINT64_MAX meaning
// "open" only for the last interval of an odd list. Works on explicit
// (start, end, open) triples to keep the set algebra simple.
struct Iv {
  uint64_t start, end;
  bool open;
};

std::vector<Iv> ToIntervals(const std::vector<uint64_t>& b) {
  std::vector<Iv> v;
  for (size_t i = 0; i < b.size(); i += 2) {
    if (i + 1 < b.size()) v.push_back({b[i], b[i + 1], false});
    else v.push_back({b[i], UINT64_MAX, true});
  }
  return v;
}

// Sorted, possibly overlapping intervals -> canonical boundaries.
std::vector<uint64_t> FromIntervals(std::vector<Iv> v) {
  std::sort(v.begin(), v.end(), [](const Iv& a, const Iv& b) { return a.start < b.start; });
  std::vector<uint64_t> out;
  bool have = false, cur_open = false;
  uint64_t cs = 0, ce = 0;
  for (const Iv& iv : v) {
    if (!iv.open && iv.end <= iv.start) continue;
    if (have && (cur_open || iv.start <= ce)) {
      if (iv.open) cur_open = true;
      else ce = std::max(ce, iv.end);
      continue;
    }
    if (have) { out.push_back(cs); out.push_back(ce); }
    have = true;
    cs = iv.start;
    ce = iv.end;
    cur_open = iv.open;
  }
  if (have) {
    out.push_back(cs);
    if (!cur_open) out.push_back(ce);
  }
  return out;
}

}  // namespace

ChunkRanges ChunkRanges::Range(uint64_t start, uint64_t end) {
  if (end <= start) return {};
  return ChunkRanges({start, end});
}

ChunkRanges ChunkRanges::Bytes(uint64_t begin, uint64_t end) {
  if (end <= begin) return {};
  return Range(begin / 1024, end / 1024 + (end % 1024 != 0));
}

Result<ChunkRanges> ChunkRanges::FromBoundaries(std::vector<uint64_t> boundaries) {
  for (size_t i = 1; i < boundaries.size(); ++i)
    if (boundaries[i] <= boundaries[i - 1])
      return Error::InvalidArgument("chunk range boundaries not strictly increasing at index {}", i);
  return ChunkRanges(std::move(boundaries));
}

Result<ChunkRanges> ChunkRanges::Parse(std::string_view text) {
  if (text == "all") return All();
  if (text == "last") return LastChunk();
  std::vector<Iv> v;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = text.find(',', pos);
    std::string_view part = text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    pos = comma == std::string_view::npos ? text.size() : comma + 1;
    size_t dots = part.find("..");
    if (dots == std::string_view::npos || dots == 0)
      return Error::InvalidArgument("chunk range '{}' is not START..END or START..", part);
    auto num = [](std::string_view s, uint64_t* out) {
      auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
      return r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty();
    };
    uint64_t s = 0, e = 0;
    if (!num(part.substr(0, dots), &s)) return Error::InvalidArgument("bad chunk range start in '{}'", part);
    std::string_view rest = part.substr(dots + 2);
    if (rest.empty()) {
      v.push_back({s, UINT64_MAX, true});
    } else {
      if (!num(rest, &e)) return Error::InvalidArgument("bad chunk range end in '{}'", part);
      if (e <= s) return Error::InvalidArgument("empty chunk range '{}'", part);
      v.push_back({s, e, false});
    }
  }
  return ChunkRanges(FromIntervals(std::move(v)));
}

ChunkRanges ChunkRanges::Union(const ChunkRanges& other) const {
  auto a = ToIntervals(b_);
  auto b = ToIntervals(other.b_);
  a.insert(a.end(), b.begin(), b.end());
  return ChunkRanges(FromIntervals(std::move(a)));
}

ChunkRanges ChunkRanges::Intersect(const ChunkRanges& other) const {
  std::vector<Iv> out;
  for (const Iv& x : ToIntervals(b_))
    for (const Iv& y : ToIntervals(other.b_)) {
      uint64_t s = std::max(x.start, y.start);
      if (x.open && y.open) { out.push_back({s, UINT64_MAX, true}); continue; }
      uint64_t e = x.open ? y.end : y.open ? x.end : std::min(x.end, y.end);
      if (e > s) out.push_back({s, e, false});
    }
  return ChunkRanges(FromIntervals(std::move(out)));
}

bool ChunkRanges::Contains(uint64_t chunk) const {
  // Number of boundaries <= chunk: odd means inside an interval.
  size_t n = std::upper_bound(b_.begin(), b_.end(), chunk) - b_.begin();
  return n % 2 == 1;
}

bool ChunkRanges::Covers(uint64_t start, uint64_t end) const {
  if (end <= start) return true;
  size_t n = std::upper_bound(b_.begin(), b_.end(), start) - b_.begin();
  if (n % 2 == 0) return false;  // start not in the set
  return n == b_.size() || b_[n] >= end;  // the interval's end
}

bool ChunkRanges::Intersects(uint64_t start, uint64_t end) const {
  if (end <= start) return false;
  size_t n = std::upper_bound(b_.begin(), b_.end(), start) - b_.begin();
  if (n % 2 == 1) return true;             // start inside an interval
  return n < b_.size() && b_[n] < end;     // next interval starts before end
}

std::string ChunkRanges::ToString() const {
  std::string s;
  for (size_t i = 0; i < b_.size(); i += 2) {
    if (!s.empty()) s += ',';
    s += std::to_string(b_[i]) + "..";
    if (i + 1 < b_.size()) s += std::to_string(b_[i + 1]);
  }
  return s;
}

ChunkRanges ChunkRanges::Normalize(uint64_t size) const {
  uint64_t chunks = ChunkCount(size);
  uint64_t last = chunks == 0 ? 0 : chunks - 1;
  std::vector<Iv> v;
  for (const Iv& iv : ToIntervals(b_)) {
    if (iv.start < last) v.push_back({iv.start, iv.open ? last : std::min(iv.end, last), false});
  }
  if (Intersects(last, UINT64_MAX) || (b_.size() % 2 == 1)) v.push_back({last, UINT64_MAX, true});
  return ChunkRanges(FromIntervals(std::move(v)));
}

}  // namespace tenzro::blob
