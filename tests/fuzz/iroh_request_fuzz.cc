// libFuzzer target: what a peer sends first on an iroh-blobs stream
// (blob/iroh_request.h DecodeGetRequest, docs/formats/quic.md) and the chunk
// range text form a HTTP blob request carries (blob/chunk_ranges.h). Nothing
// may crash; a request that decodes re-encodes to bytes that decode to the
// same request; ranges obey the set laws the server relies on.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "blob/bao_tree.h"
#include "blob/chunk_ranges.h"
#include "blob/iroh_request.h"

using namespace tenzro;
using blob::ChunkRanges;

namespace {

void CheckRanges(const ChunkRanges& r) {
  const auto& b = r.boundaries();
  for (size_t i = 1; i < b.size(); ++i)
    if (b[i] <= b[i - 1]) std::abort();  // strictly increasing
  if (!(r.Union(ChunkRanges::All()) == ChunkRanges::All())) std::abort();
  if (!(r.Intersect(ChunkRanges::All()) == r)) std::abort();
  if (!(r.Union(r) == r) || !(r.Intersect(r) == r)) std::abort();
  if (!r.Intersect(ChunkRanges()).is_empty()) std::abort();
  auto again = ChunkRanges::Parse(r.ToString());
  if (!again || !(*again == r)) std::abort();
  // EncodedSize walks the blob's tree: only small sizes here.
  for (uint64_t size : {uint64_t{0}, uint64_t{1}, uint64_t{1024}, uint64_t{1025}, uint64_t{40965}, uint64_t{1} << 40}) {
    const ChunkRanges n = r.Normalize(size);
    if (!r.is_empty() && n.is_empty()) std::abort();  // something non-empty always selects a chunk
    if (size < (1u << 20)) (void)blob::EncodedSize(size, n);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const ByteSpan in(data, size);
  if (auto req = blob::DecodeGetRequest(in)) {
    CheckRanges(req->ranges);
    const Bytes enc = blob::EncodeGetRequest(req->hash, req->ranges);
    auto again = blob::DecodeGetRequest(ByteSpan(enc));
    if (!again || !(again->hash == req->hash) || !(again->ranges == req->ranges)) std::abort();
  }
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto r = ChunkRanges::Parse(text)) CheckRanges(*r);
  return 0;
}
