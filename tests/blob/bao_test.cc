// Verified streams: outboards, encoder vs an independent recursive reference
// (a transcription of bao-tree's encode_selected_rec with min_level 4),
// round trips, corruption and truncation.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "blob/bao_tree.h"
#include "blob/decoder.h"
#include "blob/encoder.h"

namespace tenzro::blob {
namespace {

Bytes RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Bytes b(n);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

// bao-tree rec.rs encode_selected_rec(start, data, is_root, query, min_level=4, emit_data=true).
Blake3Hash RefEncodeRec(uint64_t start_chunk, ByteSpan data, bool is_root, const ChunkRanges& q, Bytes* res) {
  uint64_t nchunks = std::max<uint64_t>(1, ChunkCount(data.size()));
  bool nonempty = q.Intersects(start_chunk, start_chunk + nchunks);
  if (data.size() <= 1024) {
    if (nonempty) res->insert(res->end(), data.begin(), data.end());
    return ChunkCv(data, start_chunk, is_root);
  }
  uint64_t pow2 = std::bit_ceil(nchunks);
  int level = std::countr_zero(pow2) - 1;
  uint64_t mid = pow2 / 2;
  bool full = q.Covers(start_chunk, start_chunk + nchunks);
  bool emit_parent = nonempty && (!full || level >= 4);
  size_t slot = res->size();
  if (emit_parent) res->resize(res->size() + 64, 0xff);
  // An empty query emits nothing below (mirrors the empty l/r range slices).
  ChunkRanges sub = nonempty ? q : ChunkRanges();
  Blake3Hash l = RefEncodeRec(start_chunk, data.first(mid * 1024), false, sub, res);
  Blake3Hash r = RefEncodeRec(start_chunk + mid, data.subspan(mid * 1024), false, sub, res);
  if (emit_parent) {
    std::memcpy(res->data() + slot, l.bytes.data(), 32);
    std::memcpy(res->data() + slot + 32, r.bytes.data(), 32);
  }
  return ParentCv(l, r, is_root);
}

Bytes RefEncode(ByteSpan data, const ChunkRanges& ranges) {
  Bytes out;
  if (ranges.is_empty()) return out;
  out.resize(8);
  StoreU64LE(out.data(), data.size());
  RefEncodeRec(0, data, true, ranges.Normalize(data.size()), &out);
  return out;
}

const std::vector<uint64_t> kSizes = {0,         1,     1023,  1024,      1025,          2048, 3000,
                                      16383,     16384, 16385, 20 * 1024, 32768,         32769,
                                      100000,    (1 << 20) + 1};

std::vector<ChunkRanges> RangesFor(uint64_t size) {
  uint64_t chunks = ChunkCount(size);
  std::vector<ChunkRanges> v = {
      ChunkRanges::All(),
      ChunkRanges::LastChunk(),
      ChunkRanges::Range(0, 1),
      ChunkRanges::Range(chunks / 2, chunks / 2 + 3),
      ChunkRanges::Range(chunks > 2 ? chunks - 2 : 0, chunks + 5),  // past the end
      ChunkRanges::From(chunks + 100),
      ChunkRanges::Range(3, 5).Union(ChunkRanges::Range(17, 40)).Union(ChunkRanges::Range(70, 71)),
      ChunkRanges::Range(1, 2).Union(ChunkRanges::LastChunk()),
      ChunkRanges::Bytes(size / 3, size / 3 + 5000),
  };
  return v;
}

TEST(ChunkRanges, SetOperationsAndText) {
  auto r = ChunkRanges::Range(0, 4).Union(ChunkRanges::Range(10, 12)).Union(ChunkRanges::From(100));
  EXPECT_EQ(r.ToString(), "0..4,10..12,100..");
  auto p = ChunkRanges::Parse("10..12,0..4,100..,2..3");
  ASSERT_TRUE(p);
  EXPECT_EQ(*p, r);
  EXPECT_TRUE(r.Contains(3));
  EXPECT_FALSE(r.Contains(4));
  EXPECT_TRUE(r.Contains(UINT64_MAX));
  EXPECT_TRUE(r.Covers(10, 12));
  EXPECT_FALSE(r.Covers(9, 12));
  EXPECT_TRUE(r.Intersects(5, 11));
  EXPECT_FALSE(r.Intersects(4, 10));
  EXPECT_EQ(r.Intersect(ChunkRanges::Range(3, 101)).ToString(), "3..4,10..12,100..101");
  EXPECT_FALSE(ChunkRanges::Parse("5..3"));
  EXPECT_FALSE(ChunkRanges::Parse("..3"));
  EXPECT_FALSE(ChunkRanges::Parse("x..3"));
  EXPECT_TRUE(ChunkRanges::Parse("all")->is_all());
  EXPECT_EQ(ChunkRanges::Bytes(1, 1025).ToString(), "0..2");
  EXPECT_FALSE(ChunkRanges::FromBoundaries({3, 3}));
}

TEST(ChunkRanges, NormalizeFollowsBaoTreeTruncateRanges) {
  // The examples of bao-tree rec.rs truncate_ranges, size of 7 chunks.
  uint64_t size = 7 * 1024;
  auto n = [&](const char* s) { return ChunkRanges::Parse(s)->Normalize(size).ToString(); };
  EXPECT_EQ(n("0..6"), "0..6");
  EXPECT_EQ(n("0..7"), "0..");
  EXPECT_EQ(n("0..10,11..12"), "0..");
  EXPECT_EQ(n("0..6,7..10"), "0..");
  EXPECT_EQ(n("3..6,7..10"), "3..");
  EXPECT_EQ(n("0..5,7..10"), "0..5,6..");
  EXPECT_EQ(ChunkRanges::LastChunk().Normalize(size).ToString(), "6..");
  EXPECT_EQ(ChunkRanges::LastChunk().Normalize(0).ToString(), "0..");
}

TEST(Outboard, SizesAndPreOrderContent) {
  for (uint64_t size : kSizes) {
    Bytes data = RandomBytes(size, size);
    Bytes ob;
    Blake3Hash root = ComputeOutboard(data, &ob);
    EXPECT_EQ(root, Blake3(data));
    EXPECT_EQ(ob.size(), size <= 16384 ? 0u : ((size + 16383) / 16384 - 1) * 64) << size;
    if (!ob.empty()) EXPECT_EQ(OutboardRoot(ob), root);
    // A whole-blob stream carries exactly the outboard's pairs, in order.
    Bytes stream = *EncodeStream(data, ob, root, ChunkRanges::All());
    Bytes pairs;
    BaoIter it(size, ChunkRanges::All());
    BaoItem item;
    size_t off = 8;
    while (it.Next(&item)) {
      if (item.kind == BaoItem::Kind::kParent) pairs.insert(pairs.end(), stream.begin() + off, stream.begin() + off + 64);
      else EXPECT_LE(item.size, 16384u);
      off += item.size;
    }
    EXPECT_EQ(off, stream.size());
    EXPECT_EQ(pairs, ob) << size;
    EXPECT_EQ(stream.size(), 8 + size + ob.size());
  }
  // Two groups: size || (cv(g0) || cv(g1)) || g0 || g1.
  Bytes data = RandomBytes(20000, 1);
  Bytes ob;
  ComputeOutboard(data, &ob);
  ASSERT_EQ(ob.size(), 64u);
  EXPECT_EQ(ToHex(ByteSpan(ob).first(32)), SubtreeCv(ByteSpan(data).first(16384), 0, false).ToHex());
  EXPECT_EQ(ToHex(ByteSpan(ob).subspan(32)), SubtreeCv(ByteSpan(data).subspan(16384), 16, false).ToHex());
}

TEST(VerifiedStream, MatchesReferenceAndRoundTrips) {
  for (uint64_t size : kSizes) {
    Bytes data = RandomBytes(size, size + 1);
    Bytes ob;
    Blake3Hash root = ComputeOutboard(data, &ob);
    for (const ChunkRanges& ranges : RangesFor(size)) {
      SCOPED_TRACE("size " + std::to_string(size) + " ranges " + ranges.ToString());
      auto stream = EncodeStream(data, ob, root, ranges);
      ASSERT_TRUE(stream) << stream.error().ToString();
      EXPECT_EQ(*stream, RefEncode(data, ranges));
      EXPECT_EQ(stream->size(), EncodedSize(size, ranges));
      // Decode, feeding in odd-sized pieces.
      ChunkRanges norm = ranges.Normalize(size);
      uint64_t covered = 0;
      uint64_t next_off = 0;
      StreamDecoder dec(root, ranges, [&](uint64_t off, ByteSpan b) -> Result<void> {
        EXPECT_GE(off, next_off);
        next_off = off + b.size();
        EXPECT_EQ(0, std::memcmp(b.data(), data.data() + off, b.size()));
        for (uint64_t c = off / 1024; c < ChunkCount(off + b.size()); ++c) EXPECT_TRUE(norm.Contains(c) || norm.Intersects(c / 16 * 16, c / 16 * 16 + 16));
        covered += b.size();
        return Ok();
      });
      size_t pos = 0, step = 1;
      while (pos < stream->size()) {
        size_t k = std::min(step, stream->size() - pos);
        ASSERT_TRUE(dec.Feed(ByteSpan(*stream).subspan(pos, k)));
        pos += k;
        step = step * 3 + 1;
      }
      ASSERT_TRUE(dec.Finish());
      // Every requested chunk was delivered.
      for (uint64_t c = 0; c < ChunkCount(size); ++c)
        if (norm.Contains(c)) EXPECT_LT(c * 1024, next_off);
      bool wants_last = norm.Contains(ChunkCount(size) == 0 ? 0 : ChunkCount(size) - 1);
      EXPECT_EQ(dec.verified_size().has_value(), wants_last);
      if (wants_last) EXPECT_EQ(*dec.verified_size(), size);
    }
  }
}

TEST(VerifiedStream, WholeBlobDecodesToTheData) {
  for (uint64_t size : kSizes) {
    Bytes data = RandomBytes(size, size + 2);
    Bytes ob;
    Blake3Hash root = ComputeOutboard(data, &ob);
    Bytes stream = *EncodeStream(data, ob, root, ChunkRanges::All());
    auto back = DecodeStream(root, ChunkRanges::All(), stream);
    ASSERT_TRUE(back) << back.error().ToString();
    EXPECT_EQ(*back, data);
    // The last chunk alone proves the size.
    Bytes proof = *EncodeStream(data, ob, root, ChunkRanges::LastChunk());
    StreamDecoder dec(root, ChunkRanges::LastChunk(), nullptr);
    ASSERT_TRUE(dec.Feed(proof));
    ASSERT_TRUE(dec.Finish());
    ASSERT_TRUE(dec.verified_size());
    EXPECT_EQ(*dec.verified_size(), size);
  }
}

TEST(VerifiedStream, EmptyRangesGiveAnEmptyStream) {
  Bytes data = RandomBytes(5000, 3);
  Blake3Hash root = ComputeOutboard(data, nullptr);
  EXPECT_TRUE(EncodeStream(data, {}, root, ChunkRanges())->empty());
  StreamDecoder dec(root, ChunkRanges(), nullptr);
  EXPECT_TRUE(dec.Finish());
  uint8_t b = 0;
  EXPECT_EQ(dec.Feed(ByteSpan(&b, 1)).error().code(), ErrorCode::kCorruption);
}

void ExpectCorrupt(const Blake3Hash& root, const ChunkRanges& ranges, ByteSpan stream, const std::string& what) {
  StreamDecoder dec(root, ranges, [](uint64_t, ByteSpan) { return Ok(); });
  auto r = dec.Feed(stream);
  if (r) r = dec.Finish();
  ASSERT_FALSE(r) << what;
  EXPECT_EQ(r.error().code(), ErrorCode::kCorruption) << what << ": " << r.error().ToString();
}

TEST(VerifiedStream, EverySingleByteFlipOfASmallStreamIsDetected) {
  for (uint64_t size : {0ull, 1ull, 1500ull, 40000ull}) {
    Bytes data = RandomBytes(size, 9);
    Bytes ob;
    Blake3Hash root = ComputeOutboard(data, &ob);
    // The last chunk is included: without it the size header is never proven
    // (see SizeIsOnlyProvenByTheLastChunk), exactly as in bao.
    ChunkRanges ranges =
        ChunkRanges::Range(0, 1).Union(ChunkRanges::Range(20, 37)).Union(ChunkRanges::LastChunk());
    Bytes stream = *EncodeStream(data, ob, root, ranges);
    ASSERT_LT(stream.size(), 40000u);
    for (size_t i = 0; i < stream.size(); ++i) {
      Bytes bad = stream;
      bad[i] ^= static_cast<uint8_t>(1u << (i % 8));
      ExpectCorrupt(root, ranges, bad, "size " + std::to_string(size) + " flip at " + std::to_string(i));
    }
  }
}

TEST(VerifiedStream, SizeIsOnlyProvenByTheLastChunk) {
  Bytes data = RandomBytes(40000, 9);
  Bytes ob;
  Blake3Hash root = ComputeOutboard(data, &ob);
  ChunkRanges ranges = ChunkRanges::Range(0, 1).Union(ChunkRanges::Range(20, 37));
  Bytes stream = *EncodeStream(data, ob, root, ranges);
  stream[0] ^= 1;  // claims 40001 bytes: same tree shape for the requested chunks
  StreamDecoder dec(root, ranges, nullptr);
  ASSERT_TRUE(dec.Feed(stream));
  ASSERT_TRUE(dec.Finish());
  EXPECT_EQ(dec.claimed_size(), 40001u);
  EXPECT_FALSE(dec.verified_size().has_value());
}

TEST(VerifiedStream, RandomFlipsOfALargeStreamAndTruncationAreDetected) {
  uint64_t size = (1 << 20) + 1;
  Bytes data = RandomBytes(size, 11);
  Bytes ob;
  Blake3Hash root = ComputeOutboard(data, &ob);
  Bytes stream = *EncodeStream(data, ob, root, ChunkRanges::All());
  std::mt19937_64 rng(5);
  for (int t = 0; t < 60; ++t) {
    Bytes bad = stream;
    size_t i = rng() % bad.size();
    bad[i] ^= static_cast<uint8_t>(1 + rng() % 255);
    ExpectCorrupt(root, ChunkRanges::All(), bad, "flip at " + std::to_string(i));
  }
  for (size_t cut : {size_t{0}, size_t{5}, size_t{8}, size_t{8 + 64}, stream.size() / 2, stream.size() - 1}) {
    ExpectCorrupt(root, ChunkRanges::All(), ByteSpan(stream).first(cut), "cut at " + std::to_string(cut));
  }
  // Trailing garbage.
  Bytes longer = stream;
  longer.push_back(0);
  ExpectCorrupt(root, ChunkRanges::All(), longer, "trailing byte");
  // Wrong root.
  Blake3Hash other = root;
  other.bytes[0] ^= 1;
  ExpectCorrupt(other, ChunkRanges::All(), stream, "wrong root");
  // A failed decoder stays failed.
  StreamDecoder dec(other, ChunkRanges::All(), nullptr);
  EXPECT_FALSE(dec.Feed(stream));
  EXPECT_FALSE(dec.Feed(ByteSpan()));
}

TEST(VerifiedStream, SinkOnlySeesVerifiedData) {
  Bytes data = RandomBytes(100000, 12);
  Bytes ob;
  Blake3Hash root = ComputeOutboard(data, &ob);
  Bytes stream = *EncodeStream(data, ob, root, ChunkRanges::All());
  stream[stream.size() - 10] ^= 1;  // in the last group
  uint64_t delivered = 0;
  StreamDecoder dec(root, ChunkRanges::All(), [&](uint64_t off, ByteSpan b) {
    EXPECT_EQ(0, std::memcmp(b.data(), data.data() + off, b.size()));
    delivered += b.size();
    return Ok();
  });
  EXPECT_FALSE(dec.Feed(stream));
  EXPECT_EQ(delivered, 6u * 16384);
}

TEST(StreamEncoder, DetectsCorruptStoreAndPullsInSmallPieces) {
  Bytes data = RandomBytes(70000, 13);
  Bytes ob;
  Blake3Hash root = ComputeOutboard(data, &ob);
  auto enc = StreamEncoder::Create(data, ob, root, ChunkRanges::All());
  ASSERT_TRUE(enc);
  Bytes out;
  uint8_t buf[100];
  for (;;) {
    auto n = (*enc)->Read(buf);
    ASSERT_TRUE(n);
    if (*n == 0) break;
    out.insert(out.end(), buf, buf + *n);
  }
  EXPECT_TRUE((*enc)->done());
  EXPECT_EQ(out, *EncodeStream(data, ob, root, ChunkRanges::All()));
  Bytes bad_ob = ob;
  bad_ob[70] ^= 1;
  EXPECT_EQ(EncodeStream(data, bad_ob, root, ChunkRanges::All()).error().code(), ErrorCode::kCorruption);
  Bytes bad_data = data;
  bad_data[50000] ^= 1;
  EXPECT_EQ(EncodeStream(bad_data, ob, root, ChunkRanges::Range(48, 49)).error().code(), ErrorCode::kCorruption);
  EXPECT_EQ(StreamEncoder::Create(data, ByteSpan(ob).first(64), root, ChunkRanges::All()).error().code(),
            ErrorCode::kInvalidArgument);
}

TEST(StreamDecoder, HugeClaimedSizeNeitherAllocatesNorCrashes) {
  Bytes data = RandomBytes(3000, 14);
  Blake3Hash root = Blake3(data);
  Bytes stream(8 + 64, 0);
  StoreU64LE(stream.data(), UINT64_MAX);
  ExpectCorrupt(root, ChunkRanges::All(), stream, "size u64 max");
  ExpectCorrupt(root, ChunkRanges::LastChunk(), stream, "size u64 max, last chunk");
  StreamDecoder dec(root, ChunkRanges::All(), nullptr, 1 << 20);
  EXPECT_EQ(dec.Feed(stream).error().code(), ErrorCode::kResourceExhausted);
}

}  // namespace
}  // namespace tenzro::blob
