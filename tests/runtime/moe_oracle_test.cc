// Golden test against ggml (tests/data/moe, see tests/data/README.md): the
// tiny Qwen3.5-MoE checkpoints in BF16 and Q4_K_M, both layers. Routing must
// equal the oracle's (same experts, same order, weights within 1e-5); the
// block output must be at least as close to the f64 reference as ggml's own
// CPU backend was (ggml_vs_ref_rel_l2), for routed-only and routed + shared.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/file.h"
#include "format/checkpoint.h"
#include "runtime/moe_block.h"
#include "testutil/testutil.h"

namespace tenzro::runtime {
namespace {

using format::Projection;
using tenzro::testing::DataPath;
using tenzro::testing::ReadF32;
using tenzro::testing::RelL2;

WeightMatrix FromSlab(const format::ExpertSlab& s) {
  auto m = WeightMatrix::Borrow(s.type, s.row_len, s.rows, s.bytes);
  EXPECT_TRUE(m) << s.tensor << ": " << m.error().ToString();
  return m ? *m : WeightMatrix{};
}

WeightMatrix FromTensor(const format::TensorRef& t) {
  const int64_t rows = t.ne.size() > 1 ? t.ne[1] : 1;
  auto m = WeightMatrix::Borrow(t.type, t.ne[0], rows, t.bytes);
  EXPECT_TRUE(m) << t.name << ": " << m.error().ToString();
  return m ? *m : WeightMatrix{};
}

ExpertWeights ExpertFrom(const format::Checkpoint& ck, int layer, int e) {
  ExpertWeights w;
  w.gate = FromSlab(*ck.Expert(layer, e, Projection::kGate));
  w.up = FromSlab(*ck.Expert(layer, e, Projection::kUp));
  w.down = FromSlab(*ck.Expert(layer, e, Projection::kDown));
  return w;
}

TEST(MoeOracleTest, MatchesGgmlOracle) {
  auto text = ReadTextFile(DataPath("moe/tiny-qwen35moe.moe-oracle.json"));
  ASSERT_TRUE(text) << text.error().ToString();
  const nlohmann::json oracle = nlohmann::json::parse(*text);
  const int n_tok = oracle["n_tokens"];
  const int64_t n_embd = oracle["d_model"];
  const int top_k = oracle["n_expert_used"];
  const std::vector<float> hidden = ReadF32(DataPath("moe/" + oracle["hidden"].get<std::string>()));
  ASSERT_EQ(hidden.size(), static_cast<size_t>(n_tok * n_embd));
  ThreadPool pool(2);

  int checked = 0;
  for (const auto& c : oracle["cases"]) {
    const std::string weights = c["weights"];
    const int layer = c["layer"];
    SCOPED_TRACE(fmt::format("{} layer {}", weights, layer));
    auto ck = format::Checkpoint::Open(DataPath("moe/tiny-qwen35moe-" + weights + ".gguf"));
    ASSERT_TRUE(ck) << ck.error().ToString();

    MoeBlockWeights block;
    auto router = (*ck)->Router(layer);
    ASSERT_TRUE(router) << router.error().ToString();
    block.router.w = FromTensor(*router);
    block.routing.kind = RoutingKind::kSoftmaxTopK;
    block.routing.top_k = top_k;
    block.routing.norm_topk_prob = true;
    const int n_expert = (*ck)->n_experts(layer);
    ASSERT_EQ(n_expert, static_cast<int>(oracle["n_expert"]));
    std::vector<ExpertWeights> experts;
    for (int e = 0; e < n_expert; ++e) experts.push_back(ExpertFrom(**ck, layer, e));
    for (const auto& e : experts) block.experts.push_back(&e);
    SharedExpertWeights shared;
    shared.ffn.gate = FromSlab(*(*ck)->SharedExpert(layer, Projection::kGate));
    shared.ffn.up = FromSlab(*(*ck)->SharedExpert(layer, Projection::kUp));
    shared.ffn.down = FromSlab(*(*ck)->SharedExpert(layer, Projection::kDown));
    auto sg = (*ck)->SharedExpertGate(layer);
    ASSERT_TRUE(sg) << sg.error().ToString();
    shared.gate_inp = FromTensor(*sg);
    block.shared = shared;

    const double bound = c["ggml_vs_ref_rel_l2"];
    for (bool full : {false, true}) {
      std::vector<float> out(n_tok * n_embd);
      auto routing = ComputeMoeBlock(block, hidden.data(), n_tok, out.data(), &pool, {.include_shared = full});
      ASSERT_TRUE(routing) << routing.error().ToString();
      // Routing: same experts in the same order, weights within 1e-5.
      ASSERT_EQ(routing->size(), c["routings"].size());
      for (const auto& r : c["routings"]) {
        const int t = r["token_index"];
        const auto& got = (*routing)[t].experts;
        ASSERT_EQ(got.size(), r["experts"].size()) << "token " << t;
        for (size_t k = 0; k < got.size(); ++k) {
          EXPECT_EQ(got[k].expert, r["experts"][k]["expert"].get<int>()) << "token " << t << " k " << k;
          EXPECT_NEAR(got[k].weight, r["experts"][k]["weight"].get<double>(), 1e-5) << "token " << t;
        }
      }
      const std::vector<float> ref = ReadF32(DataPath("moe/" + c[full ? "full_ref" : "routed_ref"].get<std::string>()));
      const std::vector<float> ggml = ReadF32(DataPath("moe/" + c[full ? "full_ggml" : "routed_ggml"].get<std::string>()));
      ASSERT_EQ(ref.size(), out.size());
      const double err = RelL2(out, ref);
      EXPECT_LE(err, bound) << (full ? "full" : "routed") << ": ggml's own error " << RelL2(ggml, ref);
      std::printf("[ oracle ] %-6s layer %d %-6s rel_l2 %.3e  (ggml %.3e, bound %.3e)\n", weights.c_str(), layer,
                  full ? "full" : "routed", err, RelL2(ggml, ref), bound);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 8);
}

}  // namespace
}  // namespace tenzro::runtime
