// The fuzz seed corpora (tests/fuzz/corpus/<target>/) are tiny valid files
// made by the writers here. They are checked to parse and be up to date;
// TENZRO_WRITE_FUZZ_SEEDS=1 regenerates them.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/file.h"
#include "format/checkpoint_open.h"
#include "format/gguf_reader.h"
#include "format/gguf_writer.h"
#include "format/safetensors_reader.h"
#include "testutil/testutil.h"

namespace tenzro::format {
namespace {

std::string CorpusDir(const std::string& target) { return testing::DataPath("../fuzz/corpus/" + target); }

Bytes Pattern(size_t n) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(i * 13 + 5);
  return b;
}

std::vector<std::pair<std::string, Bytes>> GgufSeeds() {
  std::vector<std::pair<std::string, Bytes>> out;
  static const Bytes data = Pattern(8 * 4 * 2 * 4);
  {
    GgufWriter w;
    w.Set("general.architecture", GgufValue::Str("qwen35moe"));
    w.Set("qwen35moe.expert_count", GgufValue::U32(2));
    w.Set("tokens", GgufValue::StringArray({"a", "b"}));
    w.Set("scores", GgufValue::FloatArray({0.5f, -1.0f}));
    w.Set("nested", GgufValue::NestedArray({GgufValue::IntArray(GgufType::kInt8, {1, 2})}));
    for (const char* p : {"gate", "up", "down"})
      (void)w.AddTensor(fmt::format("blk.0.ffn_{}_exps.weight", p), quant::GgmlType::F32, {8, 4, 2},
                        ByteSpan(data).subspan(0, 256));
    (void)w.AddTensor("blk.0.ffn_gate_inp.weight", quant::GgmlType::F32, {8, 2}, ByteSpan(data).subspan(0, 64));
    (void)w.AddTensor("blk.0.ffn_gate_shexp.weight", quant::GgmlType::F32, {8, 4}, ByteSpan(data).subspan(0, 128));
    (void)w.AddTensor("blk.0.ffn_gate_inp_shexp.weight", quant::GgmlType::F32, {8}, ByteSpan(data).subspan(0, 32));
    out.emplace_back("moe.gguf", *w.Serialize());
  }
  {
    GgufWriter w(64);
    w.Set("split.no", GgufValue::U16(0));
    (void)w.AddTensor("q", quant::GgmlType::Q8_0, {32, 1}, ByteSpan(data).subspan(0, 34));
    out.emplace_back("aligned64.gguf", *w.Serialize());
  }
  out.emplace_back("empty.gguf", *GgufWriter().Serialize());
  return out;
}

std::vector<std::pair<std::string, Bytes>> SafetensorsSeeds() {
  std::vector<std::pair<std::string, Bytes>> out;
  static const Bytes data = Pattern(2 * 2 * 4 * 8);
  {
    SafetensorsWriter w;
    w.SetMetadata("format", "pt");
    for (int e = 0; e < 2; ++e)
      for (const char* p : {"gate", "up", "down"})
        (void)w.AddTensor(fmt::format("model.layers.0.mlp.experts.{}.{}_proj.weight", e, p), StDtype::kBF16, {4, 8},
                          ByteSpan(data).subspan(0, 64));
    (void)w.AddTensor("model.layers.0.mlp.gate.weight", StDtype::kF32, {2, 8}, ByteSpan(data).subspan(0, 64));
    (void)w.AddTensor("model.layers.0.mlp.shared_expert_gate.weight", StDtype::kF16, {1, 8},
                      ByteSpan(data).subspan(0, 16));
    out.emplace_back("per_expert.safetensors", *w.Serialize());
  }
  {
    SafetensorsWriter w;
    (void)w.AddTensor("model.language_model.layers.0.mlp.experts.gate_up_proj", StDtype::kBF16, {2, 8, 4}, data);
    (void)w.AddTensor("model.language_model.layers.0.mlp.experts.down_proj", StDtype::kBF16, {2, 4, 4},
                      ByteSpan(data).subspan(0, 64));
    out.emplace_back("packed.safetensors", *w.Serialize());
  }
  {
    SafetensorsWriter w;
    (void)w.AddTensor("model.layers.1.block_sparse_moe.experts.0.w1.weight", StDtype::kF8E4M3, {2, 8},
                      ByteSpan(data).subspan(0, 16));
    (void)w.AddTensor("x", StDtype::kBool, {3}, ByteSpan(data).subspan(0, 3));
    out.emplace_back("mixtral_f8.safetensors", *w.Serialize());
  }
  return out;
}

void CheckOrWrite(const std::string& target, const std::vector<std::pair<std::string, Bytes>>& seeds) {
  const bool write = std::getenv("TENZRO_WRITE_FUZZ_SEEDS") != nullptr;
  for (const auto& [name, bytes] : seeds) {
    std::string path = CorpusDir(target) + "/" + name;
    if (write) {
      ASSERT_TRUE(MakeDirs(CorpusDir(target)));
      ASSERT_TRUE(WriteFileAtomic(path, bytes));
    }
    ASSERT_TRUE(PathExists(path)) << path << " missing: run with TENZRO_WRITE_FUZZ_SEEDS=1";
    EXPECT_EQ(testing::ReadAll(path), bytes) << path << " is stale: run with TENZRO_WRITE_FUZZ_SEEDS=1";
  }
}

TEST(FuzzSeeds, GgufSeedsParseAndAreCurrent) {
  auto seeds = GgufSeeds();
  for (const auto& [name, bytes] : seeds) {
    auto f = GgufFile::Parse(bytes, name);
    ASSERT_TRUE(f) << f.error().ToString();
    std::vector<std::unique_ptr<GgufFile>> parts;
    parts.push_back(std::move(*f));
    ASSERT_TRUE(MakeGgufCheckpoint(std::move(parts)));
  }
  CheckOrWrite("gguf_fuzz", seeds);
}

TEST(FuzzSeeds, SafetensorsSeedsParseAndAreCurrent) {
  auto seeds = SafetensorsSeeds();
  for (const auto& [name, bytes] : seeds) {
    auto f = SafetensorsFile::Parse(bytes, name);
    ASSERT_TRUE(f) << f.error().ToString();
  }
  CheckOrWrite("safetensors_fuzz", seeds);
}

}  // namespace
}  // namespace tenzro::format
