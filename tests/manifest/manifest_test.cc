// The signed model manifest: sealing and opening, tampering and limits, the
// builder over real prepare results of the tiny checkpoint, and the trust
// store's checks.
#include "manifest/manifest.h"

#include <gtest/gtest.h>

#include <map>

#include "blob/blake3.h"
#include "blob/blob_store.h"
#include "catalog/builtin_shapes.h"
#include "catalog/shape_json.h"
#include "identity/envelope.h"
#include "manifest/manifest_build.h"
#include "manifest/manifest_trust.h"
#include "prepare/prepare_job.h"
#include "testutil/testutil.h"

namespace tenzro::manifest {
namespace {

using nlohmann::json;

std::string H(char c) { return std::string(64, c); }

Manifest Sample() {
  Manifest m;
  m.model = "tiny";
  m.experts = {{1, 3, "q4_K/q4_K/q6_K", H('b'), 100}, {0, 2, "q8_0/q8_0/q8_0", H('a'), 50},
               {1, 3, "q8_0/q8_0/q8_0", H('c'), 200}, {0, 2, "q8_0/q8_0/q8_0", H('a'), 50}};
  m.gates = {{1, H('d'), 10}, {0, H('e'), 11}};
  m.spines = {{H('f'), 999, "none"}};
  return m;
}

ByteSpan Span(const std::string& s) { return ByteSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size()); }

TEST(ManifestTest, SealOpenRoundTripSortedAndDeduplicated) {
  auto id = identity::Identity::Generate();
  std::string bytes = SealManifest(Sample(), id);
  auto m = OpenManifest(bytes);
  ASSERT_TRUE(m) << m.error().ToString();
  EXPECT_EQ(m->publisher, id.node_id());
  EXPECT_EQ(m->model, "tiny");
  ASSERT_EQ(m->experts.size(), 3u);  // the duplicate is gone
  EXPECT_EQ(m->experts[0].layer, 0);
  EXPECT_TRUE(m->ListsExpert(1, 3, H('b')));
  EXPECT_TRUE(m->ListsExpert(1, 3, H('c')));
  EXPECT_TRUE(m->ListsExpert(0, 2, H('a')));
  EXPECT_FALSE(m->ListsExpert(0, 3, H('a')));
  EXPECT_FALSE(m->ListsExpert(1, 3, H('a')));
  EXPECT_EQ(m->ExpertEntries(1, 3).size(), 2u);
  EXPECT_TRUE(m->ListsGate(0, H('e')));
  EXPECT_FALSE(m->ListsGate(1, H('e')));
  EXPECT_TRUE(m->ListsSpine(H('f')));
  EXPECT_FALSE(m->ListsSpine(H('a')));
  // Same content, same bytes (the order of the input does not matter).
  Manifest shuffled = Sample();
  std::reverse(shuffled.experts.begin(), shuffled.experts.end());
  EXPECT_EQ(SealManifest(shuffled, id), bytes);
}

TEST(ManifestTest, TheShapeTravelsWithTheManifest) {
  auto id = identity::Identity::Generate();
  Manifest m = Sample();
  catalog::ModelShape s = *catalog::BuiltinShape("qwen3.5-122b-a10b");
  s.id = "tiny";
  m.shape = s;
  auto opened = OpenManifest(SealManifest(m, id));
  ASSERT_TRUE(opened) << opened.error().ToString();
  ASSERT_TRUE(opened->shape.has_value());
  EXPECT_EQ(catalog::ShapeToJson(*opened->shape), catalog::ShapeToJson(s));
  // A shape of another model is refused.
  m.shape->id = "other";
  EXPECT_EQ(OpenManifest(SealManifest(m, id)).error().code(), ErrorCode::kCorruption);
}

TEST(ManifestTest, TamperingForgeryAndOtherRecordKindsAreRefused) {
  auto id = identity::Identity::Generate();
  std::string bytes = SealManifest(Sample(), id);
  // Swap one expert's hash inside the signed body.
  std::string tampered = bytes;
  size_t at = tampered.find(H('b'));
  ASSERT_NE(at, std::string::npos);
  tampered.replace(at, 64, H('9'));
  auto r = OpenManifest(tampered);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kPermissionDenied) << r.error().ToString();
  // A body signed by another key than its node_id names.
  auto mallory = identity::Identity::Generate();
  Manifest m = Sample();
  m.publisher = id.node_id();
  m.Normalize();
  std::string forged = identity::SealEnvelope(kManifestDomain, ManifestBody(m), mallory);
  EXPECT_EQ(OpenManifest(forged).error().code(), ErrorCode::kPermissionDenied);
  // The same body signed for another record kind (domain separation).
  std::string other = identity::SealEnvelope(std::string_view("tenzro-declaration-v1\0", 22), ManifestBody(m), id);
  EXPECT_EQ(OpenManifest(other).error().code(), ErrorCode::kPermissionDenied);
}

TEST(ManifestTest, MalformedBodiesAreCorruptionNamingTheField) {
  auto id = identity::Identity::Generate();
  auto seal = [&](json body) {
    body["node_id"] = id.node_id();
    return identity::SealEnvelope(kManifestDomain, body.dump(), id);
  };
  json good = json::parse(ManifestBody(Sample()));
  struct Case {
    const char* what;
    std::function<void(json&)> edit;
    ErrorCode code;
  };
  std::vector<Case> cases = {
      {"version", [](json& b) { b["v"] = 2; }, ErrorCode::kUnsupported},
      {"model", [](json& b) { b.erase("model"); }, ErrorCode::kCorruption},
      {"short hash", [](json& b) { b["experts"][0][3] = "abc"; }, ErrorCode::kCorruption},
      {"upper-case hash", [](json& b) { b["experts"][0][3] = std::string(64, 'A'); }, ErrorCode::kCorruption},
      {"negative layer", [](json& b) { b["experts"][0][0] = -1; }, ErrorCode::kCorruption},
      {"huge expert", [](json& b) { b["experts"][0][1] = 1 << 20; }, ErrorCode::kCorruption},
      {"entry width", [](json& b) { b["gates"][0] = json::array({0, H('a')}); }, ErrorCode::kCorruption},
      {"experts type", [](json& b) { b["experts"] = "x"; }, ErrorCode::kCorruption},
      {"float bytes", [](json& b) { b["spines"][0][1] = 1.5; }, ErrorCode::kCorruption},
  };
  for (const auto& c : cases) {
    json b = good;
    c.edit(b);
    auto r = OpenManifest(seal(b));
    ASSERT_FALSE(r) << c.what;
    EXPECT_EQ(r.error().code(), c.code) << c.what << ": " << r.error().ToString();
  }
  // An expert outside the shape it carries.
  json b = good;
  catalog::ModelShape s = *catalog::BuiltinShape("qwen3.5-122b-a10b");
  s.id = "tiny";
  b["shape"] = catalog::ShapeToJson(s);
  b["experts"][0][1] = 4000;
  auto r = OpenManifest(seal(b));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("does not exist in the shape"), std::string::npos) << r.error().ToString();
  // Over the size limit: refused before parsing.
  std::string big(kMaxManifestBytes + 1, ' ');
  EXPECT_EQ(OpenManifest(big).error().code(), ErrorCode::kCorruption);
  EXPECT_FALSE(OpenManifest(""));
  EXPECT_FALSE(OpenManifest("{\"body\":\"{}\",\"sig\":\"00\",\"v\":1}"));
}

// The builder over real prepare results: every expert and the gate of the
// tiny checkpoint's layer 0, in two formats, and the manifest's hashes are
// the blobs' own BLAKE3.
TEST(ManifestBuildTest, FromRealPrepareResults) {
  testing::TempDir dir;
  auto store = blob::BlobStore::Open(dir.Join("blobs"));
  ASSERT_TRUE(store) << store.error().ToString();
  std::vector<json> results;
  for (const char* quant : {"q4_k_m", "q8_0"}) {
    prepare::PrepareRequest req;
    req.model_id = "tiny-qwen35moe";
    req.checkpoint = testing::DataPath("moe/tiny-qwen35moe-BF16.gguf");
    req.layer = 0;
    req.gate = true;
    req.quant = quant;
    auto r = prepare::RunPrepare(req, **store, nullptr);
    ASSERT_TRUE(r) << r.error().ToString();
    results.push_back(*r);
  }
  results.push_back(json{{"model_id", "other-model"}, {"hash", H('a')}, {"bytes", 1}});  // skipped
  auto m = ManifestFromPrepareResults("tiny-qwen35moe", results, std::nullopt);
  ASSERT_TRUE(m) << m.error().ToString();
  EXPECT_EQ(m->experts.size(), 16u);  // 8 experts x 2 formats
  EXPECT_EQ(m->gates.size(), 2u);     // the gate requantized two ways
  EXPECT_TRUE(m->spines.empty());
  for (const auto& e : m->experts) {
    auto h = blob::Blake3Hash::FromHex(e.blob);
    ASSERT_TRUE(h);
    auto b = (*store)->Get(*h);
    ASSERT_TRUE(b) << e.blob;
    EXPECT_EQ(blob::Blake3(b->bytes()).ToHex(), e.blob);
    EXPECT_EQ(b->size, e.bytes);
    EXPECT_TRUE(e.formats == "q8_0/q8_0/q8_0" || e.formats.find("q4_K") != std::string::npos) << e.formats;
  }
  // Round trip through sealing keeps everything.
  auto id = identity::Identity::Generate();
  auto opened = OpenManifest(SealManifest(*m, id));
  ASSERT_TRUE(opened) << opened.error().ToString();
  EXPECT_EQ(opened->experts, m->experts);
  EXPECT_EQ(opened->gates, m->gates);
  // A malformed result is an error naming the field.
  std::vector<json> bad = {json{{"model_id", "tiny-qwen35moe"}, {"layer", 0}, {"experts", json::array({json{{"expert", 1}}})}}};
  auto e = ManifestFromPrepareResults("tiny-qwen35moe", bad, std::nullopt);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message().find("hash"), std::string::npos);
}

struct Fixture {
  identity::Identity publisher = identity::Identity::Generate();
  std::string bytes = SealManifest(Sample(), publisher);
  blob::Blake3Hash hash = blob::Blake3(Span(bytes));
};

TEST(TrustStoreTest, OpenModeAllowsEverything) {
  TrustStore t({});
  EXPECT_FALSE(t.enabled());
  EXPECT_TRUE(t.CheckExpert("any", 0, 0, H('1')));
  EXPECT_TRUE(t.AllowsExpert("any", 0, 0, H('1')));
  EXPECT_TRUE(t.CheckGate("any", 0, H('1')));
  EXPECT_TRUE(t.CheckSpine("any", H('1')));
  EXPECT_EQ(t.Status()["mode"], "open");
}

TEST(TrustStoreTest, ATrustedHashIsFetchedLazilyAndRetriedAndDecidesEveryCheck) {
  Fixture f;
  int fetches = 0;
  bool reachable = false;
  auto now = std::chrono::steady_clock::time_point{};
  TrustOptions o;
  o.manifests = {f.hash};
  o.fetch = [&](const blob::Blake3Hash& h) -> Result<Bytes> {
    ++fetches;
    EXPECT_EQ(h, f.hash);
    if (!reachable) return Error::NotFound("no provider");
    return Bytes(f.bytes.begin(), f.bytes.end());
  };
  o.now = [&] { return now; };
  TrustStore t(o);
  ASSERT_TRUE(t.enabled());
  // Not reachable yet: everything of the model is refused, with the reason.
  auto r = t.CheckExpert("tiny", 1, 3, H('b'));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kPermissionDenied);
  EXPECT_NE(r.error().message().find("not loaded yet"), std::string::npos) << r.error().ToString();
  EXPECT_EQ(fetches, 1);
  EXPECT_FALSE(t.CheckExpert("tiny", 1, 3, H('b')));  // within the retry interval: no new fetch
  EXPECT_EQ(fetches, 1);
  reachable = true;
  now += std::chrono::seconds(11);
  EXPECT_TRUE(t.CheckExpert("tiny", 1, 3, H('b')));
  EXPECT_EQ(fetches, 2);
  EXPECT_TRUE(t.CheckExpert("tiny", 1, 3, H('c')));
  EXPECT_EQ(fetches, 2);  // loaded once
  auto bad = t.CheckExpert("tiny", 1, 3, H('a'));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("is not in the trusted manifest of model 'tiny'"), std::string::npos)
      << bad.error().ToString();
  EXPECT_TRUE(t.CheckGate("tiny", 0, H('e')));
  EXPECT_FALSE(t.CheckGate("tiny", 1, H('e')));
  EXPECT_TRUE(t.CheckSpine("tiny", H('f')));
  EXPECT_FALSE(t.CheckSpine("tiny", H('e')));
  EXPECT_TRUE(t.AllowsExpert("tiny", 0, 2, H('a')));
  EXPECT_FALSE(t.AllowsExpert("tiny", 0, 2, H('b')));
  EXPECT_FALSE(t.AllowsExpert("other", 0, 2, H('a')));  // a model without a manifest: nothing
  EXPECT_FALSE(t.CheckExpert("other", 0, 2, H('a')));
  json s = t.Status();
  EXPECT_EQ(s["mode"], "manifest");
  ASSERT_EQ(s["manifests"].size(), 1u);
  EXPECT_EQ(s["manifests"][0]["hash"], f.hash.ToHex());
  EXPECT_EQ(s["manifests"][0]["publisher"], f.publisher.node_id());
  EXPECT_TRUE(s["pending"].empty());
}

TEST(TrustStoreTest, PublisherKeysAndUntrustedManifests) {
  Fixture f;
  TrustOptions o;
  o.publishers = {f.publisher.node_id()};
  TrustStore t(o);
  EXPECT_TRUE(t.Adopt(f.hash, Span(f.bytes)));
  EXPECT_TRUE(t.CheckExpert("tiny", 0, 2, H('a')));
  // Bytes that are not the hash claimed.
  blob::Blake3Hash wrong = f.hash;
  wrong.bytes[0] ^= 1;
  EXPECT_EQ(t.Adopt(wrong, Span(f.bytes)).error().code(), ErrorCode::kCorruption);
  // Another publisher's manifest (validly signed) is not trusted.
  auto stranger = identity::Identity::Generate();
  Manifest m = Sample();
  m.model = "tiny";
  m.experts.push_back({0, 2, "q4_K/q4_K/q6_K", H('7'), 1});
  std::string other = SealManifest(m, stranger);
  auto r = t.Adopt(blob::Blake3(Span(other)), Span(other));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kPermissionDenied);
  EXPECT_FALSE(t.CheckExpert("tiny", 0, 2, H('7')));
}

}  // namespace
}  // namespace tenzro::manifest
