// ExpertRuntime without HTTP: loads checked against the catalog shape
// (errors name expected vs got and change nothing), safetensors and
// mini-GGUF sources, unknown models, forward.
#include "holder/expert_runtime.h"

#include <gtest/gtest.h>

#include <random>

#include "catalog/catalog.h"
#include "core/file.h"
#include "format/safetensors_reader.h"
#include "format/expert_gguf.h"
#include "testutil/testutil.h"

namespace tenzro::holder {
namespace {

using format::StDtype;
using tenzro::testing::DataPath;
using tenzro::testing::TempDir;

constexpr const char* kModel = "tiny-qwen35moe";

std::string WriteExpertSt(const TempDir& tmp, const std::string& name, int64_t n_embd, int64_t n_ff) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 0.05f);
  static std::vector<float> g, u, d;
  g.resize(n_ff * n_embd);
  u.resize(n_ff * n_embd);
  d.resize(n_embd * n_ff);
  for (auto* v : {&g, &u, &d})
    for (float& x : *v) x = nd(rng);
  auto span = [](const std::vector<float>& v) { return ByteSpan(reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4); };
  format::SafetensorsWriter w;
  EXPECT_TRUE(w.AddTensor("mlp.experts.0.gate_proj.weight", StDtype::kF32, {n_ff, n_embd}, span(g)));
  EXPECT_TRUE(w.AddTensor("mlp.experts.0.up_proj.weight", StDtype::kF32, {n_ff, n_embd}, span(u)));
  EXPECT_TRUE(w.AddTensor("mlp.experts.0.down_proj.weight", StDtype::kF32, {n_embd, n_ff}, span(d)));
  const std::string path = tmp.Join(name);
  EXPECT_TRUE(w.Write(path));
  return path;
}

struct Rt {
  TempDir tmp;
  std::unique_ptr<ThreadPool> pool = std::make_unique<ThreadPool>(2);
  std::unique_ptr<ExpertRuntime> rt;

  explicit Rt(bool catalog, uint64_t budget = 0) {
    const std::string dir = tmp.Join("data");
    EXPECT_TRUE(MakeDirs(dir));
    if (catalog) {
      auto cat = catalog::Catalog::Load(dir);
      EXPECT_TRUE(cat);
      auto e = cat->AddCheckpoint(kModel, DataPath("moe/tiny-qwen35moe-Q4_K_M.gguf"));
      EXPECT_TRUE(e) << e.error().ToString();
    }
    Open(budget);
  }
  void Open(uint64_t budget) {
    rt.reset();
    ExpertRuntimeOptions o;
    o.data_dir = tmp.Join("data");
    o.memory_budget = budget;
    o.store = std::shared_ptr<blob::BlobStore>(std::move(*blob::BlobStore::Open(o.data_dir + "/blobs")));
    o.compute_pool = pool.get();
    auto r = ExpertRuntime::Open(o);
    EXPECT_TRUE(r) << r.error().ToString();
    rt = std::move(*r);
  }
};

TEST(ExpertRuntimeTest, CatalogShapeIsEnforcedAndErrorsChangeNothing) {
  Rt r(/*catalog=*/true);
  // Right shape (n_embd 256, n_ff 512): loads, Warm, shape from the catalog.
  const std::string good = WriteExpertSt(r.tmp, "good.safetensors", 256, 512);
  auto ok = r.rt->LoadExpert(kModel, 0, 3, {good, ""});
  ASSERT_TRUE(ok) << ok.error().ToString();
  EXPECT_EQ((*ok)["shape_source"], "catalog");
  EXPECT_EQ((*ok)["tier"], "Warm");
  EXPECT_EQ((*ok)["formats"], "f32/f32/f32");
  EXPECT_EQ((*ok)["source"], "safetensors");
  EXPECT_FALSE(ok->contains("note"));
  const nlohmann::json before = r.rt->Status();

  // Wrong n_ff: expected vs got in the message; nothing changes.
  const std::string bad = WriteExpertSt(r.tmp, "bad.safetensors", 256, 256);
  auto e1 = r.rt->LoadExpert(kModel, 0, 3, {bad, ""});
  ASSERT_FALSE(e1);
  EXPECT_EQ(e1.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(e1.error().message().find("expected n_embd 256 and n_ff 512"), std::string::npos) << e1.error().message();
  EXPECT_NE(e1.error().message().find("got n_embd 256 and n_ff 256"), std::string::npos);
  // Expert index past the layer's experts, layer past the model.
  EXPECT_EQ(r.rt->LoadExpert(kModel, 0, 8, {good, ""}).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.rt->LoadExpert(kModel, 2, 0, {good, ""}).error().code(), ErrorCode::kInvalidArgument);
  // Relative paths are the CLI's job.
  EXPECT_EQ(r.rt->LoadExpert(kModel, 0, 1, {"good.safetensors", ""}).error().code(), ErrorCode::kInvalidArgument);
  // A mini-GGUF of another expert index.
  Bytes other;
  {
    auto f = format::Checkpoint::Open(DataPath("moe/tiny-qwen35moe-Q4_K_M.gguf"));
    ASSERT_TRUE(f);
    format::ExpertTensors t;
    for (int p = 0; p < 3; ++p) {
      auto s = (*f)->Expert(0, 5, static_cast<format::Projection>(p));
      t.proj[p] = {s->type, s->row_len, s->rows, s->bytes};
    }
    other = *format::EncodeExpertGguf({"qwen35moe", kModel, 0, 5, "q4_k_m"}, t);
  }
  ASSERT_TRUE(WriteFileAtomic(r.tmp.Join("e5.gguf"), ByteSpan(other)));
  auto e2 = r.rt->LoadExpert(kModel, 0, 3, {r.tmp.Join("e5.gguf"), ""});
  ASSERT_FALSE(e2);
  EXPECT_NE(e2.error().message().find("expert 5"), std::string::npos) << e2.error().message();
  // An expert file is no router; a router of the wrong shape is refused.
  auto e3 = r.rt->LoadGate(kModel, 0, {good, ""});
  ASSERT_FALSE(e3);
  EXPECT_EQ(e3.error().code(), ErrorCode::kNotFound) << e3.error().ToString();
  std::vector<float> router(4 * 256, 0.01f);
  format::SafetensorsWriter rw;
  ASSERT_TRUE(rw.AddTensor("model.layers.0.mlp.gate.weight", StDtype::kF32, {4, 256},
                           ByteSpan(reinterpret_cast<const uint8_t*>(router.data()), router.size() * 4)));
  ASSERT_TRUE(rw.Write(r.tmp.Join("router.safetensors")));
  auto e4 = r.rt->LoadGate(kModel, 0, {r.tmp.Join("router.safetensors"), ""});
  ASSERT_FALSE(e4);
  EXPECT_EQ(e4.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(e4.error().message().find("expected [8, 256]"), std::string::npos) << e4.error().message();
  EXPECT_NE(e4.error().message().find("got [4, 256]"), std::string::npos);

  const nlohmann::json after = r.rt->Status();
  EXPECT_EQ(after["experts"], before["experts"]);
  EXPECT_EQ(after["gates"], before["gates"]);

  // The right mini-GGUF under its own index loads (copied into the cold tier).
  auto ok5 = r.rt->LoadExpert(kModel, 0, 5, {r.tmp.Join("e5.gguf"), ""});
  ASSERT_TRUE(ok5) << ok5.error().ToString();
  EXPECT_EQ((*ok5)["source"], "gguf");
  EXPECT_EQ((*ok5)["formats"], "q4_K/q4_K/q4_K");
}

TEST(ExpertRuntimeTest, UnknownModelTakesTheFileShapeAndSaysSo) {
  Rt r(/*catalog=*/false);
  const std::string a = WriteExpertSt(r.tmp, "a.safetensors", 64, 128);
  auto ok = r.rt->LoadExpert("my-moe", 1, 0, {a, ""});
  ASSERT_TRUE(ok) << ok.error().ToString();
  EXPECT_EQ((*ok)["shape_source"], "file");
  EXPECT_NE((*ok)["note"].get<std::string>().find("not in the catalog"), std::string::npos);
  // A second expert must agree with the first.
  const std::string b = WriteExpertSt(r.tmp, "b.safetensors", 64, 96);
  auto e = r.rt->LoadExpert("my-moe", 1, 1, {b, ""});
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.rt->Status()["experts"].size(), 1u);
  // No gate: forward says how to get one.
  std::vector<float> x(64), out(64);
  auto f = r.rt->Forward("my-moe", 1, 64, x.data(), 1, out.data());
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(f.error().message().find("load-gate"), std::string::npos);
  const nlohmann::json st = r.rt->Status();
  EXPECT_EQ(st["compute"]["gpu"], "none (no GPU compute backend in this build)");
  EXPECT_EQ(st["memory"]["budget"], "unlimited");
}

}  // namespace
}  // namespace tenzro::holder
