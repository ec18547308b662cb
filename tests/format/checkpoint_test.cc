// The Checkpoint MoE view over Hugging Face safetensors layouts, built here
// with the writer at tiny shapes: per-expert (Qwen3-MoE), Mixtral, Qwen3.5
// packed, sharded with an index.json, plus config.json metadata.
#include <gtest/gtest.h>

#include <map>

#include "core/file.h"
#include "format/checkpoint.h"
#include "format/checkpoint_open.h"
#include "format/safetensors_reader.h"
#include "testutil/testutil.h"

namespace tenzro::format {
namespace {

constexpr int kH = 8, kI = 4, kE = 3, kLayers = 2;

Bytes Fill(size_t n, uint32_t seed) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(seed * 131 + i * 3);
  return b;
}

bool Same(ByteSpan a, const Bytes& b) { return std::equal(a.begin(), a.end(), b.begin(), b.end()); }

// Keeps tensor bytes alive for the writer.
struct Store {
  std::map<std::string, Bytes> data;
  const Bytes& Put(const std::string& name, size_t n) { return data[name] = Fill(n, static_cast<uint32_t>(data.size() + 1)); }
};

const char* kConfig = R"({"model_type":"qwen3_moe","num_hidden_layers":2,"num_experts":3,
  "tie_word_embeddings":false,"rope_theta":1000000.0,"layer_types":[1,2],
  "text_config":{"moe_intermediate_size":4,"hidden_size":8,"model_type":"inner"}})";

TEST(CheckpointHf, PerExpertShardedWithIndex) {
  testing::TempDir dir;
  Store s;
  SafetensorsWriter shard[2];
  std::string index = R"({"metadata":{"total_size":0},"weight_map":{)";
  bool first = true;
  auto add = [&](int shard_no, const std::string& name, StDtype dt, std::vector<int64_t> shape) {
    size_t n = StDtypeSize(dt);
    for (auto d : shape) n *= d;
    ASSERT_TRUE(shard[shard_no].AddTensor(name, dt, shape, s.Put(name, n)));
    index += std::string(first ? "" : ",") + "\"" + name + "\":\"model-0000" + std::to_string(shard_no + 1) +
             "-of-00002.safetensors\"";
    first = false;
  };
  for (int l = 0; l < kLayers; ++l) {
    std::string p = "model.layers." + std::to_string(l) + ".mlp.";
    for (int e = 0; e < kE; ++e) {
      std::string x = p + "experts." + std::to_string(e) + ".";
      add(l, x + "gate_proj.weight", StDtype::kBF16, {kI, kH});
      add(l, x + "up_proj.weight", StDtype::kBF16, {kI, kH});
      add(l, x + "down_proj.weight", StDtype::kBF16, {kH, kI});
    }
    add(l, p + "gate.weight", StDtype::kF32, {kE, kH});
    add(l, p + "shared_expert.gate_proj.weight", StDtype::kBF16, {kI, kH});
    add(l, p + "shared_expert.up_proj.weight", StDtype::kBF16, {kI, kH});
    add(l, p + "shared_expert.down_proj.weight", StDtype::kBF16, {kH, kI});
    add(l, p + "shared_expert_gate.weight", StDtype::kBF16, {1, kH});
  }
  add(0, "model.embed_tokens.weight", StDtype::kBF16, {16, kH});
  index += "}}";
  shard[0].SetMetadata("format", "pt");
  ASSERT_TRUE(shard[0].Write(dir.Join("model-00001-of-00002.safetensors")));
  ASSERT_TRUE(shard[1].Write(dir.Join("model-00002-of-00002.safetensors")));
  ASSERT_TRUE(WriteFileAtomic(dir.Join("model.safetensors.index.json"), index));
  ASSERT_TRUE(WriteFileAtomic(dir.Join("config.json"), std::string_view(kConfig)));

  for (std::string path : {dir.path(), dir.Join("model.safetensors.index.json")}) {
    auto ck = Checkpoint::Open(path);
    ASSERT_TRUE(ck) << ck.error().ToString();
    const Checkpoint& c = **ck;
    EXPECT_EQ(c.format(), CheckpointFormat::kSafetensors);
    EXPECT_EQ(c.files().size(), 2u);
    EXPECT_EQ(c.architecture(), "qwen3_moe");
    EXPECT_EQ(c.GetInt("num_experts"), 3);
    EXPECT_EQ(c.GetInt("moe_intermediate_size"), 4);        // from text_config
    EXPECT_EQ(c.GetInt("text_config.hidden_size"), 8);      // dotted path
    EXPECT_EQ(c.GetString("text_config.model_type"), "inner");
    EXPECT_EQ(c.GetInt("tie_word_embeddings"), 0);
    EXPECT_EQ(c.GetFloat("rope_theta"), 1e6);
    EXPECT_EQ(c.GetIntArray("layer_types"), (std::vector<int64_t>{1, 2}));
    EXPECT_EQ(c.GetString("format"), "pt");                 // __metadata__
    EXPECT_FALSE(c.GetInt("model_type"));
    EXPECT_EQ(c.n_layers(), kLayers);
    const TensorRef* emb = c.FindTensor("model.embed_tokens.weight");
    ASSERT_NE(emb, nullptr);
    EXPECT_EQ(emb->ne, (std::vector<int64_t>{kH, 16}));  // ggml order
    EXPECT_EQ(emb->type, quant::GgmlType::BF16);
    EXPECT_EQ(emb->dtype, "BF16");
    for (int l = 0; l < kLayers; ++l) {
      EXPECT_EQ(c.n_experts(l), kE);
      std::string p = "model.layers." + std::to_string(l) + ".mlp.";
      for (int e = 0; e < kE; ++e) {
        for (Projection pr : kProjections) {
          auto slab = c.Expert(l, e, pr);
          ASSERT_TRUE(slab) << slab.error().ToString();
          std::string name = p + "experts." + std::to_string(e) + "." + std::string(ProjectionName(pr)) + "_proj.weight";
          EXPECT_EQ(slab->tensor, name);
          EXPECT_EQ(slab->type, quant::GgmlType::BF16);
          EXPECT_EQ(slab->row_len, pr == Projection::kDown ? kI : kH);
          EXPECT_EQ(slab->rows, pr == Projection::kDown ? kH : kI);
          EXPECT_TRUE(Same(slab->bytes, s.data[name]));
          EXPECT_EQ(slab->file, dir.Join(l == 0 ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors"));
          Bytes whole = testing::ReadAll(slab->file);
          EXPECT_EQ(0, memcmp(whole.data() + slab->file_offset, slab->bytes.data(), slab->bytes.size()));
        }
      }
      auto r = c.Router(l);
      ASSERT_TRUE(r);
      EXPECT_EQ(r->ne, (std::vector<int64_t>{kH, kE}));
      EXPECT_EQ(r->type, quant::GgmlType::F32);
      auto sh = c.SharedExpert(l, Projection::kDown);
      ASSERT_TRUE(sh);
      EXPECT_TRUE(Same(sh->bytes, s.data[p + "shared_expert.down_proj.weight"]));
      ASSERT_TRUE(c.SharedExpertGate(l));
    }
    EXPECT_EQ(c.Expert(0, 3, Projection::kUp).error().code(), ErrorCode::kNotFound);
  }
}

TEST(CheckpointHf, IndexNamingAMissingTensorIsCorruption) {
  testing::TempDir dir;
  Bytes a = Fill(16, 1);
  SafetensorsWriter w;
  ASSERT_TRUE(w.AddTensor("a", StDtype::kF32, {4}, a));
  ASSERT_TRUE(w.Write(dir.Join("m.safetensors")));
  ASSERT_TRUE(WriteFileAtomic(dir.Join("model.safetensors.index.json"),
                              std::string_view(R"({"weight_map":{"a":"m.safetensors","b":"m.safetensors"}})")));
  auto ck = Checkpoint::Open(dir.path());
  ASSERT_FALSE(ck);
  EXPECT_EQ(ck.error().code(), ErrorCode::kCorruption);
  EXPECT_NE(ck.error().message().find("'b'"), std::string::npos);
  ASSERT_TRUE(WriteFileAtomic(dir.Join("model.safetensors.index.json"),
                              std::string_view(R"({"weight_map":{"a":"../m.safetensors"}})")));
  EXPECT_EQ(Checkpoint::Open(dir.path()).error().code(), ErrorCode::kCorruption);
  ASSERT_TRUE(WriteFileAtomic(dir.Join("model.safetensors.index.json"), std::string_view("{nope")));
  EXPECT_EQ(Checkpoint::Open(dir.path()).error().code(), ErrorCode::kCorruption);
}

TEST(CheckpointHf, Mixtral) {
  testing::TempDir dir;
  Store s;
  SafetensorsWriter w;
  const char* names[] = {"w1", "w3", "w2"};  // gate, up, down
  for (int e = 0; e < kE; ++e)
    for (int k = 0; k < 3; ++k) {
      std::string n = "model.layers.0.block_sparse_moe.experts." + std::to_string(e) + "." + names[k] + ".weight";
      std::vector<int64_t> shape = k == 2 ? std::vector<int64_t>{kH, kI} : std::vector<int64_t>{kI, kH};
      ASSERT_TRUE(w.AddTensor(n, StDtype::kF16, shape, s.Put(n, 2 * kH * kI)));
    }
  ASSERT_TRUE(w.AddTensor("model.layers.0.block_sparse_moe.gate.weight", StDtype::kF32, {kE, kH},
                          s.Put("router", 4 * kE * kH)));
  ASSERT_TRUE(w.Write(dir.Join("model.safetensors")));
  auto ck = Checkpoint::Open(dir.Join("model.safetensors"));
  ASSERT_TRUE(ck) << ck.error().ToString();
  EXPECT_EQ((*ck)->n_experts(0), kE);
  EXPECT_EQ((*ck)->architecture(), "");  // no config.json
  for (int e = 0; e < kE; ++e)
    for (int k = 0; k < 3; ++k) {
      auto slab = (*ck)->Expert(0, e, kProjections[k]);
      ASSERT_TRUE(slab) << slab.error().ToString();
      EXPECT_TRUE(Same(slab->bytes, s.data["model.layers.0.block_sparse_moe.experts." + std::to_string(e) + "." +
                                           names[k] + ".weight"]));
      EXPECT_EQ(slab->type, quant::GgmlType::F16);
    }
  EXPECT_TRUE((*ck)->Router(0));
  EXPECT_EQ((*ck)->SharedExpert(0, Projection::kGate).error().code(), ErrorCode::kNotFound);
}

TEST(CheckpointHf, Qwen35PackedExperts) {
  testing::TempDir dir;
  Store s;
  SafetensorsWriter w;
  const std::string p = "model.language_model.layers.0.mlp.";
  const Bytes& gu = s.Put("gu", 2 * kE * 2 * kI * kH);
  const Bytes& dn = s.Put("dn", 2 * kE * kH * kI);
  ASSERT_TRUE(w.AddTensor(p + "experts.gate_up_proj", StDtype::kBF16, {kE, 2 * kI, kH}, gu));
  ASSERT_TRUE(w.AddTensor(p + "experts.down_proj", StDtype::kBF16, {kE, kH, kI}, dn));
  ASSERT_TRUE(w.AddTensor(p + "gate.weight", StDtype::kBF16, {kE, kH}, s.Put("r", 2 * kE * kH)));
  ASSERT_TRUE(w.AddTensor("model.visual.blocks.0.mlp.experts.0.up_proj.weight", StDtype::kBF16, {kI, kH},
                          s.Put("v", 2 * kI * kH)));
  ASSERT_TRUE(w.Write(dir.Join("model.safetensors")));
  ASSERT_TRUE(WriteFileAtomic(dir.Join("config.json"),
                              std::string_view(R"({"model_type":"qwen3_5_moe","text_config":{"num_experts":3}})")));
  auto ck = Checkpoint::Open(dir.path());
  ASSERT_TRUE(ck) << ck.error().ToString();
  const Checkpoint& c = **ck;
  EXPECT_EQ(c.architecture(), "qwen3_5_moe");
  EXPECT_EQ(c.GetInt("num_experts"), 3);
  EXPECT_EQ(c.n_layers(), 1);
  EXPECT_EQ(c.n_experts(0), kE);
  const size_t row = 2 * kH;  // BF16 bytes of one gate/up row
  for (int e = 0; e < kE; ++e) {
    auto g = c.Expert(0, e, Projection::kGate);
    auto u = c.Expert(0, e, Projection::kUp);
    auto d = c.Expert(0, e, Projection::kDown);
    ASSERT_TRUE(g && u && d);
    EXPECT_EQ(g->rows, kI);
    EXPECT_EQ(g->row_len, kH);
    EXPECT_EQ(d->rows, kH);
    EXPECT_EQ(d->row_len, kI);
    // Expert e: gate = rows [0, I) of gu[e], up = rows [I, 2I).
    Bytes want_g(gu.begin() + e * 2 * kI * row, gu.begin() + (e * 2 * kI + kI) * row);
    Bytes want_u(gu.begin() + (e * 2 * kI + kI) * row, gu.begin() + (e + 1) * 2 * kI * row);
    Bytes want_d(dn.begin() + e * kH * kI * 2, dn.begin() + (e + 1) * kH * kI * 2);
    EXPECT_TRUE(Same(g->bytes, want_g));
    EXPECT_TRUE(Same(u->bytes, want_u));
    EXPECT_TRUE(Same(d->bytes, want_d));
  }
  EXPECT_EQ(c.Router(0)->ne, (std::vector<int64_t>{kH, kE}));
}

TEST(CheckpointHf, Fp8ExpertsAreUnsupported) {
  testing::TempDir dir;
  Bytes b = Fill(kI * kH, 1);
  SafetensorsWriter w;
  ASSERT_TRUE(w.AddTensor("model.layers.0.mlp.experts.0.gate_proj.weight", StDtype::kF8E4M3, {kI, kH}, b));
  ASSERT_TRUE(w.Write(dir.Join("a.safetensors")));
  auto ck = Checkpoint::Open(dir.Join("a.safetensors"));
  ASSERT_TRUE(ck);
  EXPECT_EQ((*ck)->tensors()[0].dtype, "F8_E4M3");
  EXPECT_EQ((*ck)->tensors()[0].type, quant::GgmlType::I8);
  auto slab = (*ck)->Expert(0, 0, Projection::kGate);
  ASSERT_FALSE(slab);
  EXPECT_EQ(slab.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(slab.error().message().find("F8_E4M3"), std::string::npos);
}

TEST(CheckpointOpen, Dispatch) {
  testing::TempDir dir;
  EXPECT_EQ(Checkpoint::Open(dir.Join("nope.gguf")).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(Checkpoint::Open(dir.path()).error().code(), ErrorCode::kNotFound);
  ASSERT_TRUE(WriteFileAtomic(dir.Join("x.bin"), std::string_view("hello")));
  EXPECT_EQ(Checkpoint::Open(dir.Join("x.bin")).error().code(), ErrorCode::kInvalidArgument);
  ASSERT_TRUE(WriteFileAtomic(dir.Join("x.gguf"), std::string_view("hello")));
  auto bad = Checkpoint::Open(dir.Join("x.gguf"));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), ErrorCode::kCorruption);
  EXPECT_NE(bad.error().message().find("x.gguf"), std::string::npos);
  // A bad config.json beside good weights.
  Bytes a = Fill(4, 1);
  SafetensorsWriter w;
  ASSERT_TRUE(w.AddTensor("a", StDtype::kF32, {1}, a));
  ASSERT_TRUE(w.Write(dir.Join("m.safetensors")));
  ASSERT_TRUE(WriteFileAtomic(dir.Join("config.json"), std::string_view("[1")));
  auto cfg = Checkpoint::Open(dir.Join("m.safetensors"));
  ASSERT_FALSE(cfg);
  EXPECT_NE(cfg.error().message().find("config.json"), std::string::npos);
}

}  // namespace
}  // namespace tenzro::format
