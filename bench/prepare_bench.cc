// Expert preparation and blob transfer, against the machine's own limits
// measured in the same run:
//   BM_PlainRead          memcpy of one expert's slab bytes out of the mmap'ed
//                         checkpoint (the floor for a byte-range copy)
//   BM_SliceCopy          prepare one q4_k_m expert from the Q4_K_M checkpoint:
//                         slab views + mini-GGUF encode (no requantization)
//   BM_SliceRequant/<t>   the same from the BF16 checkpoint, requantized to t
//   BM_PublishBlob        + BLAKE3, outboard and an atomic, fsync'ed blob write
//   BM_HttpFetchVerified  GET /blobs/<hash> over loopback, every group verified
//   BM_HttpMemcpyRef      memcpy of the same blob bytes (reference)
#include <benchmark/benchmark.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include <boost/asio/io_context.hpp>

#include "blob/blob_store.h"
#include "format/checkpoint.h"
#include "net/router.h"
#include "net/server.h"
#include "transfer/http_blobs.h"
#include "format/expert_gguf.h"
#include "prepare/slicer.h"

namespace {

using namespace tenzro;

std::string Data(const char* name) { return std::string(TENZRO_TEST_DATA) + "/moe/" + name; }

std::unique_ptr<format::Checkpoint> OpenCk(const char* name) {
  auto ck = format::Checkpoint::Open(Data(name));
  if (!ck) std::abort();
  return std::move(*ck);
}

uint64_t SlabBytes(const format::Checkpoint& ck, int expert) {
  uint64_t n = 0;
  for (auto p : format::kProjections) n += ck.Expert(0, expert, p)->bytes.size();
  return n;
}

Bytes EncodeOne(const format::Checkpoint& ck, int expert, quant::GgmlType gate_up, quant::GgmlType down) {
  std::array<prepare::SlicedMatrix, 3> parts;
  format::ExpertTensors t;
  for (auto p : format::kProjections) {
    int i = static_cast<int>(p);
    auto slab = ck.Expert(0, expert, p);
    parts[i] = *prepare::ConvertSlab(*slab, p == format::Projection::kDown ? down : gate_up, 1, "bench");
    t.proj[i] = parts[i].matrix;
  }
  return *format::EncodeExpertGguf({ck.architecture(), "bench", 0, expert, "bench"}, t);
}

void BM_PlainRead(benchmark::State& state) {
  auto ck = OpenCk("tiny-qwen35moe-Q4_K_M.gguf");
  Bytes out(SlabBytes(*ck, 0));
  int e = 0;
  for (auto _ : state) {
    size_t off = 0;
    for (auto p : format::kProjections) {
      auto s = ck->Expert(0, e, p)->bytes;
      std::memcpy(out.data() + off, s.data(), s.size());
      off += s.size();
    }
    benchmark::DoNotOptimize(out.data());
    e = (e + 1) % 8;
  }
  state.SetBytesProcessed(state.iterations() * out.size());
}
BENCHMARK(BM_PlainRead);

void BM_SliceCopy(benchmark::State& state) {
  auto ck = OpenCk("tiny-qwen35moe-Q4_K_M.gguf");
  int e = 0;
  for (auto _ : state) {
    Bytes img = EncodeOne(*ck, e, quant::GgmlType::Q4_K, quant::GgmlType::Q4_K);
    benchmark::DoNotOptimize(img.data());
    e = (e + 1) % 8;
  }
  state.SetBytesProcessed(state.iterations() * SlabBytes(*ck, 0));
}
BENCHMARK(BM_SliceCopy);

void BM_SliceRequant(benchmark::State& state) {
  auto ck = OpenCk("tiny-qwen35moe-BF16.gguf");
  auto t = static_cast<quant::GgmlType>(state.range(0));
  int e = 0;
  for (auto _ : state) {
    Bytes img = EncodeOne(*ck, e, t, t);
    benchmark::DoNotOptimize(img.data());
    e = (e + 1) % 8;
  }
  // Throughput in f32-equivalent input values (4 bytes each), as the quant bench.
  state.SetBytesProcessed(state.iterations() * SlabBytes(*ck, 0) * 2);
  state.SetLabel(std::string(quant::TypeName(t)) + " (bytes = f32 values x 4)");
}
BENCHMARK(BM_SliceRequant)->Arg(static_cast<int>(quant::GgmlType::Q4_K))->Arg(static_cast<int>(quant::GgmlType::Q8_0));

std::string TempDir() {
  char tmpl[] = "/tmp/tenzro-bench-XXXXXX";
  return mkdtemp(tmpl);
}

void BM_PublishBlob(benchmark::State& state) {
  auto ck = OpenCk("tiny-qwen35moe-Q4_K_M.gguf");
  std::string dir = TempDir();
  auto store = blob::BlobStore::Open(dir);
  int e = 0;
  uint64_t bytes = 0;
  for (auto _ : state) {
    Bytes img = EncodeOne(*ck, e, quant::GgmlType::Q4_K, quant::GgmlType::Q4_K);
    img.push_back(static_cast<uint8_t>(state.iterations()));  // a new blob each time
    auto info = (*store)->Put(img);
    if (!info) state.SkipWithError(info.error().ToString().c_str());
    bytes += img.size();
    e = (e + 1) % 8;
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_PublishBlob)->UseRealTime();

constexpr size_t kBlobBytes = 64u << 20;

struct FetchFixture {
  std::string dir = TempDir();
  std::shared_ptr<blob::BlobStore> store;
  blob::Blake3Hash hash;
  Bytes data;
  boost::asio::io_context ioc;
  net::Router router;
  std::unique_ptr<net::HttpServer> server;
  std::thread loop;
  FetchFixture() {
    data.resize(kBlobBytes);
    std::mt19937_64 rng(7);
    for (size_t i = 0; i < data.size(); i += 8) {
      uint64_t v = rng();
      std::memcpy(&data[i], &v, 8);
    }
    store = std::move(*blob::BlobStore::Open(dir));
    hash = store->Put(data)->hash;
    transfer::AddBlobRoutes(router, store);
    server = std::make_unique<net::HttpServer>(ioc, &router, net::ServerOptions{});
    (void)server->Listen({"127.0.0.1", 0});
    loop = std::thread([this] { ioc.run_for(std::chrono::minutes(10)); });
  }
  ~FetchFixture() {
    ioc.stop();
    loop.join();
    std::filesystem::remove_all(dir);
  }
};

void BM_HttpFetchVerified(benchmark::State& state) {
  FetchFixture f;
  for (auto _ : state) {
    uint64_t got = 0;
    auto r = transfer::FetchRangesHttp(f.hash, blob::ChunkRanges::All(), f.server->endpoint(),
                                   [&](uint64_t, ByteSpan b) -> Result<void> {
                                     got += b.size();
                                     return Ok();
                                   });
    if (!r || got != kBlobBytes) state.SkipWithError("fetch failed");
  }
  state.SetBytesProcessed(state.iterations() * kBlobBytes);
}
BENCHMARK(BM_HttpFetchVerified)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_HttpMemcpyRef(benchmark::State& state) {
  Bytes a(kBlobBytes, 1), b(kBlobBytes);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), a.size());
    benchmark::DoNotOptimize(b.data());
  }
  state.SetBytesProcessed(state.iterations() * kBlobBytes);
}
BENCHMARK(BM_HttpMemcpyRef)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
