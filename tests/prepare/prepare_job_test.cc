// Prepared experts against ggml's golden slice hashes (tests/data/moe/
// tiny-qwen35moe.slices.json): byte-range copies from the Q4_K_M checkpoint,
// requantization from BF16 and from Q4_K_M, dense f32.
#include "prepare/prepare_job.h"

#include <gtest/gtest.h>

#include <fstream>

#include "blob/blob_uri.h"
#include "format/expert_gguf.h"
#include "testutil/testutil.h"

namespace tenzro::prepare {
namespace {

using nlohmann::json;

json Slices() {
  std::ifstream f(testing::DataPath("moe/tiny-qwen35moe.slices.json"));
  return json::parse(f);
}

const json& SliceEntry(const json& slices, int layer, int expert) {
  for (const auto& e : slices["experts"])
    if (e["layer"] == layer && e["expert"] == expert) return e;
  throw std::runtime_error("no slice entry");
}

// Runs a prepare of every expert of `layer` and checks each projection's
// tensor bytes against slices.json via `key(entry_for_projection)`.
struct Expected {
  std::string sha;
  bool copy;
};

void CheckPrepared(const std::string& ckpt, const std::string& quant, int layer,
                   const std::function<Expected(const json&)>& expected) {
  testing::TempDir dir;
  auto store = blob::BlobStore::Open(dir.Join("blobs"));
  ASSERT_TRUE(store) << store.error().ToString();
  PrepareRequest req;
  req.model_id = "tiny-qwen35moe";
  req.checkpoint = testing::DataPath("moe/" + ckpt);
  req.layer = layer;
  req.quant = quant;
  int calls = 0;
  auto result = RunPrepare(req, **store, [&](int done, int total, const std::string&) {
    ++calls;
    EXPECT_EQ(total, 8);
    EXPECT_EQ(done, calls);
  });
  ASSERT_TRUE(result) << result.error().ToString();
  EXPECT_EQ(calls, 8);
  json slices = Slices();
  ASSERT_EQ((*result)["experts"].size(), 8u);
  for (const json& ex : (*result)["experts"]) {
    int e = ex["expert"];
    auto hash = blob::ParseHashOrUri(ex["uri"].get<std::string>());
    ASSERT_TRUE(hash);
    auto b = (*store)->Get(*hash);
    ASSERT_TRUE(b) << b.error().ToString();
    EXPECT_EQ(b->size, ex["bytes"].get<uint64_t>());
    auto dec = format::DecodeExpertGguf(b->bytes(), b->data, "blob");
    ASSERT_TRUE(dec) << dec.error().ToString();
    EXPECT_EQ(dec->kind, format::kKindExpert);
    EXPECT_EQ(dec->id.layer, layer);
    EXPECT_EQ(dec->id.expert, e);
    EXPECT_EQ(dec->id.architecture, "qwen35moe");
    const json& entry = SliceEntry(slices, layer, e);
    for (format::Projection p : format::kProjections) {
      std::string pname(format::ProjectionName(p));
      const format::Matrix& m = dec->expert.proj[static_cast<int>(p)];
      Expected want = expected(entry[pname]);
      EXPECT_EQ(testing::Sha256Hex(m.bytes), want.sha)
          << ckpt << " " << quant << " layer " << layer << " expert " << e << " " << pname;
      EXPECT_EQ(ex["projections"][pname]["source"]["byte_range_copy"].get<bool>(), want.copy) << pname;
    }
  }
}

TEST(Prepare, Q4KMFromQ4KMCheckpointIsAByteRangeCopy) {
  for (int layer : {0, 1})
    CheckPrepared("tiny-qwen35moe-Q4_K_M.gguf", "q4_k_m", layer,
                  [](const json& p) { return Expected{p["q4km_slice"], true}; });
}

TEST(Prepare, RequantizedFromBf16MatchesGgml) {
  for (const char* t : {"f32", "f16", "q8_0", "q4_K", "q5_K", "q6_K"})
    for (int layer : {0, 1})
      CheckPrepared("tiny-qwen35moe-BF16.gguf", t, layer,
                    [t](const json& p) { return Expected{p["from_bf16"][t], false}; });
  // bf16 from the BF16 checkpoint is a pure copy.
  CheckPrepared("tiny-qwen35moe-BF16.gguf", "bf16", 0,
                [](const json& p) { return Expected{p["from_bf16"]["bf16"], true}; });
}

// from_q4km.T is ggml's dequantize-then-quantize. Where the slab is already
// in T (q4_K slabs at q4_k, layer 1's Q6_K down slabs at q6_k) tenzro
// publishes the stored bytes instead (a byte-range copy, bit-faithful to the
// checkpoint), so those projections must equal q4km_slice.
TEST(Prepare, RequantizedFromQ4KMMatchesGgml) {
  for (const char* t : {"f32", "f16", "bf16", "q8_0", "q4_K", "q5_K", "q6_K"})
    for (int layer : {0, 1})
      CheckPrepared("tiny-qwen35moe-Q4_K_M.gguf", t, layer, [t](const json& p) {
        if (p["q4km_type"] == t) return Expected{p["q4km_slice"], true};
        return Expected{p["from_q4km"][t], false};
      });
}

TEST(Prepare, GateBlobCarriesRouterAndSharedExpert) {
  testing::TempDir dir;
  auto store = blob::BlobStore::Open(dir.Join("blobs"));
  ASSERT_TRUE(store);
  PrepareRequest req;
  req.model_id = "tiny-qwen35moe";
  req.checkpoint = testing::DataPath("moe/tiny-qwen35moe-Q4_K_M.gguf");
  req.layer = 1;
  req.experts = "3";
  req.gate = true;
  req.quant = "q4_k_m";
  auto result = RunPrepare(req, **store, nullptr);
  ASSERT_TRUE(result) << result.error().ToString();
  ASSERT_TRUE(result->contains("gate"));
  auto hash = blob::ParseHashOrUri((*result)["gate"]["uri"].get<std::string>());
  ASSERT_TRUE(hash);
  auto b = (*store)->Get(*hash);
  ASSERT_TRUE(b);
  auto dec = format::DecodeExpertGguf(b->bytes(), b->data, "gate");
  ASSERT_TRUE(dec) << dec.error().ToString();
  EXPECT_EQ(dec->kind, format::kKindGate);
  EXPECT_EQ(dec->gate.router.row_len, 256);
  EXPECT_EQ(dec->gate.router.rows, 8);
  EXPECT_EQ(dec->gate.n_expert_used, 2);
  ASSERT_TRUE(dec->gate.shared.has_value());
  EXPECT_EQ(dec->gate.shared->n_ff(), 512);
  EXPECT_TRUE(dec->gate.shared_gate.has_value());
}

TEST(Prepare, BadRequestsFailCleanly) {
  testing::TempDir dir;
  auto store = blob::BlobStore::Open(dir.Join("blobs"));
  ASSERT_TRUE(store);
  PrepareRequest req;
  req.model_id = "tiny-qwen35moe";
  req.checkpoint = testing::DataPath("moe/tiny-qwen35moe-BF16.gguf");
  req.layer = 5;
  auto r = RunPrepare(req, **store, nullptr);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("layer 5 out of range"), std::string::npos) << r.error().message();
  req.layer = 0;
  req.experts = "1,9";
  r = RunPrepare(req, **store, nullptr);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("expert 9 out of range"), std::string::npos) << r.error().message();
  req.checkpoint = dir.Join("missing.gguf");
  req.experts = "1";
  r = RunPrepare(req, **store, nullptr);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kNotFound);
  auto listed = (*store)->List();
  ASSERT_TRUE(listed);
  EXPECT_TRUE(listed->empty()) << "no blob may be published by a failed job";
}

TEST(ExpertList, Parses) {
  EXPECT_EQ(*ParseExpertList("1,2,5", 8), (std::vector<int>{1, 2, 5}));
  EXPECT_EQ(*ParseExpertList("0-3,2,7", 8), (std::vector<int>{0, 1, 2, 3, 7}));
  EXPECT_EQ(ParseExpertList("all", 3)->size(), 3u);
  EXPECT_FALSE(ParseExpertList("", 8));
  EXPECT_FALSE(ParseExpertList("1,,2", 8));
  EXPECT_FALSE(ParseExpertList("3-1", 8));
  EXPECT_FALSE(ParseExpertList("8", 8));
  EXPECT_FALSE(ParseExpertList("x", 8));
  EXPECT_FALSE(ParseExpertList("-1", 8));
}

}  // namespace
}  // namespace tenzro::prepare
