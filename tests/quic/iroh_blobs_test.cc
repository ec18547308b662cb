// iroh-blobs on loopback: request encoding (golden bytes from the iroh-blobs
// 0.35 format), our provider and getter for every size/range case.
#include <gtest/gtest.h>

#include <cstring>

#include "blob/blob_store.h"
#include "core/file.h"
#include "identity/identity.h"
#include "quic/iroh_blobs.h"
#include "quic/quic_client.h"
#include "testutil/testutil.h"

namespace tenzro::quic {
namespace {

blob::Blake3Hash SomeHash() {
  blob::Blake3Hash h;
  for (int i = 0; i < 32; ++i) h.bytes[i] = static_cast<uint8_t>(i);
  return h;
}

Bytes Concat(std::initializer_list<ByteSpan> parts) {
  Bytes out;
  for (ByteSpan p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST(IrohBlobsRequest, GoldenBytes) {
  blob::Blake3Hash h = SomeHash();
  const uint8_t kind[] = {0x00};
  // GetRequest::single(hash): ranges [(0, [0]), (1, [])].
  const uint8_t all[] = {0x02, 0x00, 0x01, 0x00, 0x01, 0x00};
  EXPECT_EQ(EncodeGetRequest(h, blob::ChunkRanges::All()), Concat({kind, h.span(), all}));
  // GetRequest::last_chunk(hash): [(0, [u64::MAX]), (1, [])].
  const uint8_t last[] = {0x02, 0x00, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x01, 0x00};
  EXPECT_EQ(EncodeGetRequest(h, blob::ChunkRanges::LastChunk()), Concat({kind, h.span(), last}));
  // Chunks 3..5 and 200..: widths 3, 2, 195.
  auto r = blob::ChunkRanges::Parse("3..5,200..").value();
  const uint8_t mixed[] = {0x02, 0x00, 0x03, 0x03, 0x02, 0xc3, 0x01, 0x01, 0x00};
  EXPECT_EQ(EncodeGetRequest(h, r), Concat({kind, h.span(), mixed}));
}

TEST(IrohBlobsRequest, DecodeRoundTripAndRejects) {
  blob::Blake3Hash h = SomeHash();
  for (const char* text : {"all", "last", "0..1", "3..5,200..", "7..9,11..13,1000..1001"}) {
    auto ranges = blob::ChunkRanges::Parse(text).value();
    auto back = DecodeGetRequest(EncodeGetRequest(h, ranges));
    ASSERT_TRUE(back) << text << ": " << back.error().ToString();
    EXPECT_EQ(back->hash, h);
    EXPECT_EQ(back->ranges, ranges) << text;
  }
  Bytes good = EncodeGetRequest(h, blob::ChunkRanges::All());
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

Bytes Pattern(size_t n) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>((i * 7919) >> 3);
  return b;
}

class IrohBlobsLoopback : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::shared_ptr<blob::BlobStore>(blob::BlobStore::Open(dir_.Join("provider")).value());
    server_ = QuicClient::Start(server_id_).value();
    server_->RunOnLoop([&](Endpoint& ep) { ep.AddProtocol(kIrohBlobsAlpn, MakeBlobsProvider(ep.io(), store_, &pool_)); });
    client_ = QuicClient::Start(identity::Identity::Generate()).value();
  }
  PeerAddr Provider() { return {server_id_.node_id(), server_->endpoint().local_endpoint()}; }

  testing::TempDir dir_;
  ThreadPool pool_{2, "blobs"};
  std::shared_ptr<blob::BlobStore> store_;
  identity::Identity server_id_ = identity::Identity::Generate();
  std::unique_ptr<QuicClient> server_, client_;
};

// The sizes of the issue: whole blob, a middle range and the last chunk.
TEST_F(IrohBlobsLoopback, EverySizeWholeMiddleAndLastChunk) {
  auto sink_store = blob::BlobStore::Open(dir_.Join("getter")).value();
  for (uint64_t size : {0ull, 1ull, 1023ull, 1024ull, 16384ull, 16385ull, 100000ull, (1ull << 20) + 1}) {
    Bytes data = Pattern(size);
    blob::BlobInfo info = store_->Put(data).value();
    // Whole blob into a store (BlobImport verifies).
    auto got = FetchBlobQuic(*client_, Provider(), *sink_store, info.hash);
    ASSERT_TRUE(got) << size << ": " << got.error().ToString();
    EXPECT_EQ(got->size, size);
    EXPECT_EQ(sink_store->Get(info.hash).value().bytes().size(), size);
    auto stored = sink_store->Get(info.hash).value();
    EXPECT_TRUE(std::equal(data.begin(), data.end(), stored.bytes().begin()));
    // A middle range and the last chunk.
    uint64_t chunks = blob::ChunkCount(size);
    std::vector<blob::ChunkRanges> cases = {blob::ChunkRanges::LastChunk()};
    if (chunks > 2) cases.push_back(blob::ChunkRanges::Range(chunks / 3, chunks / 3 + 2));
    for (const auto& ranges : cases) {
      // Verified data arrives in whole 16 KiB chunk groups covering the request.
      uint64_t first = UINT64_MAX, end = 0;
      auto vsize = FetchRangesQuic(*client_, Provider(), info.hash, ranges, [&](uint64_t off, ByteSpan b) -> Result<void> {
        EXPECT_LE(off + b.size(), size);
        EXPECT_EQ(std::memcmp(b.data(), data.data() + off, b.size()), 0) << "size " << size << " offset " << off;
        first = std::min(first, off);
        end = std::max(end, off + b.size());
        return Ok();
      });
      ASSERT_TRUE(vsize) << size << " " << ranges.ToString() << ": " << vsize.error().ToString();
      if (ranges == blob::ChunkRanges::LastChunk()) {
        ASSERT_TRUE(vsize->has_value()) << size;
        EXPECT_EQ(**vsize, size);  // the size is proven by the last chunk
        if (size > 0) {
          EXPECT_EQ(end, size);
        }
      } else {
        uint64_t want_begin = ranges.boundaries()[0] * 1024, want_end = ranges.boundaries()[1] * 1024;
        EXPECT_LE(first, want_begin) << size;
        EXPECT_GE(end, std::min(want_end, size)) << size;
      }
    }
  }
}

TEST_F(IrohBlobsLoopback, MissingBlobIsNotFound) {
  auto r = FetchRangesQuic(*client_, Provider(), SomeHash(), blob::ChunkRanges::All(), nullptr);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kNotFound) << r.error().ToString();
}

TEST_F(IrohBlobsLoopback, CorruptStoreIsNeverSentAsGoodData) {
  Bytes data = Pattern(100000);
  blob::BlobInfo info = store_->Put(data).value();
  // Flip a byte in the stored data behind the store's back.
  std::string path = store_->DataPath(info.hash);
  Bytes disk = testing::ReadAll(path);
  disk[50000] ^= 0xff;
  ::unlink(path.c_str());
  testing::WriteAll(path, disk);
  auto r = FetchRangesQuic(*client_, Provider(), info.hash, blob::ChunkRanges::All(), nullptr);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().code(), ErrorCode::kNotFound) << r.error().ToString();
  // The provider still serves other blobs.
  Bytes other = Pattern(5000);
  blob::BlobInfo oi = store_->Put(other).value();
  auto ok = FetchRangesQuic(*client_, Provider(), oi.hash, blob::ChunkRanges::All(), nullptr);
  ASSERT_TRUE(ok) << ok.error().ToString();
}

}  // namespace
}  // namespace tenzro::quic
