// The spine blob of the tiny Qwen3.5-MoE with tokenizer (tests/data/model):
// every non-expert tensor byte for byte, every metadata key verbatim, no
// routed expert, reproducible blob hash.
#include "prepare/spine.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "blob/blob_uri.h"
#include "format/safetensors_reader.h"
#include "testutil/testutil.h"

namespace tenzro::prepare {
namespace {

using nlohmann::json;

const std::string kTiny = "model/tiny-qwen35moe-tok-BF16.gguf";

struct Source {
  std::unique_ptr<format::Checkpoint> ckpt;
  std::unique_ptr<format::GgufFile> gguf;
};

Source OpenTiny() {
  Source s;
  auto c = format::Checkpoint::Open(testing::DataPath(kTiny));
  EXPECT_TRUE(c) << c.error().ToString();
  auto g = format::GgufFile::Open(testing::DataPath(kTiny));
  EXPECT_TRUE(g) << g.error().ToString();
  if (c) s.ckpt = std::move(*c);
  if (g) s.gguf = std::move(*g);
  return s;
}

uint64_t Padded(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

TEST(Spine, RoutedExpertNames) {
  EXPECT_TRUE(IsRoutedExpertTensor("blk.0.ffn_gate_exps.weight"));
  EXPECT_TRUE(IsRoutedExpertTensor("blk.12.ffn_up_exps.weight"));
  EXPECT_TRUE(IsRoutedExpertTensor("blk.3.ffn_down_exps.weight"));
  EXPECT_TRUE(IsRoutedExpertTensor("blk.3.ffn_gate_up_exps.weight"));
  EXPECT_TRUE(IsRoutedExpertTensor("blk.3.ffn_down_exps.bias"));
  EXPECT_FALSE(IsRoutedExpertTensor("blk.0.ffn_gate_shexp.weight"));
  EXPECT_FALSE(IsRoutedExpertTensor("blk.0.ffn_gate_inp.weight"));
  EXPECT_FALSE(IsRoutedExpertTensor("blk.0.ffn_gate_inp_shexp.weight"));
  EXPECT_FALSE(IsRoutedExpertTensor("blk.0.exp_probs_b.bias"));
  EXPECT_FALSE(IsRoutedExpertTensor("blk.x.ffn_up_exps.weight"));
  EXPECT_FALSE(IsRoutedExpertTensor("token_embd.weight"));
  EXPECT_FALSE(IsRoutedExpertTensor("output.ffn_up_exps.weight"));
}

TEST(Spine, HoldsExactlyTheNonExpertTensorsAndEveryKey) {
  Source src = OpenTiny();
  ASSERT_TRUE(src.ckpt && src.gguf);
  auto spine = BuildSpine(*src.ckpt, *src.gguf, {.model_id = "tiny-qwen35moe"});
  ASSERT_TRUE(spine) << spine.error().ToString();
  auto image = spine->writer.Serialize();
  ASSERT_TRUE(image) << image.error().ToString();
  auto out = format::GgufFile::Parse(*image, "spine");
  ASSERT_TRUE(out) << out.error().ToString();

  // Every source key with the identical value (type and bits), plus ours.
  for (const auto& [key, value] : src.gguf->kv()) {
    const format::GgufValue* got = (*out)->Find(key);
    ASSERT_NE(got, nullptr) << key;
    EXPECT_TRUE(*got == value) << key;
  }
  EXPECT_EQ((*out)->kv().size(), src.gguf->kv().size() + 3);
  EXPECT_EQ((*out)->Find(kSpineKey)->AsInt(), 1);
  EXPECT_EQ((*out)->Find(kSpineKey)->type(), format::GgufType::kBool);
  EXPECT_EQ(*(*out)->Find(kSpineModelIdKey)->AsString(), "tiny-qwen35moe");
  EXPECT_EQ(*(*out)->Find(kSpineQuantKey)->AsString(), "none");
  EXPECT_NE((*out)->Find("tokenizer.ggml.merges"), nullptr);

  // Exactly the non-expert tensors, in order, same type, dims and bytes.
  std::vector<const format::TensorRef*> want;
  uint64_t expert_padded = 0;
  for (const auto& t : src.ckpt->tensors()) {
    if (IsRoutedExpertTensor(t.name)) expert_padded += Padded(t.bytes.size(), src.gguf->alignment());
    else want.push_back(&t);
  }
  ASSERT_EQ(src.ckpt->tensors().size() - want.size(), 6u);  // 2 layers x gate/up/down
  ASSERT_EQ((*out)->tensors().size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const format::GgufTensorInfo& t = (*out)->tensors()[i];
    EXPECT_EQ(t.name, want[i]->name);
    EXPECT_EQ(t.type, want[i]->type) << t.name;
    EXPECT_EQ(t.ne, want[i]->ne) << t.name;
    ByteSpan b = (*out)->TensorBytes(t);
    ASSERT_EQ(b.size(), want[i]->bytes.size()) << t.name;
    EXPECT_TRUE(std::equal(b.begin(), b.end(), want[i]->bytes.begin())) << t.name;
    EXPECT_EQ(t.name.find("_exps"), std::string::npos);
  }
  for (const char* name : {"token_embd.weight", "output.weight", "output_norm.weight", "blk.0.ffn_gate_inp.weight",
                           "blk.1.ffn_down_shexp.weight"})
    EXPECT_NE((*out)->FindTensor(name), nullptr) << name;

  // Size: the data section shrinks by exactly the experts' padded bytes; the
  // header by their tensor infos, grown by our three keys.
  const uint64_t src_data = src.gguf->file_size() - src.gguf->data_offset();
  const uint64_t out_data = (*out)->file_size() - (*out)->data_offset();
  EXPECT_EQ(out_data, src_data - expert_padded);
  EXPECT_EQ(spine->dropped_tensors, 6u);
  EXPECT_LE(image->size(), src.gguf->file_size() - spine->dropped_bytes + 256);
  EXPECT_GE(image->size() + 1024, src.gguf->file_size() - spine->dropped_bytes);
}

TEST(Spine, PublishesDeterministicallyAndReopensAsCheckpoint) {
  testing::TempDir dir;
  auto store = blob::BlobStore::Open(dir.Join("blobs"));
  ASSERT_TRUE(store) << store.error().ToString();
  SpineRequest req{.model_id = "tiny-qwen35moe", .checkpoint = testing::DataPath(kTiny)};
  int calls = 0;
  auto a = RunPrepareDense(req, **store, [&](int done, int total, const std::string&) {
    EXPECT_EQ(total, 3);
    EXPECT_EQ(done, calls++);
  });
  ASSERT_TRUE(a) << a.error().ToString();
  EXPECT_EQ(calls, 4);
  auto b = RunPrepareDense(req, **store, nullptr);
  ASSERT_TRUE(b) << b.error().ToString();
  EXPECT_EQ((*a)["hash"], (*b)["hash"]);
  EXPECT_EQ((*a)["uri"].get<std::string>(), "tenzro://blob/" + (*a)["hash"].get<std::string>());
  EXPECT_EQ((*a)["dropped_tensors"], 6);
  EXPECT_EQ((*a)["tensors"], 32);
  EXPECT_EQ((*a)["checkpoint_bytes"], std::filesystem::file_size(testing::DataPath(kTiny)));
  EXPECT_LE((*a)["bytes"].get<uint64_t>(),
            (*a)["checkpoint_bytes"].get<uint64_t>() - (*a)["expert_bytes"].get<uint64_t>() + 256);
  auto list = (*store)->List();
  ASSERT_TRUE(list);
  EXPECT_EQ(list->size(), 1u);  // no staging file left visible
  for (const auto& e : std::filesystem::directory_iterator(dir.Join("blobs")))
    EXPECT_EQ(e.path().filename().string().find("staging"), std::string::npos) << e.path();

  auto hash = blob::ParseHashOrUri((*a)["uri"].get<std::string>());
  ASSERT_TRUE(hash);
  const std::string path = (*store)->DataPath(*hash);
  auto g = format::GgufFile::Open(path);
  ASSERT_TRUE(g) << g.error().ToString();
  // Checkpoint::Open goes by the extension: a .gguf name for the blob's bytes.
  const std::string link = dir.Join("spine.gguf");
  std::filesystem::create_symlink(path, link);
  auto c = format::Checkpoint::Open(link);
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ((*c)->architecture(), "qwen35moe");
  EXPECT_EQ((*c)->n_layers(), 2);
  EXPECT_EQ((*c)->n_experts(0), 0);  // no routed experts left
  EXPECT_TRUE((*c)->Router(1));
  EXPECT_EQ((*c)->GetString(kSpineModelIdKey), "tiny-qwen35moe");
}

TEST(Spine, SplitSetGivesTheSameBlob) {
  // The tiny model re-written as a 3-part llama.cpp split set: the spine drops
  // the split.* keys and must come out byte-identical to the single file's.
  Source src = OpenTiny();
  ASSERT_TRUE(src.ckpt && src.gguf);
  format::GgufWriter w(src.gguf->alignment());
  for (const auto& [k, v] : src.gguf->kv()) w.Set(k, v);
  for (const auto& t : src.gguf->tensors()) ASSERT_TRUE(w.AddTensor(t.name, t.type, t.ne, src.gguf->TensorBytes(t)));
  testing::TempDir dir;
  auto parts = format::WriteGgufSplit(w, dir.Join("tiny"), 3);
  ASSERT_TRUE(parts) << parts.error().ToString();
  auto store = blob::BlobStore::Open(dir.Join("blobs"));
  ASSERT_TRUE(store);
  auto single = RunPrepareDense({.model_id = "tiny", .checkpoint = testing::DataPath(kTiny)}, **store, nullptr);
  auto split = RunPrepareDense({.model_id = "tiny", .checkpoint = parts->front()}, **store, nullptr);
  ASSERT_TRUE(single) << single.error().ToString();
  ASSERT_TRUE(split) << split.error().ToString();
  EXPECT_EQ((*single)["hash"], (*split)["hash"]);
  EXPECT_EQ((*split)["dropped_tensors"], 6);
}

TEST(Spine, QuantConvertsOnlyWeightMatrices) {
  Source src = OpenTiny();
  ASSERT_TRUE(src.ckpt && src.gguf);
  auto spine = BuildSpine(*src.ckpt, *src.gguf, {.model_id = "m", .quant = "q8_0", .threads = 1});
  ASSERT_TRUE(spine) << spine.error().ToString();
  auto image = spine->writer.Serialize();
  ASSERT_TRUE(image);
  auto out = format::GgufFile::Parse(*image, "spine");
  ASSERT_TRUE(out) << out.error().ToString();
  EXPECT_EQ(*(*out)->Find(kSpineQuantKey)->AsString(), "q8_0");
  EXPECT_FALSE(spine->converted.empty());
  std::set<std::string> converted(spine->converted.begin(), spine->converted.end());
  for (const auto& t : src.ckpt->tensors()) {
    if (IsRoutedExpertTensor(t.name)) continue;
    const format::GgufTensorInfo* o = (*out)->FindTensor(t.name);
    ASSERT_NE(o, nullptr) << t.name;
    EXPECT_EQ(o->ne, t.ne);
    if (converted.count(t.name)) {
      EXPECT_TRUE(IsRequantizable(t)) << t.name;
      EXPECT_EQ(o->type, quant::GgmlType::Q8_0) << t.name;
    } else {
      EXPECT_EQ(o->type, t.type) << t.name;
      ByteSpan b = (*out)->TensorBytes(*o);
      EXPECT_TRUE(std::equal(b.begin(), b.end(), t.bytes.begin(), t.bytes.end())) << t.name;
    }
    if (t.name.find("norm") != std::string::npos || t.name.find("ffn_gate_inp") != std::string::npos ||
        t.ne.size() != 2) {
      EXPECT_EQ(converted.count(t.name), 0u) << t.name;
    }
  }
  EXPECT_EQ(converted.count("token_embd.weight"), 1u);
  EXPECT_EQ(converted.count("blk.0.ffn_up_shexp.weight"), 1u);
}

TEST(Spine, Errors) {
  Source src = OpenTiny();
  ASSERT_TRUE(src.ckpt && src.gguf);
  auto bad = BuildSpine(*src.ckpt, *src.gguf, {.model_id = "m", .quant = "q4_k_m"});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(BuildSpine(*src.ckpt, *src.gguf, {.model_id = "m", .quant = "iq2_xxs"}));
  EXPECT_FALSE(BuildSpine(*src.ckpt, *src.gguf, {.model_id = ""}));
  EXPECT_TRUE(SpineRequest::FromJson(json{{"model_id", "m"}, {"quant", "bf16"}}));
  EXPECT_FALSE(SpineRequest::FromJson(json{{"quant", "bf16"}}));
  EXPECT_FALSE(SpineRequest::FromJson(json{{"model_id", "m"}, {"quant", 3}}));

  // Safetensors input is refused clearly.
  testing::TempDir dir;
  format::SafetensorsWriter w;
  std::vector<uint8_t> data(16);
  ASSERT_TRUE(w.AddTensor("model.layers.0.mlp.experts.0.up_proj.weight", format::StDtype::kF32, {2, 2}, data));
  const std::string st = dir.Join("model.safetensors");
  ASSERT_TRUE(w.Write(st));
  auto store = blob::BlobStore::Open(dir.Join("blobs"));
  ASSERT_TRUE(store);
  auto r = RunPrepareDense({.model_id = "m", .checkpoint = st}, **store, nullptr);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kUnsupported) << r.error().ToString();

  // A dense (expert-free) GGUF has no spine to cut.
  format::GgufWriter dense;
  dense.Set("general.architecture", format::GgufValue::Str("llama"));
  std::vector<uint8_t> f32(4 * 32);
  ASSERT_TRUE(dense.AddTensor("token_embd.weight", quant::GgmlType::F32, {32}, f32));
  ASSERT_TRUE(dense.Write(dir.Join("dense.gguf")));
  auto d = RunPrepareDense({.model_id = "m", .checkpoint = dir.Join("dense.gguf")}, **store, nullptr);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code(), ErrorCode::kNotFound) << d.error().ToString();
}

}  // namespace
}  // namespace tenzro::prepare
