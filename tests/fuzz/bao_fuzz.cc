// libFuzzer target: the verified-stream (bao-tree / iroh-blobs response)
// decoder, blob/decoder.h. Byte 0 picks the expected root and the requested
// ranges (bao_fuzz.h), byte 1 the piece size the stream is fed in, the rest
// is the stream. Whatever the bytes:
//   * nothing crashes;
//   * against the real blob's hash, every byte handed to the sink is the
//     blob's own byte at that offset, offsets ascend, and a stream accepted
//     whole delivers exactly the requested ranges;
//   * against a hash of no known blob, no stream is ever accepted;
//   * feeding in pieces and decoding in one go agree.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "blob/decoder.h"
#include "bao_fuzz.h"

using namespace tenzro;
using namespace tenzro::blob;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  static const Bytes kBlob = fuzz::BaoBlob();
  static const Blake3Hash kBlobHash = Blake3(ByteSpan(kBlob));
  static const Blake3Hash kEmptyHash = Blake3(ByteSpan());
  Blake3Hash unknown;
  std::memset(unknown.bytes.data(), 0x5a, unknown.bytes.size());

  const int root_sel = data[0] & 3;
  const Blake3Hash& root = root_sel == 0 ? kEmptyHash : root_sel == 1 ? kBlobHash : unknown;
  const ChunkRanges ranges = fuzz::BaoRanges(data[0] >> 2);
  static constexpr size_t kPieces[8] = {1, 3, 64, 1023, 1024, 8200, 16448, 1 << 20};
  const size_t piece = kPieces[data[1] & 7];
  const ByteSpan stream(data + 2, size - 2);
  const uint64_t max_size = 1 << 24;

  uint64_t next = 0, delivered = 0;
  StreamDecoder dec(root, ranges, [&](uint64_t off, ByteSpan b) -> Result<void> {
    if (off < next) std::abort();  // ascending, no overlap
    next = off + b.size();
    delivered += b.size();
    if (root_sel == 0 && !b.empty()) std::abort();  // the empty blob has no bytes
    if (root_sel >= 2) std::abort();                // nothing verifies against an unknown root
    if (root_sel == 1 && (off + b.size() > kBlob.size() || std::memcmp(kBlob.data() + off, b.data(), b.size()) != 0))
      std::abort();
    return Ok();
  }, max_size);
  Result<void> fed = Ok();
  for (size_t at = 0; at < stream.size() && fed; at += piece)
    fed = dec.Feed(stream.subspan(at, std::min(piece, stream.size() - at)));
  const bool ok = fed && dec.Finish();

  auto whole = DecodeStream(root, ranges, stream, max_size);
  if (whole.has_value() != ok) std::abort();
  if (!ok) return 0;
  if (root_sel >= 2) std::abort();
  if (root_sel == 0 && (!dec.verified_size() || *dec.verified_size() != 0)) std::abort();
  if (root_sel == 1) {
    // Exactly the requested chunks (normalised to the blob) were delivered.
    const ChunkRanges want = ranges.Normalize(kBlob.size());
    uint64_t want_bytes = 0;
    const uint64_t n_chunks = (kBlob.size() + kChunkSize - 1) / kChunkSize;
    for (uint64_t c = 0; c < n_chunks; ++c)
      if (want.Contains(c)) want_bytes += std::min<uint64_t>(kChunkSize, kBlob.size() - c * kChunkSize);
    if (delivered != want_bytes || dec.data_bytes() != want_bytes) std::abort();
    if (dec.verified_size() && *dec.verified_size() != kBlob.size()) std::abort();
    if (whole->size() > kBlob.size()) std::abort();
    for (uint64_t c = 0; c < n_chunks; ++c) {
      if (!want.Contains(c)) continue;
      const uint64_t off = c * kChunkSize, n = std::min<uint64_t>(kChunkSize, kBlob.size() - off);
      if (off + n > whole->size() || std::memcmp(whole->data() + off, kBlob.data() + off, n) != 0) std::abort();
    }
  }
  return 0;
}
