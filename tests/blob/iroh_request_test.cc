// The iroh-blobs request codec (blob/iroh_request.h): golden bytes of
// iroh-blobs 0.35's postcard encoding, round trips, and malformed input.
#include "blob/iroh_request.h"

#include <gtest/gtest.h>

namespace tenzro::blob {
namespace {

Blake3Hash SomeHash() {
  Blake3Hash h;
  for (int i = 0; i < 32; ++i) h.bytes[i] = static_cast<uint8_t>(i);
  return h;
}

Bytes Concat(std::initializer_list<ByteSpan> parts) {
  Bytes out;
  for (ByteSpan p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST(IrohBlobsRequest, GoldenBytes) {
  Blake3Hash h = SomeHash();
  const uint8_t kind[] = {0x00};
  // GetRequest::single(hash): ranges [(0, [0]), (1, [])].
  const uint8_t all[] = {0x02, 0x00, 0x01, 0x00, 0x01, 0x00};
  EXPECT_EQ(EncodeGetRequest(h, ChunkRanges::All()), Concat({kind, h.span(), all}));
  // GetRequest::last_chunk(hash): [(0, [u64::MAX]), (1, [])].
  const uint8_t last[] = {0x02, 0x00, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x01, 0x00};
  EXPECT_EQ(EncodeGetRequest(h, ChunkRanges::LastChunk()), Concat({kind, h.span(), last}));
  // Chunks 3..5 and 200..: widths 3, 2, 195.
  auto r = ChunkRanges::Parse("3..5,200..").value();
  const uint8_t mixed[] = {0x02, 0x00, 0x03, 0x03, 0x02, 0xc3, 0x01, 0x01, 0x00};
  EXPECT_EQ(EncodeGetRequest(h, r), Concat({kind, h.span(), mixed}));
}

TEST(IrohBlobsRequest, DecodeRoundTripAndRejects) {
  Blake3Hash h = SomeHash();
  for (const char* text : {"all", "last", "0..1", "3..5,200..", "7..9,11..13,1000..1001"}) {
    auto ranges = ChunkRanges::Parse(text).value();
    auto back = DecodeGetRequest(EncodeGetRequest(h, ranges));
    ASSERT_TRUE(back) << text << ": " << back.error().ToString();
    EXPECT_EQ(back->hash, h);
    EXPECT_EQ(back->ranges, ranges) << text;
  }
  Bytes good = EncodeGetRequest(h, ChunkRanges::All());
  // Every truncation fails cleanly.
  for (size_t n = 0; n < good.size(); ++n)
    EXPECT_FALSE(DecodeGetRequest(ByteSpan(good.data(), n))) << "truncated at " << n;
  Bytes trailing = good;
  trailing.push_back(0);
  EXPECT_EQ(DecodeGetRequest(trailing).error().code(), ErrorCode::kCorruption);
  Bytes other_kind = good;
  other_kind[0] = 1;
  EXPECT_EQ(DecodeGetRequest(other_kind).error().code(), ErrorCode::kUnsupported);
  // RangeSpecSeq::all() (a hash sequence with all children) is not served.
  Bytes seq = Concat({Bytes{0}, h.span(), Bytes{0x01, 0x00, 0x01, 0x00}});
  EXPECT_EQ(DecodeGetRequest(seq).error().code(), ErrorCode::kUnsupported);
  // A zero-width span after the first is malformed; so is an 11-byte varint.
  Bytes zero_width = Concat({Bytes{0}, h.span(), Bytes{0x02, 0x00, 0x02, 0x01, 0x00, 0x01, 0x00}});
  EXPECT_EQ(DecodeGetRequest(zero_width).error().code(), ErrorCode::kCorruption);
  Bytes long_varint = Concat({Bytes{0}, h.span(), Bytes(11, 0xff)});
  EXPECT_EQ(DecodeGetRequest(long_varint).error().code(), ErrorCode::kCorruption);
  Bytes huge_count = Concat({Bytes{0}, h.span(), Bytes{0xff, 0xff, 0xff, 0xff, 0x0f}});
  EXPECT_EQ(DecodeGetRequest(huge_count).error().code(), ErrorCode::kCorruption);
}

}  // namespace
}  // namespace tenzro::blob
