// The provider loop (transfer/provider_fetch.h) over real loopback HTTP
// servers: an honest provider, one that lies (flipped bytes: the stream
// does not verify against the hash), one that does not have the blob, and a
// closed port. The first verified source wins, failures are reported in
// order, attempts are bounded, nothing unverified reaches the store; ranking
// probes run in parallel and only up to the bound.
#include "transfer/provider_fetch.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <random>
#include <thread>

#include "core/file.h"
#include "blob/encoder.h"
#include "net/server.h"
#include "testutil/testutil.h"
#include "transfer/http_blobs.h"
#include "transfer/http_fetcher.h"

namespace tenzro::transfer {
namespace {

using tenzro::testing::TempDir;
using namespace std::chrono_literals;

Bytes RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  Bytes b(n);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

// A loopback HTTP server whose only route is GET /blobs/ over `store`. A
// liar (`instead` set) answers every hash with the stream of blob `instead`
// (same size, other bytes): well-formed, but it cannot verify.
class Provider {
 public:
  explicit Provider(std::shared_ptr<blob::BlobStore> store, std::optional<blob::Blake3Hash> instead = std::nullopt)
      : store_(std::move(store)) {
    if (instead) {
      router_.Add("GET", "/blobs/", [store = store_, h = *instead](const net::Request&) -> net::Response {
        auto enc = store->Encode(h, blob::ChunkRanges::All());
        if (!enc) return net::Response{};
        std::shared_ptr<blob::StreamEncoder> encoder(std::move(*enc));
        const uint64_t total = encoder->total_size();
        return net::Response::Stream(
            "application/octet-stream", [encoder](std::span<uint8_t> buf) { return encoder->Read(buf); }, total);
      });
    } else {
      AddBlobRoutes(router_, store_);
    }
    server_ = std::make_unique<net::HttpServer>(ioc_, &router_, net::ServerOptions{});
    EXPECT_TRUE(server_->Listen({"127.0.0.1", 0}));
    loop_ = std::thread([this] { ioc_.run(); });
  }
  ~Provider() {
    boost::asio::post(ioc_, [this] { server_->Stop(); });
    loop_.join();
  }
  BlobSource source() const { return {"http", server_->endpoint().Url(), ""}; }

 private:
  std::shared_ptr<blob::BlobStore> store_;
  boost::asio::io_context ioc_;
  net::Router router_;
  std::unique_ptr<net::HttpServer> server_;
  std::thread loop_;
};

std::shared_ptr<blob::BlobStore> OpenStore(const TempDir& tmp, const std::string& name) {
  auto s = blob::BlobStore::Open(tmp.Join(name));
  EXPECT_TRUE(s) << s.error().ToString();
  return std::shared_ptr<blob::BlobStore>(std::move(*s));
}

struct Swarmlet {
  TempDir tmp;
  Bytes data = RandomBytes(200 * 1024 + 3, 1);
  blob::Blake3Hash hash;
  std::shared_ptr<blob::BlobStore> honest_store = OpenStore(tmp, "honest");
  std::shared_ptr<blob::BlobStore> liar_store = OpenStore(tmp, "liar");
  std::shared_ptr<blob::BlobStore> empty_store = OpenStore(tmp, "empty");
  std::shared_ptr<blob::BlobStore> mine = OpenStore(tmp, "mine");
  std::unique_ptr<Provider> honest, liar, empty;
  BlobSource closed{"http", "http://127.0.0.1:1", ""};
  FetcherSet fetchers;

  Swarmlet() {
    auto put = honest_store->Put(ByteSpan(data));
    EXPECT_TRUE(put);
    hash = put->hash;
    Bytes other = data;
    other[other.size() / 2] ^= 0x40;
    auto fake = liar_store->Put(ByteSpan(other));
    EXPECT_TRUE(fake);
    honest = std::make_unique<Provider>(honest_store);
    liar = std::make_unique<Provider>(liar_store, fake->hash);
    empty = std::make_unique<Provider>(empty_store);
    fetchers.Add(std::make_shared<HttpBlobFetcher>());
  }
};

TEST(ProviderFetchTest, FirstVerifiedSourceWinsAfterLiarsAndMissing) {
  Swarmlet s;
  const std::vector<BlobSource> sources = {s.closed, s.empty->source(), s.liar->source(), s.honest->source()};
  auto r = FetchFromSources(*s.mine, s.hash, sources, s.fetchers);
  ASSERT_TRUE(r) << r.error().ToString();
  ASSERT_TRUE(r->from);
  EXPECT_EQ(r->from->address, s.honest->source().address);
  EXPECT_EQ(r->info.size, s.data.size());
  ASSERT_EQ(r->failed.size(), 3u);
  EXPECT_EQ(r->failed[0].error.code(), ErrorCode::kUnavailable);
  EXPECT_EQ(r->failed[1].error.code(), ErrorCode::kNotFound);
  EXPECT_EQ(r->failed[2].error.code(), ErrorCode::kCorruption);
  auto back = ReadFile(s.mine->DataPath(s.hash));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, s.data);
  // Present now: no source is asked again.
  auto again = FetchFromSources(*s.mine, s.hash, {s.closed}, s.fetchers);
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->from);
}

TEST(ProviderFetchTest, OnlyLiarsLeaveNothingAndAttemptsAreBounded) {
  Swarmlet s;
  std::vector<BlobSource> sources(20, s.liar->source());
  sources.push_back(s.honest->source());  // past the bound
  SourcesFetchOptions o;
  o.max_attempts = 3;
  auto r = FetchFromSources(*s.mine, s.hash, sources, s.fetchers, o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kCorruption);
  EXPECT_NE(r.error().message().find("3 tried of 21"), std::string::npos) << r.error().ToString();
  EXPECT_FALSE(s.mine->Has(s.hash));
  // No source at all, and a kind with no fetcher.
  EXPECT_EQ(FetchFromSources(*s.mine, s.hash, {}, s.fetchers).error().code(), ErrorCode::kNotFound);
  auto quic = FetchFromSources(*s.mine, s.hash, {{"quic", "127.0.0.1:9", "ab"}}, s.fetchers);
  EXPECT_EQ(quic.error().code(), ErrorCode::kUnsupported);
}

TEST(ProviderFetchTest, RankingProbesInParallelUpToTheBound) {
  std::vector<BlobSource> sources;
  for (int i = 0; i < 40; ++i) sources.push_back({"http", "h" + std::to_string(i), ""});
  std::atomic<int> probes{0}, in_flight{0}, max_in_flight{0};
  // Each probe takes 200 ms; h3 is fastest, odd ones never answer.
  auto probe = [&](const BlobSource& src, std::chrono::milliseconds timeout) -> std::optional<double> {
    EXPECT_EQ(timeout, 1000ms);
    ++probes;
    const int now = ++in_flight;
    int seen = max_in_flight.load();
    while (now > seen && !max_in_flight.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(200ms);
    --in_flight;
    const int i = std::stoi(src.address.substr(1));
    if (i % 2 == 1) return std::nullopt;
    return i == 4 ? 1.0 : 10.0 + i;
  };
  RankOptions o;
  o.max_probes = 8;
  const auto t0 = std::chrono::steady_clock::now();
  auto ranked = RankSources(sources, probe, o);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(probes.load(), 8);
  EXPECT_EQ(max_in_flight.load(), 8);  // all at once
  EXPECT_LT(took, 8 * 200ms);          // not one after another
  ASSERT_EQ(ranked.size(), sources.size());
  // Answered (fastest first), then unanswered in their order, then the unprobed.
  const std::vector<std::string> head = {"h4", "h0", "h2", "h6", "h1", "h3", "h5", "h7", "h8", "h9"};
  for (size_t i = 0; i < head.size(); ++i) EXPECT_EQ(ranked[i].address, head[i]) << i;
  EXPECT_EQ(ranked.back().address, "h39");
}

}  // namespace
}  // namespace tenzro::transfer
