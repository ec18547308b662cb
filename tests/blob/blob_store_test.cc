#include <gtest/gtest.h>

#include <dirent.h>
#include <unistd.h>
#include <sys/stat.h>

#include <random>
#include <thread>

#include "blob/bao_tree.h"
#include "blob/blob_store.h"
#include "blob/blob_uri.h"
#include "core/file.h"
#include "testutil/testutil.h"

namespace tenzro::blob {
namespace {

Bytes RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Bytes b(n);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> v;
  DIR* d = opendir(dir.c_str());
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') v.push_back(e->d_name);
  closedir(d);
  std::sort(v.begin(), v.end());
  return v;
}

BlobStoreOptions NoGrace() {
  BlobStoreOptions o;
  o.stale_age = std::chrono::seconds(0);
  return o;
}

TEST(BlobUri, ParseFormatAndParams) {
  Blake3Hash h = Blake3(ByteSpan());
  std::string s = FormatBlobUri(h);
  EXPECT_EQ(s, "tenzro://blob/af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262");
  auto u = ParseBlobUri(s + "?node=abc%20d&addr=127.0.0.1:9000&flag");
  ASSERT_TRUE(u) << u.error().ToString();
  EXPECT_EQ(u->hash, h);
  EXPECT_EQ(u->Param("node"), "abc d");
  EXPECT_EQ(u->Param("addr"), "127.0.0.1:9000");
  EXPECT_EQ(u->Param("flag"), "");
  EXPECT_EQ(u->params.size(), 3u);
  EXPECT_EQ(ParseBlobUri(u->ToString())->params, u->params);
  EXPECT_FALSE(ParseBlobUri("tenzro://blob/../../etc/passwd"));
  EXPECT_FALSE(ParseBlobUri("http://blob/" + h.ToHex()));
  EXPECT_FALSE(ParseBlobUri(s.substr(0, s.size() - 1)));
  EXPECT_FALSE(ParseBlobUri(s + "?a=%zz"));
  EXPECT_EQ(*ParseHashOrUri(h.ToHex()), h);
  EXPECT_FALSE(ParseHashOrUri("../" + h.ToHex().substr(3)));
}

TEST(BlobStore, PutGetListVerifyRemove) {
  testing::TempDir dir;
  auto store = BlobStore::Open(dir.Join("blobs"));
  ASSERT_TRUE(store) << store.error().ToString();
  std::vector<BlobInfo> infos;
  for (size_t size : {0ul, 1ul, 16384ul, 16385ul, 100000ul}) {
    Bytes data = RandomBytes(size, size);
    auto info = (*store)->Put(data);
    ASSERT_TRUE(info) << info.error().ToString();
    EXPECT_EQ(info->hash, Blake3(data));
    EXPECT_EQ(info->size, size);
    EXPECT_TRUE((*store)->Has(info->hash));
    auto b = (*store)->Get(info->hash);
    ASSERT_TRUE(b) << b.error().ToString();
    EXPECT_TRUE(std::equal(b->bytes().begin(), b->bytes().end(), data.begin(), data.end()));
    EXPECT_EQ(b->outboard_bytes().size(), OutboardSize(size));
    EXPECT_TRUE((*store)->Verify(info->hash));
    EXPECT_TRUE((*store)->Put(data));  // idempotent
    infos.push_back(*info);
  }
  auto list = (*store)->List();
  ASSERT_TRUE(list);
  ASSERT_EQ(list->size(), 5u);
  EXPECT_TRUE(std::is_sorted(list->begin(), list->end(), [](auto& a, auto& b) { return a.hash < b.hash; }));
  ASSERT_TRUE((*store)->Remove(infos[4].hash));
  EXPECT_FALSE((*store)->Has(infos[4].hash));
  EXPECT_EQ((*store)->Remove(infos[4].hash).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ((*store)->Get(infos[4].hash).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ((*store)->Verify(infos[4].hash).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ((*store)->List()->size(), 4u);
  // Only data and outboard files remain.
  for (const std::string& n : Names(dir.Join("blobs")))
    EXPECT_TRUE(n.ends_with(".data") || n.ends_with(".obao4")) << n;
}

// A symbolic link planted under a blob's name (pointing at a secret, or at a
// genuine blob elsewhere) is neither listed, nor reported present, nor
// served; a world-writable store directory is refused outright.
TEST(BlobStore, PlantedSymlinksAreNotServedAndAWorldWritableDirIsRefused) {
  testing::TempDir dir;
  auto store = BlobStore::Open(dir.Join("blobs"));
  ASSERT_TRUE(store) << store.error().ToString();
  const Bytes secret = RandomBytes(100, 7);
  ASSERT_TRUE(WriteFileAtomic(dir.Join("secret"), ByteSpan(secret)));
  const Blake3Hash h = Blake3(secret);
  ASSERT_EQ(::symlink(dir.Join("secret").c_str(), (*store)->DataPath(h).c_str()), 0);
  EXPECT_FALSE((*store)->Has(h));
  auto got = (*store)->Get(h);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code(), ErrorCode::kPermissionDenied) << got.error().ToString();
  EXPECT_EQ((*store)->Encode(h, ChunkRanges::All()).error().code(), ErrorCode::kPermissionDenied);
  EXPECT_TRUE((*store)->List()->empty());
  // A genuine blob whose outboard was swapped for a link is refused too.
  const Bytes big = RandomBytes(40000, 8);
  auto info = (*store)->Put(big);
  ASSERT_TRUE(info);
  const std::string ob = (*store)->OutboardPath(info->hash);
  ASSERT_EQ(::rename(ob.c_str(), dir.Join("ob").c_str()), 0);
  ASSERT_EQ(::symlink(dir.Join("ob").c_str(), ob.c_str()), 0);
  EXPECT_EQ((*store)->Get(info->hash).error().code(), ErrorCode::kPermissionDenied);

  ASSERT_EQ(::chmod(dir.Join("blobs").c_str(), 0777), 0);
  auto open = BlobStore::Open(dir.Join("blobs"));
  ASSERT_FALSE(open);
  EXPECT_EQ(open.error().code(), ErrorCode::kPermissionDenied);
  EXPECT_NE(open.error().message().find("chmod o-w"), std::string::npos) << open.error().ToString();
  ASSERT_EQ(::chmod(dir.Join("blobs").c_str(), 0775), 0);  // group-writable: the owner's choice
  EXPECT_TRUE(BlobStore::Open(dir.Join("blobs")));
}

TEST(BlobStore, VerifyDetectsCorruptDataAndOutboard) {
  testing::TempDir dir;
  auto store = *BlobStore::Open(dir.Join("blobs"));
  Bytes data = RandomBytes(50000, 3);
  BlobInfo info = *store->Put(data);
  Bytes ob = testing::ReadAll(store->OutboardPath(info.hash));
  ob[3] ^= 1;
  testing::WriteAll(store->OutboardPath(info.hash), ob);
  auto r = store->Verify(info.hash);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kCorruption);
  EXPECT_NE(r.error().message().find(".obao4"), std::string::npos);
  // Serving a corrupt blob fails instead of sending bad pairs.
  auto enc = store->Encode(info.hash, ChunkRanges::All());
  ASSERT_TRUE(enc);
  Bytes buf(1 << 20);
  EXPECT_EQ((*enc)->Read(buf).error().code(), ErrorCode::kCorruption);
  ob[3] ^= 1;
  testing::WriteAll(store->OutboardPath(info.hash), ob);
  data[49999] ^= 1;
  testing::WriteAll(store->DataPath(info.hash), data);
  r = store->Verify(info.hash);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kCorruption);
  EXPECT_NE(r.error().message().find(".data"), std::string::npos);
}

TEST(BlobStore, PutFile) {
  testing::TempDir dir;
  auto store = *BlobStore::Open(dir.Join("blobs"));
  Bytes data = RandomBytes(200000, 4);
  testing::WriteAll(dir.Join("in.bin"), data);
  auto info = store->PutFile(dir.Join("in.bin"));
  ASSERT_TRUE(info) << info.error().ToString();
  EXPECT_EQ(info->hash, Blake3(data));
  EXPECT_TRUE(store->Verify(info->hash));
  EXPECT_EQ(store->PutFile(dir.Join("missing")).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(store->List()->size(), 1u);
}

TEST(BlobStore, StreamingImportCommitsOnlyVerifiedWholeBlobs) {
  testing::TempDir dir;
  auto src = *BlobStore::Open(dir.Join("src"));
  auto dst = *BlobStore::Open(dir.Join("dst"));
  for (size_t size : {0ul, 1000ul, 16384ul, 300000ul}) {
    Bytes data = RandomBytes(size, size + 5);
    BlobInfo info = *src->Put(data);
    auto enc = *src->Encode(info.hash, ChunkRanges::All());
    Bytes stream(enc->total_size());
    ASSERT_EQ(*enc->Read(stream), stream.size());
    // Good import, in pieces.
    {
      auto imp = dst->BeginImport(info.hash);
      ASSERT_TRUE(imp);
      for (size_t off = 0; off < stream.size(); off += 7777)
        ASSERT_TRUE((*imp)->Feed(ByteSpan(stream).subspan(off, std::min<size_t>(7777, stream.size() - off))));
      auto done = (*imp)->Finish();
      ASSERT_TRUE(done) << done.error().ToString();
      EXPECT_EQ(done->size, size);
      EXPECT_TRUE(dst->Verify(info.hash));
      ASSERT_TRUE(dst->Remove(info.hash));
    }
    // Corrupt stream: nothing visible, no temp left.
    if (size > 0) {
      Bytes bad = stream;
      bad[bad.size() - 1] ^= 1;
      auto imp = *dst->BeginImport(info.hash);
      auto r = imp->Feed(bad);
      ASSERT_FALSE(r);
      EXPECT_EQ(r.error().code(), ErrorCode::kCorruption);
      EXPECT_FALSE(imp->Finish());
      EXPECT_FALSE(dst->Has(info.hash));
    }
    // Truncated stream, import abandoned.
    {
      auto imp = *dst->BeginImport(info.hash);
      ASSERT_TRUE(imp->Feed(ByteSpan(stream).first(stream.size() / 2)));
      EXPECT_FALSE(dst->Has(info.hash));
      auto r = imp->Finish();
      ASSERT_FALSE(r);
      EXPECT_EQ(r.error().code(), ErrorCode::kCorruption);
    }
    {
      auto imp = *dst->BeginImport(info.hash);
      ASSERT_TRUE(imp->Feed(ByteSpan(stream).first(stream.size() / 2)));
    }  // destroyed unfinished
    EXPECT_FALSE(dst->Has(info.hash));
    EXPECT_TRUE(Names(dir.Join("dst")).empty()) << Names(dir.Join("dst")).size();
  }
}

TEST(BlobStore, LeftoversAreIgnoredAndCleanedOnOpen) {
  testing::TempDir dir;
  std::string d = dir.Join("blobs");
  Bytes data = RandomBytes(40000, 6);
  Blake3Hash h = Blake3(data);
  {
    auto store = *BlobStore::Open(d);
    ASSERT_TRUE(store->Put(RandomBytes(10, 1)));
  }
  // Simulate crashes: a temp data file, a staging file, an orphan outboard.
  testing::WriteAll(d + "/" + h.ToHex() + ".data.tmp.0123456789abcdef", ByteSpan(data).first(1000));
  testing::WriteAll(d + "/staging-00000001", data);
  Bytes ob;
  ComputeOutboard(data, &ob);
  testing::WriteAll(d + "/" + h.ToHex() + ".obao4", ob);
  testing::WriteAll(d + "/README.txt", ByteSpan(data).first(3));  // foreign: left alone
  {
    auto store = *BlobStore::Open(d);  // default grace: young leftovers stay, but are invisible
    EXPECT_FALSE(store->Has(h));
    EXPECT_EQ(store->List()->size(), 1u);
    EXPECT_EQ(store->cleaned_on_open(), 0);
  }
  auto store = *BlobStore::Open(d, NoGrace());
  EXPECT_EQ(store->cleaned_on_open(), 3);
  EXPECT_EQ(Names(d).size(), 2u);  // the small blob's data + README.txt
  EXPECT_EQ(store->List()->size(), 1u);
}

TEST(BlobStore, ConcurrentWritersAndReaders) {
  testing::TempDir dir;
  auto store = *BlobStore::Open(dir.Join("blobs"));
  std::vector<Bytes> blobs;
  for (int i = 0; i < 6; ++i) blobs.push_back(RandomBytes(20000 + i * 7000, 100 + i));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round)
        for (size_t i = 0; i < blobs.size(); ++i) {
          const Bytes& b = blobs[(i + t) % blobs.size()];
          auto info = store->Put(b);
          if (!info) { ++failures; continue; }
          auto got = store->Get(info->hash);
          if (!got || !std::equal(got->bytes().begin(), got->bytes().end(), b.begin(), b.end())) ++failures;
        }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(store->List()->size(), blobs.size());
  for (const auto& b : blobs) EXPECT_TRUE(store->Verify(Blake3(b)));
}

}  // namespace
}  // namespace tenzro::blob
