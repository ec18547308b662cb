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
