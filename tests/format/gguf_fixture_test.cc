// The ggml-written tiny Qwen3.5-MoE checkpoints (tests/data/moe) through the
// GGUF reader and the Checkpoint MoE view, checked against ggml's slices.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/file.h"
#include "format/checkpoint.h"
#include "format/gguf_reader.h"
#include "format/gguf_writer.h"
#include "testutil/testutil.h"

namespace tenzro::format {
namespace {

using testing::DataPath;

nlohmann::json Slices() {
  auto text = ReadTextFile(DataPath("moe/tiny-qwen35moe.slices.json"));
  EXPECT_TRUE(text.has_value());
  return nlohmann::json::parse(*text);
}

class FixtureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FixtureTest, ExpertSlabsMatchGgml) {
  const std::string variant = GetParam();
  auto ck = Checkpoint::Open(DataPath("moe/tiny-qwen35moe-" + variant + ".gguf"));
  ASSERT_TRUE(ck) << ck.error().ToString();
  const Checkpoint& c = **ck;
  EXPECT_EQ(c.format(), CheckpointFormat::kGguf);
  EXPECT_EQ(c.architecture(), "qwen35moe");
  EXPECT_EQ(c.GetInt("qwen35moe.block_count"), 2);
  EXPECT_EQ(c.GetInt("qwen35moe.expert_count"), 8);
  EXPECT_EQ(c.GetInt("qwen35moe.expert_used_count"), 2);
  EXPECT_EQ(c.GetInt("qwen35moe.embedding_length"), 256);
  EXPECT_EQ(c.GetInt("qwen35moe.expert_feed_forward_length"), 512);
  EXPECT_EQ(c.GetInt("qwen35moe.expert_shared_feed_forward_length"), 512);
  EXPECT_EQ(c.GetInt("qwen35moe.full_attention_interval"), 2);
  EXPECT_NEAR(*c.GetFloat("qwen35moe.rope.freq_base"), 1e7, 1);
  EXPECT_EQ(c.GetString("general.name"), "tiny-qwen35moe");
  EXPECT_FALSE(c.GetString("qwen35moe.block_count"));  // wrong kind
  EXPECT_FALSE(c.GetInt("no.such.key"));
  EXPECT_EQ(c.n_layers(), 2);
  EXPECT_EQ(c.files().size(), 1u);

  const std::string slice_key = variant == "BF16" ? "bf16_slice" : "q4km_slice";
  const std::vector<int64_t> shapes[3] = {{256, 512, 8}, {256, 512, 8}, {512, 256, 8}};
  for (int l = 0; l < 2; ++l) {
    EXPECT_EQ(c.n_experts(l), 8);
    for (Projection p : kProjections) {
      const TensorRef* t = c.FindTensor(fmt::format("blk.{}.ffn_{}_exps.weight", l, ProjectionName(p)));
      ASSERT_NE(t, nullptr);
      EXPECT_EQ(t->ne, shapes[static_cast<int>(p)]);
      EXPECT_EQ(t->file, c.files()[0]);
    }
    auto router = c.Router(l);
    ASSERT_TRUE(router) << router.error().ToString();
    EXPECT_EQ(router->type, quant::GgmlType::F32);
    EXPECT_EQ(router->ne, (std::vector<int64_t>{256, 8}));
    auto gate = c.SharedExpertGate(l);
    ASSERT_TRUE(gate);
    EXPECT_EQ(gate->ne, (std::vector<int64_t>{256}));
    for (Projection p : kProjections) {
      auto s = c.SharedExpert(l, p);
      ASSERT_TRUE(s) << s.error().ToString();
      EXPECT_EQ(s->rows * s->row_len, 256 * 512);
    }
  }
  // Every (layer, expert, projection) slab hashes to ggml's.
  int checked = 0;
  const nlohmann::json slices = Slices();
  for (const auto& e : slices["experts"]) {
    int l = e["layer"], x = e["expert"];
    for (Projection p : kProjections) {
      const auto& want = e[std::string(ProjectionName(p))];
      auto s = c.Expert(l, x, p);
      ASSERT_TRUE(s) << s.error().ToString();
      EXPECT_EQ(s->row_len, want["ne"][0].get<int64_t>());
      EXPECT_EQ(s->rows, want["ne"][1].get<int64_t>());
      EXPECT_EQ(testing::Sha256Hex(s->bytes), want[slice_key].get<std::string>()) << l << "/" << x;
      // file_offset addresses the same bytes in the file.
      auto map = MappedFile::Open(s->file);
      ASSERT_TRUE(map);
      EXPECT_EQ(0, memcmp((*map)->bytes().data() + s->file_offset, s->bytes.data(), s->bytes.size()));
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2 * 8 * 3);
  if (variant == "Q4_K_M") {
    EXPECT_EQ(c.Expert(0, 0, Projection::kDown)->type, quant::GgmlType::Q4_K);
    EXPECT_EQ(c.Expert(1, 0, Projection::kDown)->type, quant::GgmlType::Q6_K);
  }
  auto bad = c.Expert(0, 8, Projection::kGate);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(bad.error().message().find("expert 8"), std::string::npos);
  EXPECT_EQ(c.Expert(2, 0, Projection::kGate).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(c.Router(5).error().code(), ErrorCode::kNotFound);
}

// Rebuilding the file with GgufWriter from what the reader saw reproduces
// ggml's own output byte for byte: the writer lays files out as llama.cpp does.
TEST_P(FixtureTest, WriterReproducesGgmlBytes) {
  const std::string path = DataPath("moe/tiny-qwen35moe-" + GetParam() + ".gguf");
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f) << f.error().ToString();
  GgufWriter w((*f)->alignment());
  for (const auto& [k, v] : (*f)->kv()) w.Set(k, v);
  for (const auto& t : (*f)->tensors()) ASSERT_TRUE(w.AddTensor(t.name, t.type, t.ne, (*f)->TensorBytes(t)));
  auto image = w.Serialize();
  ASSERT_TRUE(image);
  auto original = MappedFile::Open(path);
  ASSERT_TRUE(original);
  ASSERT_EQ(image->size(), (*original)->size());
  EXPECT_TRUE(std::equal(image->begin(), image->end(), (*original)->bytes().begin()));
}

INSTANTIATE_TEST_SUITE_P(Variants, FixtureTest, ::testing::Values("BF16", "Q4_K_M"));

TEST(GgufFixture, TruncatedFixtureNeverCrashes) {
  auto map = MappedFile::Open(DataPath("moe/tiny-qwen35moe-Q4_K_M.gguf"));
  ASSERT_TRUE(map);
  ByteSpan all = (*map)->bytes();
  for (uint64_t n : {0ul, 3ul, 4ul, 8ul, 23ul, 24ul, 100ul, 1000ul, 2000ul, 4096ul, all.size() / 2, all.size() - 1}) {
    auto f = GgufFile::Parse(all.subspan(0, n), "trunc.gguf");
    ASSERT_FALSE(f) << n;
    EXPECT_EQ(f.error().code(), ErrorCode::kCorruption);
    EXPECT_NE(f.error().message().find("trunc.gguf"), std::string::npos) << f.error().message();
  }
  ASSERT_TRUE(GgufFile::Parse(all, "full.gguf"));
}

}  // namespace
}  // namespace tenzro::format
