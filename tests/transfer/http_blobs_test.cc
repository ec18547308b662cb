// The HTTP blob fetch's total deadline (transfer/http_blobs.h
// FetchOptions::total_timeout) against a real loopback server that drips a
// genuine blob's verified stream: 16 KiB every 50 ms, so no read is ever
// idle long enough for the per-read timeout and every byte verifies, yet the
// 8 MiB blob would take 25 s. The fetch ends at the deadline, nothing
// reaches the store.
#include "transfer/http_blobs.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <thread>

#include "blob/encoder.h"
#include "core/thread_pool.h"
#include "net/server.h"
#include "testutil/testutil.h"

namespace tenzro::transfer {
namespace {

using namespace std::chrono_literals;
using tenzro::testing::TempDir;

TEST(HttpBlobsTest, ADrippingPeerCostsTheTotalDeadline) {
  TempDir tmp;
  auto source = blob::BlobStore::Open(tmp.Join("source"));
  ASSERT_TRUE(source);
  Bytes data(8u << 20);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
  auto put = (*source)->Put(ByteSpan(data));
  ASSERT_TRUE(put);
  const blob::Blake3Hash hash = put->hash;

  boost::asio::io_context ioc;
  ThreadPool producers(2);
  net::Router router;
  router.Add("GET", "/blobs/", [&](const net::Request&) -> net::Response {
    auto enc = (*source)->Encode(hash, blob::ChunkRanges::All());
    if (!enc) return net::Response{};
    std::shared_ptr<blob::StreamEncoder> encoder(std::move(*enc));
    const uint64_t total = encoder->total_size();
    return net::Response::Stream(
        "application/octet-stream",
        [encoder](std::span<uint8_t> buf) -> Result<size_t> {
          std::this_thread::sleep_for(50ms);
          return encoder->Read(buf.first(std::min<size_t>(buf.size(), 16u << 10)));
        },
        total);
  });
  net::ServerOptions so;
  so.producer_pool = &producers;
  net::HttpServer server(ioc, &router, so);
  ASSERT_TRUE(server.Listen({"127.0.0.1", 0}));
  std::thread loop([&] { ioc.run(); });

  auto store = blob::BlobStore::Open(tmp.Join("blobs"));
  ASSERT_TRUE(store);
  FetchOptions o;
  o.idle_timeout_ms = 2000;
  o.total_timeout = 500ms;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = FetchBlobHttp(**store, hash, server.endpoint(), o);
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kDeadlineExceeded) << r.error().ToString();
  EXPECT_NE(r.error().message().find("total deadline"), std::string::npos) << r.error().ToString();
  EXPECT_GE(took, 500ms);
  EXPECT_LT(took, 1500ms);
  EXPECT_FALSE((*store)->Has(hash));

  boost::asio::post(ioc, [&] { server.Stop(); });
  loop.join();
  producers.Shutdown();
}

}  // namespace
}  // namespace tenzro::transfer
