// Loading experts and gates: safetensors (HF names, bare names, F32/F16/BF16,
// shape errors) and the mini-GGUF that prepare-experts publishes.
#include "runtime/expert_loader.h"

#include <gtest/gtest.h>

#include <random>

#include "blob/blob_store.h"
#include "blob/blob_uri.h"
#include "cache_fixture.h"
#include "core/file.h"
#include "format/safetensors_reader.h"
#include "prepare/prepare_job.h"
#include "quant/fp16.h"
#include "testutil/testutil.h"

namespace tenzro::runtime {
namespace {

using format::StDtype;
using tenzro::testing::TempDir;

constexpr int64_t kEmbd = 64, kFf = 96;

// n floats encoded as `dt` (F32, F16 or BF16), little-endian.
Bytes Encode(const std::vector<float>& v, StDtype dt) {
  Bytes out;
  for (float f : v) {
    if (dt == StDtype::kF32) {
      uint8_t b[4];
      std::memcpy(b, &f, 4);
      out.insert(out.end(), b, b + 4);
    } else {
      uint16_t h = dt == StDtype::kF16 ? quant::Fp32ToFp16(f) : quant::Fp32ToBf16(f);
      out.push_back(h & 0xFF);
      out.push_back(h >> 8);
    }
  }
  return out;
}

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 0.05f);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

struct StExpert {
  std::vector<float> gate = Random(kFf * kEmbd, 1), up = Random(kFf * kEmbd, 2), down = Random(kEmbd * kFf, 3);
  Bytes g, u, d;

  // Writes the expert with the given names / dtype / shapes.
  std::string Write(const TempDir& tmp, const std::string& file, const std::string& prefix, bool bare, StDtype dt,
                    bool transpose_down = false) {
    g = Encode(gate, dt);
    u = Encode(up, dt);
    d = Encode(down, dt);
    format::SafetensorsWriter w;
    auto name = [&](const char* p) { return bare ? std::string(p) : prefix + p + "_proj.weight"; };
    EXPECT_TRUE(w.AddTensor(name("gate"), dt, {kFf, kEmbd}, ByteSpan(g)));
    EXPECT_TRUE(w.AddTensor(name("up"), dt, {kFf, kEmbd}, ByteSpan(u)));
    std::vector<int64_t> dshape = transpose_down ? std::vector<int64_t>{kFf, kEmbd} : std::vector<int64_t>{kEmbd, kFf};
    EXPECT_TRUE(w.AddTensor(name("down"), dt, dshape, ByteSpan(d)));
    const std::string path = tmp.Join(file);
    EXPECT_TRUE(w.Write(path));
    return path;
  }

  // The reference: the same bytes as borrowed matrices.
  ExpertWeights Reference(quant::GgmlType t) const {
    ExpertWeights w;
    w.gate = *WeightMatrix::Borrow(t, kEmbd, kFf, ByteSpan(g));
    w.up = *WeightMatrix::Borrow(t, kEmbd, kFf, ByteSpan(u));
    w.down = *WeightMatrix::Borrow(t, kFf, kEmbd, ByteSpan(d));
    return w;
  }
};

void ExpectSameOutput(const ExpertWeights& a, const ExpertWeights& b) {
  const int n_tok = 3;
  std::vector<float> x = Random(n_tok * kEmbd, 9), ya(n_tok * kEmbd), yb(n_tok * kEmbd);
  ASSERT_TRUE(ExpertFfn(a, x.data(), n_tok, ya.data()));
  ASSERT_TRUE(ExpertFfn(b, x.data(), n_tok, yb.data()));
  EXPECT_EQ(0, std::memcmp(ya.data(), yb.data(), ya.size() * 4));
}

TEST(ExpertLoaderTest, SafetensorsWithHfNamesAndEveryFloatType) {
  TempDir tmp;
  struct Case {
    StDtype dt;
    quant::GgmlType t;
    const char* formats;
  };
  for (Case c : {Case{StDtype::kF32, quant::GgmlType::F32, "f32/f32/f32"},
                 Case{StDtype::kF16, quant::GgmlType::F16, "f16/f16/f16"},
                 Case{StDtype::kBF16, quant::GgmlType::BF16, "bf16/bf16/bf16"}}) {
    SCOPED_TRACE(c.formats);
    StExpert ex;
    const std::string path = ex.Write(tmp, "e.safetensors", "model.layers.3.mlp.experts.5.", false, c.dt);
    auto img = ExpertGgufFromSafetensors(path, {"qwen3moe", "m", 3, 5, ""});
    ASSERT_TRUE(img) << img.error().ToString();
    auto w = DecodeWarmExpert(testing::Shared(std::move(*img)), "converted");
    ASSERT_TRUE(w) << w.error().ToString();
    EXPECT_EQ((*w)->info.formats(), c.formats);
    EXPECT_EQ((*w)->info.n_embd, kEmbd);
    EXPECT_EQ((*w)->info.n_ff, kFf);
    EXPECT_EQ((*w)->info.id.layer, 3);
    EXPECT_EQ((*w)->info.id.expert, 5);
    ExpectSameOutput((*w)->weights, ex.Reference(c.t));
  }
}

TEST(ExpertLoaderTest, SafetensorsWithBareNames) {
  TempDir tmp;
  StExpert ex;
  const std::string path = ex.Write(tmp, "bare.safetensors", "", true, StDtype::kBF16);
  auto img = ExpertGgufFromSafetensors(path, {"", "m", 0, 1, ""});
  ASSERT_TRUE(img) << img.error().ToString();
  auto w = DecodeWarmExpert(testing::Shared(std::move(*img)), "bare");
  ASSERT_TRUE(w) << w.error().ToString();
  ExpectSameOutput((*w)->weights, ex.Reference(quant::GgmlType::BF16));
}

TEST(ExpertLoaderTest, SafetensorsErrorsNameTheProblem) {
  TempDir tmp;
  StExpert ex;
  // down given as [n_ff, n_embd] (transposed).
  const std::string bad = ex.Write(tmp, "t.safetensors", "mlp.", false, StDtype::kF32, /*transpose_down=*/true);
  auto r = ExpertGgufFromSafetensors(bad, {"", "m", 0, 0, ""});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("down"), std::string::npos) << r.error().message();
  // A missing projection.
  format::SafetensorsWriter w;
  ASSERT_TRUE(w.AddTensor("gate_proj.weight", StDtype::kF32, {kFf, kEmbd}, ByteSpan(ex.g)));
  ASSERT_TRUE(w.Write(tmp.Join("m.safetensors")));
  auto m = ExpertGgufFromSafetensors(tmp.Join("m.safetensors"), {"", "m", 0, 0, ""});
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(m.error().message().find("up_proj.weight"), std::string::npos) << m.error().message();
  // Two experts in one file: ambiguous.
  format::SafetensorsWriter two;
  for (const char* e : {"experts.0.", "experts.1."}) {
    ASSERT_TRUE(two.AddTensor(std::string(e) + "gate_proj.weight", StDtype::kF32, {kFf, kEmbd}, ByteSpan(ex.g)));
    ASSERT_TRUE(two.AddTensor(std::string(e) + "up_proj.weight", StDtype::kF32, {kFf, kEmbd}, ByteSpan(ex.u)));
    ASSERT_TRUE(two.AddTensor(std::string(e) + "down_proj.weight", StDtype::kF32, {kEmbd, kFf}, ByteSpan(ex.d)));
  }
  ASSERT_TRUE(two.Write(tmp.Join("two.safetensors")));
  auto a = ExpertGgufFromSafetensors(tmp.Join("two.safetensors"), {"", "m", 0, 0, ""});
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code(), ErrorCode::kInvalidArgument);
  // Not a safetensors file at all.
  ASSERT_TRUE(WriteFileAtomic(tmp.Join("junk"), std::string_view("\x01\x02")));
  EXPECT_FALSE(ExpertGgufFromSafetensors(tmp.Join("junk"), {"", "m", 0, 0, ""}));
}

TEST(ExpertLoaderTest, GateFromSafetensorsWithSharedExpert) {
  TempDir tmp;
  const int n_expert = 8;
  Bytes router = Encode(Random(n_expert * kEmbd, 5), StDtype::kF32);
  StExpert sh;
  sh.Write(tmp, "unused.safetensors", "", true, StDtype::kBF16);
  Bytes sgate = Encode(Random(kEmbd, 6), StDtype::kBF16);
  format::SafetensorsWriter w;
  ASSERT_TRUE(w.AddTensor("model.layers.0.mlp.gate.weight", StDtype::kF32, {n_expert, kEmbd}, ByteSpan(router)));
  ASSERT_TRUE(w.AddTensor("model.layers.0.mlp.shared_expert.gate_proj.weight", StDtype::kBF16, {kFf, kEmbd},
                          ByteSpan(sh.g)));
  ASSERT_TRUE(w.AddTensor("model.layers.0.mlp.shared_expert.up_proj.weight", StDtype::kBF16, {kFf, kEmbd},
                          ByteSpan(sh.u)));
  ASSERT_TRUE(w.AddTensor("model.layers.0.mlp.shared_expert.down_proj.weight", StDtype::kBF16, {kEmbd, kFf},
                          ByteSpan(sh.d)));
  ASSERT_TRUE(w.AddTensor("model.layers.0.mlp.shared_expert_gate.weight", StDtype::kBF16, {1, kEmbd},
                          ByteSpan(sgate)));
  ASSERT_TRUE(w.Write(tmp.Join("router.safetensors")));
  auto img = GateGgufFromSafetensors(tmp.Join("router.safetensors"), {"qwen3moe", "m", 0, 0, ""}, 2);
  ASSERT_TRUE(img) << img.error().ToString();
  auto g = DecodeGate(testing::Shared(std::move(*img)), "gate");
  ASSERT_TRUE(g) << g.error().ToString();
  EXPECT_EQ((*g)->info.n_expert, n_expert);
  EXPECT_EQ((*g)->info.n_expert_used, 2);
  EXPECT_EQ((*g)->info.n_ff_shexp, kFf);
  EXPECT_TRUE((*g)->info.shared_gated);
  ASSERT_TRUE((*g)->shared.has_value());
  ExpectSameOutput((*g)->shared->ffn, sh.Reference(quant::GgmlType::BF16));

  // A bare `weight` router; unknown top-k defaults to min(8, n_expert).
  format::SafetensorsWriter bare;
  ASSERT_TRUE(bare.AddTensor("weight", StDtype::kF32, {n_expert, kEmbd}, ByteSpan(router)));
  ASSERT_TRUE(bare.Write(tmp.Join("r2.safetensors")));
  auto img2 = GateGgufFromSafetensors(tmp.Join("r2.safetensors"), {"", "m", 1, 0, ""}, 0);
  ASSERT_TRUE(img2) << img2.error().ToString();
  auto g2 = DecodeGate(testing::Shared(std::move(*img2)), "gate2");
  ASSERT_TRUE(g2);
  EXPECT_EQ((*g2)->info.n_expert_used, 8);
  EXPECT_FALSE((*g2)->shared.has_value());
  // An expert file is not a gate and vice versa.
  auto e = DecodeGate(testing::Shared(testing::SyntheticExpert("m", 0, 0, 1.0f)), "expert");
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code(), ErrorCode::kInvalidArgument);
}

TEST(ExpertLoaderTest, MiniGgufFromPrepareExperts) {
  TempDir tmp;
  auto store = blob::BlobStore::Open(tmp.Join("blobs"));
  ASSERT_TRUE(store);
  prepare::PrepareRequest req;
  req.model_id = "tiny-qwen35moe";
  req.checkpoint = tenzro::testing::DataPath("moe/tiny-qwen35moe-BF16.gguf");
  req.layer = 1;
  req.experts = "3";
  req.gate = true;
  req.quant = "q4_k_m";
  req.threads = 1;
  auto res = prepare::RunPrepare(req, **store, {});
  ASSERT_TRUE(res) << res.error().ToString();
  const std::string uri = (*res)["experts"][0]["uri"];
  auto hash = blob::ParseHashOrUri(uri);
  ASSERT_TRUE(hash);
  auto w = LoadWarmExpert((*store)->DataPath(*hash));
  ASSERT_TRUE(w) << w.error().ToString();
  EXPECT_EQ((*w)->info.formats(), "q4_K/q4_K/q6_K");
  EXPECT_EQ((*w)->info.id.model_id, "tiny-qwen35moe");
  EXPECT_EQ((*w)->info.id.layer, 1);
  EXPECT_EQ((*w)->info.id.expert, 3);
  EXPECT_EQ((*w)->weights.gate.data.size(), 73728u);
  EXPECT_EQ((*w)->weights.down.data.size(), 107520u);
  auto info = InspectExpertFile((*store)->DataPath(*hash));
  ASSERT_TRUE(info);
  EXPECT_EQ(info->bytes, (*w)->bytes());

  auto ghash = blob::ParseHashOrUri((*res)["gate"]["uri"].get<std::string>());
  ASSERT_TRUE(ghash);
  auto g = LoadGate((*store)->DataPath(*ghash));
  ASSERT_TRUE(g) << g.error().ToString();
  EXPECT_EQ((*g)->info.n_expert, 8);
  EXPECT_EQ((*g)->info.n_expert_used, 2);
  EXPECT_TRUE((*g)->shared.has_value());
  EXPECT_TRUE((*g)->info.shared_gated);
  // A gate file is not an expert.
  EXPECT_EQ(LoadWarmExpert((*store)->DataPath(*ghash)).error().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace tenzro::runtime
