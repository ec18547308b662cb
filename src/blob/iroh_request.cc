// The iroh-blobs request codec (blob/iroh_request.h): postcard encoding of
// Request::Get.
#include "blob/iroh_request.h"

#include "core/bytes.h"

namespace tenzro::blob {

namespace {

// postcard: unsigned integers are LEB128 varints (at most 10 bytes for u64).
void PutVarint(Bytes& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v) | 0x80);
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}

Result<uint64_t> GetVarint(ByteReader& r, std::string_view what) {
  uint64_t v = 0;
  for (int i = 0; i < 10; ++i) {
    TENZRO_TRY(uint8_t b, r.U8(what));
    if (i == 9 && b > 1) return r.Corrupt(what, "varint overflows u64");
    v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) return v;
  }
  return r.Corrupt(what, "varint longer than 10 bytes");
}

constexpr uint8_t kRequestGet = 0;
constexpr size_t kMaxSpecs = 1024;     // RangeSpecSeq entries
constexpr size_t kMaxWidths = 1 << 14;  // boundaries per RangeSpec

void PutSpec(Bytes& out, const ChunkRanges& ranges) {
  const auto& b = ranges.boundaries();
  PutVarint(out, b.size());
  uint64_t prev = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    PutVarint(out, i == 0 ? b[0] : b[i] - prev);
    prev = b[i];
  }
}

Result<ChunkRanges> GetSpec(ByteReader& r) {
  TENZRO_TRY(uint64_t n, GetVarint(r, "range spec length"));
  if (n > kMaxWidths) return r.Corrupt("range spec length", fmt::format("{} widths is over the limit", n));
  TENZRO_CHECK_OK(r.CheckCount(n, 1, "range spec widths"));
  std::vector<uint64_t> bounds;
  bounds.reserve(n);
  uint64_t at = 0;
  for (uint64_t i = 0; i < n; ++i) {
    TENZRO_TRY(uint64_t w, GetVarint(r, "range spec width"));
    if (i > 0 && w == 0) return r.Corrupt("range spec width", "zero-width span after the first");
    if (AddOverflow(at, w, &at)) return r.Corrupt("range spec width", "boundaries overflow u64");
    bounds.push_back(at);
  }
  auto ranges = ChunkRanges::FromBoundaries(std::move(bounds));
  if (!ranges) return r.Corrupt("range spec", ranges.error().message());
  return *ranges;
}

}  // namespace

Bytes EncodeGetRequest(const Blake3Hash& hash, const ChunkRanges& ranges) {
  Bytes out;
  out.reserve(64 + 10 * ranges.boundaries().size());
  out.push_back(kRequestGet);
  out.insert(out.end(), hash.bytes.begin(), hash.bytes.end());
  // RangeSpecSeq::from_ranges([ranges]): the blob's spec, then "empty from
  // index 1 on" (a run-length list of (count, spec) pairs).
  PutVarint(out, 2);
  PutVarint(out, 0);
  PutSpec(out, ranges);
  PutVarint(out, 1);
  PutVarint(out, 0);
  return out;
}

Result<GetRequest> DecodeGetRequest(ByteSpan bytes) {
  ByteReader r(bytes, "iroh-blobs request");
  TENZRO_TRY(uint64_t kind, GetVarint(r, "request kind"));
  if (kind != kRequestGet) return Error::Unsupported("iroh-blobs request kind {} (only Get is served)", kind);
  GetRequest req;
  TENZRO_TRY(ByteSpan h, r.Take(32, "hash"));
  std::memcpy(req.hash.bytes.data(), h.data(), 32);
  TENZRO_TRY(uint64_t n, GetVarint(r, "range spec count"));
  if (n > kMaxSpecs) return r.Corrupt("range spec count", fmt::format("{} entries is over the limit", n));
  std::vector<std::pair<uint64_t, ChunkRanges>> seq;
  for (uint64_t i = 0; i < n; ++i) {
    TENZRO_TRY(uint64_t count, GetVarint(r, "range spec offset"));
    TENZRO_TRY(ChunkRanges spec, GetSpec(r));
    seq.emplace_back(count, std::move(spec));
  }
  if (r.remaining() != 0) return r.Corrupt("request", fmt::format("{} trailing bytes", r.remaining()));
  // Expand the run-length list: entry k's spec applies from index
  // sum(counts[0..k]) until the next entry; the last one repeats forever.
  if (seq.empty()) return GetRequest{req.hash, {}};
  bool single = seq.size() == 2 && seq[0].first == 0 && seq[1].first == 1 && seq[1].second.is_empty();
  bool root_only_empty = seq.size() == 1 && seq[0].second.is_empty();
  if (root_only_empty) return GetRequest{req.hash, {}};
  if (!single)
    return Error::Unsupported("iroh-blobs hash-sequence requests are not served (only single blobs, {} range specs)",
                              seq.size());
  req.ranges = std::move(seq[0].second);
  return req;
}

}  // namespace tenzro::blob
