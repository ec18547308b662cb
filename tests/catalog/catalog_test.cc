// Shapes read from checkpoints (the tiny Qwen3.5-MoE fixtures and GGUFs
// written here), the catalog file, ResolveShape precedence, and the
// `tenzro moe catalog-*` commands run as a real process.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "catalog/catalog.h"
#include "catalog/checkpoint_shape.h"
#include "core/file.h"
#include "format/checkpoint.h"
#include "format/gguf_writer.h"
#include "format/safetensors_reader.h"
#include "testutil/testutil.h"

namespace tenzro::catalog {
namespace {

using format::GgufValue;
using quant::GgmlType;
using testing::DataPath;
using testing::RunTenzro;
using testing::TempDir;

const std::string kBf16 = "moe/tiny-qwen35moe-BF16.gguf";
const std::string kQ4km = "moe/tiny-qwen35moe-Q4_K_M.gguf";

// Bytes of the three routed-expert tensors of `layer` in the file, per expert.
uint64_t FileBytesPerExpert(const std::string& path, int layer) {
  auto c = format::Checkpoint::Open(path);
  EXPECT_TRUE(c) << c.error().ToString();
  uint64_t sum = 0;
  for (const char* p : {"gate", "up", "down"}) {
    const format::TensorRef* t = (*c)->FindTensor(fmt::format("blk.{}.ffn_{}_exps.weight", layer, p));
    EXPECT_TRUE(t);
    if (t) sum += t->bytes.size() / t->ne[2];
  }
  return sum;
}

void ExpectTinyShape(const ModelShape& s) {
  EXPECT_EQ(s.architecture, "qwen35moe");
  EXPECT_EQ(s.n_layer, 2);
  ASSERT_EQ(s.layers.size(), 2u);
  EXPECT_EQ(s.layers[0].attention, AttentionKind::kLinear);
  EXPECT_EQ(s.layers[1].attention, AttentionKind::kFull);
  EXPECT_TRUE(s.layers[0].moe && s.layers[1].moe);
  EXPECT_EQ(s.n_expert, 8);
  EXPECT_EQ(s.n_expert_used, 2);
  EXPECT_EQ(s.n_embd, 256);
  EXPECT_EQ(s.n_ff_exp, 512);
  EXPECT_EQ(s.n_shared_expert, 1);
  EXPECT_EQ(s.n_ff_shexp, 512);
  EXPECT_TRUE(s.shared_expert_gated);
  EXPECT_EQ(s.full_attention_interval, 2);
  EXPECT_EQ(s.routing.kind, RoutingKind::kSoftmaxTopkRenorm);
  EXPECT_EQ(s.total_experts(), 16u);
}

TEST(CheckpointShape, Bf16Fixture) {
  auto ins = InspectCheckpointFile(DataPath(kBf16), "tiny");
  ASSERT_TRUE(ins) << ins.error().ToString();
  ASSERT_TRUE(ins->moe);
  const ModelShape& s = ins->shape;
  ExpectTinyShape(s);
  for (int l = 0; l < 2; ++l) {
    EXPECT_EQ(*s.layers[l].gate_type, GgmlType::BF16);
    EXPECT_EQ(*s.layers[l].down_type, GgmlType::BF16);
    EXPECT_EQ(s.layers[l].stored_expert_bytes, 786432u);  // 3 * 256 * 512 * 2
    EXPECT_EQ(s.layers[l].stored_expert_bytes, FileBytesPerExpert(DataPath(kBf16), l));
  }
  ASSERT_TRUE(s.checkpoint);
  EXPECT_EQ(s.checkpoint->format, "gguf");
  EXPECT_TRUE(std::filesystem::path(s.checkpoint->path).is_absolute());
  EXPECT_EQ(s.checkpoint->expert_tensor_bytes, 16u * 786432);
  EXPECT_GT(s.checkpoint->total_tensor_bytes, s.checkpoint->expert_tensor_bytes);
}

TEST(CheckpointShape, Q4KMFixtureTypesPerLayer) {
  auto ins = InspectCheckpointFile(DataPath(kQ4km), "tiny");
  ASSERT_TRUE(ins) << ins.error().ToString();
  const ModelShape& s = ins->shape;
  ExpectTinyShape(s);
  EXPECT_EQ(*s.layers[0].gate_type, GgmlType::Q4_K);
  EXPECT_EQ(*s.layers[0].up_type, GgmlType::Q4_K);
  EXPECT_EQ(*s.layers[0].down_type, GgmlType::Q4_K);
  EXPECT_EQ(*s.layers[1].down_type, GgmlType::Q6_K);
  // Matches llama.cpp's rule as recorded in the shape.
  EXPECT_EQ(s.layers[0].q4_k_m_down_type, GgmlType::Q4_K);
  EXPECT_EQ(s.layers[1].q4_k_m_down_type, GgmlType::Q6_K);
  // gate+up: 2 * 512 rows * 144; down: 256 rows * 288 (Q4_K) or 420 (Q6_K).
  EXPECT_EQ(s.layers[0].stored_expert_bytes, 2u * 512 * 144 + 256 * 288);
  EXPECT_EQ(s.layers[1].stored_expert_bytes, 2u * 512 * 144 + 256 * 420);
  for (int l = 0; l < 2; ++l)
    EXPECT_EQ(s.layers[l].stored_expert_bytes, FileBytesPerExpert(DataPath(kQ4km), l)) << l;
  EXPECT_EQ(s.checkpoint->expert_tensor_bytes, 8u * (221184 + 254976));
}

// A GGUF with a dense FFN only.
std::string WriteDenseGguf(const TempDir& dir) {
  static std::vector<float> embd(32 * 16, 0.5f), up(32 * 64, 0.25f);
  format::GgufWriter w;
  w.Set("general.architecture", GgufValue::Str("llama"));
  w.Set("llama.block_count", GgufValue::U32(1));
  w.Set("llama.embedding_length", GgufValue::U32(32));
  w.Set("llama.feed_forward_length", GgufValue::U32(64));
  auto span = [](const std::vector<float>& v) {
    return ByteSpan(reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4);
  };
  EXPECT_TRUE(w.AddTensor("token_embd.weight", GgmlType::F32, {32, 16}, span(embd)));
  EXPECT_TRUE(w.AddTensor("blk.0.ffn_up.weight", GgmlType::F32, {32, 64}, span(up)));
  std::string path = dir.Join("dense.gguf");
  auto r = w.Write(path);
  EXPECT_TRUE(r) << r.error().ToString();
  return path;
}

TEST(CheckpointShape, DenseGgufIsReportedAsDense) {
  TempDir dir;
  std::string path = WriteDenseGguf(dir);
  auto ins = InspectCheckpointFile(path, "dense");
  ASSERT_TRUE(ins) << ins.error().ToString();
  EXPECT_FALSE(ins->moe);
  auto shape = ShapeFromCheckpointFile(path, "dense");
  ASSERT_FALSE(shape);
  EXPECT_EQ(shape.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(shape.error().message().find("dense model: no expert tensors"), std::string::npos);

  auto run = RunTenzro({"moe", "catalog-shape", "--model", "dense", "--checkpoint", path});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("dense model: no expert tensors"), std::string::npos) << run.out;
  run = RunTenzro({"moe", "catalog-shape", "--checkpoint", path, "--json"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  auto j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j["moe"], false);
  EXPECT_EQ(j["schema_version"], 1);
  run = RunTenzro({"--data-dir", dir.Join("data"), "moe", "catalog-add", "--model", "dense", "--checkpoint", path});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("dense model"), std::string::npos) << run.err;
}

// A DeepSeek-shaped GGUF: 3 layers, the first dense, 4 experts in 2 groups,
// sigmoid routing with a selection bias.
TEST(CheckpointShape, DeepSeekStyleMetadata) {
  const int64_t embd = 32, ff = 64, n_exp = 4;
  static std::vector<float> dense(embd * 128, 0.1f), exps(embd * ff * n_exp, 0.1f), bias(n_exp, 0.0f),
      router(embd * n_exp, 0.1f), sh(embd * ff, 0.1f);
  auto span = [](const std::vector<float>& v, size_t n) {
    return ByteSpan(reinterpret_cast<const uint8_t*>(v.data()), n * 4);
  };
  format::GgufWriter w;
  w.Set("general.architecture", GgufValue::Str("deepseek2"));
  w.Set("deepseek2.block_count", GgufValue::U32(3));
  w.Set("deepseek2.embedding_length", GgufValue::U32(embd));
  w.Set("deepseek2.feed_forward_length", GgufValue::U32(128));
  w.Set("deepseek2.expert_count", GgufValue::U32(n_exp));
  w.Set("deepseek2.expert_used_count", GgufValue::U32(2));
  w.Set("deepseek2.expert_shared_count", GgufValue::U32(1));
  w.Set("deepseek2.expert_feed_forward_length", GgufValue::U32(ff));
  w.Set("deepseek2.leading_dense_block_count", GgufValue::U32(1));
  w.Set("deepseek2.expert_gating_func", GgufValue::U32(2));
  w.Set("deepseek2.expert_weights_norm", GgufValue::Bool(true));
  w.Set("deepseek2.expert_weights_scale", GgufValue::F32(2.5f));
  w.Set("deepseek2.expert_group_count", GgufValue::U32(2));
  w.Set("deepseek2.expert_group_used_count", GgufValue::U32(1));
  ASSERT_TRUE(w.AddTensor("blk.0.ffn_up.weight", GgmlType::F32, {embd, 128}, span(dense, embd * 128)));
  ASSERT_TRUE(w.AddTensor("blk.0.attn_q_a.weight", GgmlType::F32, {embd, 32}, span(dense, embd * 32)));
  for (int l = 1; l < 3; ++l) {
    auto n = [&](const char* t) { return fmt::format("blk.{}.{}", l, t); };
    ASSERT_TRUE(w.AddTensor(n("attn_q_a.weight"), GgmlType::F32, {embd, 32}, span(dense, embd * 32)));
    ASSERT_TRUE(w.AddTensor(n("ffn_gate_inp.weight"), GgmlType::F32, {embd, n_exp}, span(router, embd * n_exp)));
    ASSERT_TRUE(w.AddTensor(n("exp_probs_b.bias"), GgmlType::F32, {n_exp}, span(bias, n_exp)));
    ASSERT_TRUE(w.AddTensor(n("ffn_gate_exps.weight"), GgmlType::F32, {embd, ff, n_exp}, span(exps, exps.size())));
    ASSERT_TRUE(w.AddTensor(n("ffn_up_exps.weight"), GgmlType::F32, {embd, ff, n_exp}, span(exps, exps.size())));
    ASSERT_TRUE(w.AddTensor(n("ffn_down_exps.weight"), GgmlType::F32, {ff, embd, n_exp}, span(exps, exps.size())));
    ASSERT_TRUE(w.AddTensor(n("ffn_gate_shexp.weight"), GgmlType::F32, {embd, ff}, span(sh, sh.size())));
    ASSERT_TRUE(w.AddTensor(n("ffn_up_shexp.weight"), GgmlType::F32, {embd, ff}, span(sh, sh.size())));
    ASSERT_TRUE(w.AddTensor(n("ffn_down_shexp.weight"), GgmlType::F32, {ff, embd}, span(sh, sh.size())));
  }
  TempDir dir;
  std::string path = dir.Join("ds.gguf");
  ASSERT_TRUE(w.Write(path));
  auto ins = InspectCheckpointFile(path, "ds-tiny");
  ASSERT_TRUE(ins) << ins.error().ToString();
  ASSERT_TRUE(ins->moe);
  const ModelShape& s = ins->shape;
  EXPECT_EQ(s.architecture, "deepseek2");
  EXPECT_EQ(s.n_layer, 3);
  EXPECT_FALSE(s.layers[0].moe);
  EXPECT_TRUE(s.layers[1].moe && s.layers[2].moe);
  EXPECT_EQ(s.n_expert, 4);
  EXPECT_EQ(s.n_expert_used, 2);
  EXPECT_EQ(s.n_ff_exp, ff);
  EXPECT_EQ(s.n_ff_dense, 128);
  EXPECT_EQ(s.n_shared_expert, 1);
  EXPECT_EQ(s.n_ff_shexp, ff);
  EXPECT_FALSE(s.shared_expert_gated);
  EXPECT_EQ(s.routing.kind, RoutingKind::kSigmoidGroupTopk);
  EXPECT_EQ(s.routing.n_group, 2);
  EXPECT_EQ(s.routing.topk_group, 1);
  EXPECT_TRUE(s.routing.selection_bias);
  EXPECT_DOUBLE_EQ(s.routing.routed_scaling_factor, 2.5);
  EXPECT_EQ(s.layers[1].attention, AttentionKind::kFull);  // from the attn_q_a tensor
  EXPECT_EQ(s.checkpoint->expert_tensor_bytes, 2u * 3 * embd * ff * n_exp * 4);
}

// A Hugging Face layout (Qwen3-Next-style per-expert tensors) with its
// config.json: keys, layer_types and the tensors give the shape.
TEST(CheckpointShape, SafetensorsWithConfigJson) {
  const int64_t embd = 32, ff = 16, n_exp = 4;
  static std::vector<float> w(embd * ff, 0.1f), router(n_exp * embd, 0.1f), one(embd, 0.1f);
  auto span = [](const std::vector<float>& v) {
    return ByteSpan(reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4);
  };
  using format::StDtype;
  format::SafetensorsWriter st;
  for (int l = 0; l < 2; ++l) {
    const std::string p = fmt::format("model.layers.{}.", l);
    for (int e = 0; e < n_exp; ++e) {
      const std::string ep = fmt::format("{}mlp.experts.{}.", p, e);
      ASSERT_TRUE(st.AddTensor(ep + "gate_proj.weight", StDtype::kF32, {ff, embd}, span(w)));
      ASSERT_TRUE(st.AddTensor(ep + "up_proj.weight", StDtype::kF32, {ff, embd}, span(w)));
      ASSERT_TRUE(st.AddTensor(ep + "down_proj.weight", StDtype::kF32, {embd, ff}, span(w)));
    }
    ASSERT_TRUE(st.AddTensor(p + "mlp.gate.weight", StDtype::kF32, {n_exp, embd}, span(router)));
    ASSERT_TRUE(st.AddTensor(p + "mlp.shared_expert.gate_proj.weight", StDtype::kF32, {ff, embd}, span(w)));
    ASSERT_TRUE(st.AddTensor(p + "mlp.shared_expert.up_proj.weight", StDtype::kF32, {ff, embd}, span(w)));
    ASSERT_TRUE(st.AddTensor(p + "mlp.shared_expert.down_proj.weight", StDtype::kF32, {embd, ff}, span(w)));
    ASSERT_TRUE(st.AddTensor(p + "mlp.shared_expert_gate.weight", StDtype::kF32, {1, embd}, span(one)));
    ASSERT_TRUE(st.AddTensor(p + (l == 0 ? "linear_attn.out_proj.weight" : "self_attn.o_proj.weight"),
                             StDtype::kF32, {embd, 1}, span(one)));
  }
  TempDir dir;
  ASSERT_TRUE(st.Write(dir.Join("model.safetensors")));
  ASSERT_TRUE(WriteFileAtomic(dir.Join("config.json"), std::string_view(R"({
    "model_type": "qwen3_next", "num_hidden_layers": 2, "hidden_size": 32, "num_experts": 4,
    "num_experts_per_tok": 2, "moe_intermediate_size": 16, "shared_expert_intermediate_size": 16,
    "norm_topk_prob": true, "layer_types": ["linear_attention", "full_attention"]})")));
  auto ins = InspectCheckpointFile(dir.Join("model.safetensors"), "hf-tiny");
  ASSERT_TRUE(ins) << ins.error().ToString();
  ASSERT_TRUE(ins->moe);
  const ModelShape& s = ins->shape;
  EXPECT_EQ(s.architecture, "qwen3next");
  EXPECT_EQ(s.n_layer, 2);
  EXPECT_EQ(s.n_expert, 4);
  EXPECT_EQ(s.n_expert_used, 2);
  EXPECT_EQ(s.n_embd, embd);
  EXPECT_EQ(s.n_ff_exp, ff);
  EXPECT_EQ(s.n_shared_expert, 1);
  EXPECT_EQ(s.n_ff_shexp, ff);
  EXPECT_TRUE(s.shared_expert_gated);
  EXPECT_EQ(s.layers[0].attention, AttentionKind::kLinear);
  EXPECT_EQ(s.layers[1].attention, AttentionKind::kFull);
  EXPECT_EQ(s.routing.kind, RoutingKind::kSoftmaxTopkRenorm);
  EXPECT_EQ(*s.layers[0].down_type, GgmlType::F32);
  EXPECT_EQ(s.layers[0].stored_expert_bytes, 3u * embd * ff * 4);
  EXPECT_EQ(s.checkpoint->format, "safetensors");
  EXPECT_EQ(s.checkpoint->expert_tensor_bytes, 2u * n_exp * 3 * embd * ff * 4);
}

TEST(Catalog, AddLoadLookupAndResolve) {
  TempDir dir;
  const std::string data = dir.Join("data");
  auto empty = Catalog::Load(data);
  ASSERT_TRUE(empty) << empty.error().ToString();
  EXPECT_TRUE(empty->entries().empty());

  auto e = empty->AddCheckpoint("My-Tiny", DataPath(kQ4km));
  ASSERT_TRUE(e) << e.error().ToString();
  EXPECT_EQ(e->id, "my-tiny");
  EXPECT_TRUE(PathExists(Catalog::PathIn(data)));

  auto cat = Catalog::Load(data);
  ASSERT_TRUE(cat) << cat.error().ToString();
  const CatalogEntry* got = cat->Lookup("MY-TINY");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->checkpoint, std::filesystem::absolute(DataPath(kQ4km)).lexically_normal().string());
  EXPECT_EQ(got->format, "gguf");
  ExpectTinyShape(got->shape);
  EXPECT_EQ(*got->shape.layers[1].down_type, GgmlType::Q6_K);

  // Catalog entry beats the built-in table; an explicit checkpoint beats both.
  ASSERT_TRUE(cat->AddCheckpoint("tiny-qwen35moe", DataPath(kBf16)));
  auto r = ResolveShape("tiny-qwen35moe", std::nullopt, data);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->source, ShapeSource::kCatalog);
  EXPECT_EQ(*r->shape.layers[0].gate_type, GgmlType::BF16);
  r = ResolveShape("tiny-qwen35moe", DataPath(kQ4km), data);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->source, ShapeSource::kCheckpoint);
  EXPECT_EQ(*r->shape.layers[0].gate_type, GgmlType::Q4_K);
  r = ResolveShape("tiny-qwen35moe", std::nullopt, "");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->source, ShapeSource::kBuiltin);
  r = ResolveShape("nope", std::nullopt, data);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(r.error().message().find("my-tiny"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("deepseek-v3"), std::string::npos);

  EXPECT_FALSE(cat->AddCheckpoint("bad id!", DataPath(kQ4km)));
  auto missing = cat->AddCheckpoint("x", dir.Join("absent.gguf"));
  ASSERT_FALSE(missing);
}

TEST(Catalog, CorruptFileNamesTheField) {
  TempDir dir;
  ASSERT_TRUE(WriteFileAtomic(dir.Join("catalog.json"), std::string_view("{\"schema_version\":1,\"models\":[{\"id\":3}]}")));
  auto c = Catalog::Load(dir.path());
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code(), ErrorCode::kCorruption);
  EXPECT_NE(c.error().message().find("models[0]"), std::string::npos) << c.error().message();
  ASSERT_TRUE(WriteFileAtomic(dir.Join("catalog.json"), std::string_view("{not json")));
  EXPECT_EQ(Catalog::Load(dir.path()).error().code(), ErrorCode::kCorruption);
  ASSERT_TRUE(WriteFileAtomic(dir.Join("catalog.json"), std::string_view("{\"schema_version\":9,\"models\":[]}")));
  EXPECT_EQ(Catalog::Load(dir.path()).error().code(), ErrorCode::kUnsupported);
}

// --- the CLI, as a real process ---

TEST(CatalogCli, ShapeOfFixturesFromTheBinary) {
  struct Case { std::string file; uint64_t l0, l1; std::string down1; };
  for (const Case& c : {Case{kBf16, 786432, 786432, "bf16"}, Case{kQ4km, 221184, 254976, "q6_K"}}) {
    SCOPED_TRACE(c.file);
    auto run = RunTenzro({"moe", "catalog-shape", "--model", "tiny", "--checkpoint", DataPath(c.file), "--json"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    auto j = nlohmann::json::parse(run.out);
    EXPECT_EQ(j["schema_version"], 1);
    EXPECT_EQ(j["source"], "checkpoint");
    EXPECT_EQ(j["moe"], true);
    EXPECT_EQ(j["total_experts"], 16);
    const auto& s = j["shape"];
    EXPECT_EQ(s["n_layer"], 2);
    EXPECT_EQ(s["n_embd"], 256);
    EXPECT_EQ(s["n_expert"], 8);
    EXPECT_EQ(s["n_expert_used"], 2);
    EXPECT_EQ(s["n_ff_exp"], 512);
    EXPECT_EQ(s["n_shared_expert"], 1);
    EXPECT_EQ(s["n_ff_shexp"], 512);
    EXPECT_EQ(s["layers"][0]["attention"], "linear");
    EXPECT_EQ(s["layers"][1]["attention"], "full");
    EXPECT_EQ(s["layers"][0]["stored_expert_bytes"], c.l0);
    EXPECT_EQ(s["layers"][1]["stored_expert_bytes"], c.l1);
    EXPECT_EQ(s["layers"][0]["stored_expert_bytes"], FileBytesPerExpert(DataPath(c.file), 0));
    EXPECT_EQ(s["layers"][1]["stored_expert_bytes"], FileBytesPerExpert(DataPath(c.file), 1));
    EXPECT_EQ(s["layers"][1]["stored_types"]["down"], c.down1);
    EXPECT_EQ(j["checkpoint"]["expert_tensor_bytes"], 8 * (c.l0 + c.l1));
    EXPECT_EQ(j["experts_share"]["estimated"], false);

    auto text = RunTenzro({"moe", "catalog-shape", "--model", "tiny", "--checkpoint", DataPath(c.file)});
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("2 layers: 1 x linear-attention MoE, 1 x full-attention MoE"), std::string::npos)
        << text.out;
    EXPECT_NE(text.out.find(fmt::format("{} bytes per expert", c.l1)), std::string::npos) << text.out;
  }
}

TEST(CatalogCli, AddListShapeRoundTrip) {
  TempDir dir;
  const std::string data = dir.Join("data");
  auto add = RunTenzro({"--data-dir", data, "moe", "catalog-add", "--model", "tiny-q4km", "--checkpoint",
                        DataPath(kQ4km)});
  ASSERT_EQ(add.exit_code, 0) << add.err;
  EXPECT_NE(add.out.find("tiny-q4km"), std::string::npos);

  auto list = RunTenzro({"--data-dir", data, "moe", "catalog-list", "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  auto j = nlohmann::json::parse(list.out);
  EXPECT_EQ(j["schema_version"], 1);
  ASSERT_EQ(j["models"].size(), 1u);
  EXPECT_EQ(j["models"][0]["id"], "tiny-q4km");
  EXPECT_TRUE(std::filesystem::path(j["models"][0]["checkpoint"].get<std::string>()).is_absolute());
  EXPECT_EQ(j["models"][0]["shape"]["n_expert"], 8);
  EXPECT_FALSE(j["builtin_ids"].empty());

  auto text = RunTenzro({"--data-dir", data, "moe", "catalog-list"});
  ASSERT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("tiny-q4km"), std::string::npos);

  auto shape = RunTenzro({"--data-dir", data, "moe", "catalog-shape", "--model", "tiny-q4km", "--json"});
  ASSERT_EQ(shape.exit_code, 0) << shape.err;
  auto sj = nlohmann::json::parse(shape.out);
  EXPECT_EQ(sj["source"], "catalog");
  EXPECT_EQ(sj["shape"]["layers"][1]["stored_types"]["down"], "q6_K");
}

TEST(CatalogCli, BuiltinShapeWithBudget) {
  auto run = RunTenzro({"moe", "catalog-shape", "--model", "qwen3.5-122b-a10b", "--budget", "256MiB", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j["source"], "builtin");
  EXPECT_EQ(j["budget_bytes"], 268435456);
  for (const auto& f : j["expert_bytes"]) {
    if (f["format"] == "q4_k") {
      EXPECT_EQ(f["fit_any_layer"], 50);
    }
    if (f["format"] == "q4_k_m") {
      EXPECT_EQ(f["bytes_min"], 5308416);
      EXPECT_EQ(f["bytes_max"], 6119424);
      EXPECT_EQ(f["fit_any_layer"], 43);
    }
  }
  auto text = RunTenzro({"moe", "catalog-shape", "--model", "qwen3.5-397b-a17b"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("pattern 3 linear + 1 full"), std::string::npos) << text.out;
}

TEST(CatalogCli, UnknownModelAndBadBudget) {
  TempDir dir;
  auto run = RunTenzro({"--data-dir", dir.path(), "moe", "catalog-shape", "--model", "llama-9000"});
  EXPECT_EQ(run.exit_code, 3) << run.err;
  EXPECT_NE(run.err.find("llama-9000"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("qwen3.5-397b-a17b"), std::string::npos) << run.err;
  run = RunTenzro({"--data-dir", dir.path(), "moe", "catalog-shape", "--model", "qwen3-30b-a3b", "--budget", "lots"});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("--budget"), std::string::npos) << run.err;
  run = RunTenzro({"--data-dir", dir.path(), "moe", "catalog-shape", "--model", "qwen3-30b-a3b", "--budget", "0"});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  run = RunTenzro({"--data-dir", dir.path(), "moe", "catalog-add", "--model", "x", "--checkpoint",
                   dir.Join("absent.gguf")});
  EXPECT_NE(run.exit_code, 0);
  run = RunTenzro({"moe", "catalog-shape", "--help"});
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_NE(run.out.find("Example:"), std::string::npos);
}

}  // namespace
}  // namespace tenzro::catalog
