// Built-in shapes, expert byte arithmetic, the Q4_K_M rule, budgets, layout
// text and the shape JSON round trip: pure logic, no files.
#include <gtest/gtest.h>

#include "catalog/builtin_shapes.h"
#include "catalog/expert_bytes.h"
#include "catalog/model_shape.h"
#include "catalog/shape_json.h"
#include "catalog/shape_report.h"

namespace tenzro::catalog {
namespace {

using quant::GgmlType;

ModelShape Builtin(const char* id) {
  auto s = BuiltinShape(id);
  EXPECT_TRUE(s) << (s ? "" : s.error().ToString());
  return s ? *s : ModelShape{};
}

FormatBytes Bytes(const ModelShape& s, const char* format, std::optional<uint64_t> budget = std::nullopt) {
  auto b = BytesForFormat(s, format, budget);
  EXPECT_TRUE(b) << (b ? "" : b.error().ToString());
  return b ? *b : FormatBytes{};
}

TEST(BuiltinShapes, AllValidateAndMatchTheirConfigs) {
  for (const std::string& id : BuiltinIds()) {
    ModelShape s = Builtin(id.c_str());
    EXPECT_EQ(s.id, id);
    EXPECT_TRUE(s.Validate()) << id;
  }
  struct Want { const char* id; int layers; int64_t embd; int experts; int used; int64_t ff; int shared; int64_t ff_sh; };
  const Want wants[] = {
      {"qwen3.5-397b-a17b", 60, 4096, 512, 10, 1024, 1, 1024},
      {"qwen3.5-122b-a10b", 48, 3072, 256, 8, 1024, 1, 1024},
      {"qwen3.5-35b-a3b", 40, 2048, 256, 8, 512, 1, 512},
      {"qwen3-30b-a3b", 48, 2048, 128, 8, 768, 0, 0},
      {"qwen3-235b-a22b", 94, 4096, 128, 8, 1536, 0, 0},
      {"qwen3-next-80b-a3b", 48, 2048, 512, 10, 512, 1, 512},
      {"deepseek-v3", 61, 7168, 256, 8, 2048, 1, 2048},
      {"mixtral-8x7b", 32, 4096, 8, 2, 14336, 0, 0},
      {"gpt-oss-120b", 36, 2880, 128, 4, 2880, 0, 0},
      {"gpt-oss-20b", 24, 2880, 32, 4, 2880, 0, 0},
      {"tiny-qwen35moe", 2, 256, 8, 2, 512, 1, 512},
  };
  for (const Want& w : wants) {
    SCOPED_TRACE(w.id);
    ModelShape s = Builtin(w.id);
    EXPECT_EQ(s.n_layer, w.layers);
    EXPECT_EQ(s.n_embd, w.embd);
    EXPECT_EQ(s.n_expert, w.experts);
    EXPECT_EQ(s.n_expert_used, w.used);
    EXPECT_EQ(s.n_ff_exp, w.ff);
    EXPECT_EQ(s.n_shared_expert, w.shared);
    EXPECT_EQ(s.n_ff_shexp, w.ff_sh);
  }
  EXPECT_EQ(BuiltinIds().size(), std::size(wants));
}

TEST(BuiltinShapes, LookupIsCaseInsensitiveAndUnknownListsIds) {
  EXPECT_TRUE(BuiltinShape("Qwen3.5-397B-A17B"));
  auto r = BuiltinShape("no-such-model");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(r.error().message().find("qwen3.5-397b-a17b"), std::string::npos);
  EXPECT_NE(r.error().message().find("gpt-oss-20b"), std::string::npos);
}

TEST(BuiltinShapes, AttentionLayoutsAndRouting) {
  ModelShape q = Builtin("qwen3.5-397b-a17b");
  EXPECT_EQ(q.layers[0].attention, AttentionKind::kLinear);
  EXPECT_EQ(q.layers[2].attention, AttentionKind::kLinear);
  EXPECT_EQ(q.layers[3].attention, AttentionKind::kFull);
  EXPECT_EQ(q.layers[59].attention, AttentionKind::kFull);
  EXPECT_EQ(q.routing.kind, RoutingKind::kSoftmaxTopkRenorm);
  EXPECT_EQ(DescribeLayout(q),
            "60 layers: 45 x linear-attention MoE, 15 x full-attention MoE (pattern 3 linear + 1 full)");
  EXPECT_EQ(q.total_experts(), 60u * 512);

  ModelShape next = Builtin("qwen3-next-80b-a3b");
  EXPECT_EQ(next.layers[3].attention, AttentionKind::kFull);
  EXPECT_EQ(next.layers[4].attention, AttentionKind::kLinear);

  ModelShape ds = Builtin("deepseek-v3");
  EXPECT_FALSE(ds.layers[0].moe);
  EXPECT_FALSE(ds.layers[2].moe);
  EXPECT_TRUE(ds.layers[3].moe);
  EXPECT_EQ(ds.layers[0].n_expert, 0);
  EXPECT_EQ(ds.n_moe_layers(), 58);
  EXPECT_EQ(ds.total_experts(), 58u * 256);
  EXPECT_EQ(ds.routing.kind, RoutingKind::kSigmoidGroupTopk);
  EXPECT_EQ(ds.routing.n_group, 8);
  EXPECT_EQ(ds.routing.topk_group, 4);
  EXPECT_TRUE(ds.routing.selection_bias);
  EXPECT_EQ(DescribeLayout(ds), "61 layers: 3 x full-attention dense, 58 x full-attention MoE (first 3 dense)");

  ModelShape oss = Builtin("gpt-oss-120b");
  EXPECT_EQ(oss.layers[0].attention, AttentionKind::kSliding);
  EXPECT_EQ(oss.layers[1].attention, AttentionKind::kFull);
  EXPECT_EQ(oss.routing.kind, RoutingKind::kTopkSoftmax);
  EXPECT_EQ(DescribeLayout(oss),
            "36 layers: 18 x sliding-attention MoE, 18 x full-attention MoE (pattern 1 sliding + 1 full)");
  EXPECT_EQ(Builtin("mixtral-8x7b").routing.kind, RoutingKind::kTopkSoftmax);

  ModelShape tiny = Builtin("tiny-qwen35moe");
  EXPECT_EQ(tiny.layers[0].attention, AttentionKind::kLinear);
  EXPECT_EQ(tiny.layers[1].attention, AttentionKind::kFull);
  EXPECT_EQ(DescribeLayout(tiny), "2 layers: 1 x linear-attention MoE, 1 x full-attention MoE");
}

TEST(ExpertBytes, Qwen35_122bAtQ4KAndWithQ6KDown) {
  ModelShape s = Builtin("qwen3.5-122b-a10b");
  auto q4 = ExpertBytes(s.n_embd, s.n_ff_exp, {GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q4_K});
  ASSERT_TRUE(q4);
  EXPECT_EQ(*q4, 5308416u);
  auto q6down = ExpertBytes(s.n_embd, s.n_ff_exp, {GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q6_K});
  ASSERT_TRUE(q6down);
  EXPECT_EQ(*q6down, 6119424u);

  FormatBytes q4km = Bytes(s, "q4_k_m");
  EXPECT_EQ(q4km.bytes_min, 5308416u);
  EXPECT_EQ(q4km.bytes_max, 6119424u);
  EXPECT_EQ(q4km.layers_at_max, 24);
  EXPECT_EQ(q4km.total_bytes, 256u * (24 * 5308416ull + 24 * 6119424ull));
  FormatBytes q4k = Bytes(s, "q4_k");
  EXPECT_EQ(q4k.bytes_min, 5308416u);
  EXPECT_EQ(q4k.bytes_max, 5308416u);
  EXPECT_EQ(q4k.total_bytes, 48ull * 256 * 5308416);
}

TEST(ExpertBytes, EveryFormatOnTiny) {
  ModelShape s = Builtin("tiny-qwen35moe");
  const uint64_t elems = 3ull * 256 * 512;
  EXPECT_EQ(Bytes(s, "f32").bytes_max, elems * 4);
  EXPECT_EQ(Bytes(s, "f16").bytes_max, elems * 2);
  EXPECT_EQ(Bytes(s, "bf16").bytes_max, 786432u);
  EXPECT_EQ(Bytes(s, "q8_0").bytes_max, elems / 32 * 34);
  EXPECT_EQ(Bytes(s, "q6_k").bytes_max, elems / 256 * 210);
  EXPECT_EQ(Bytes(s, "q5_k").bytes_max, elems / 256 * 176);
  EXPECT_EQ(Bytes(s, "q4_k").bytes_max, elems / 256 * 144);
  EXPECT_EQ(Bytes(s, "mxfp4").bytes_max, elems / 32 * 17);
  // n = 2: n/8 = 0, 7n/8 = 1 -> layer 1 gets Q6_K down, layer 0 Q4_K.
  FormatBytes q4km = Bytes(s, "q4_k_m");
  EXPECT_EQ(q4km.bytes_min, 221184u);
  EXPECT_EQ(q4km.bytes_max, 254976u);
  EXPECT_EQ(q4km.layers_at_max, 1);
  auto bad = BytesForFormat(s, "q3_k_xl", std::nullopt);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
}

TEST(Q4KM, UseMoreBitsRule) {
  // n = 48: n/8 = 6, 7n/8 = 42.
  std::vector<int> q6;
  for (int i = 0; i < 48; ++i)
    if (Q4KMDownType(i, 48) == GgmlType::Q6_K) q6.push_back(i);
  std::vector<int> want48 = {0, 1, 2, 3, 4, 5, 8, 11, 14, 17, 20, 23, 26, 29, 32, 35, 38, 41, 42, 43, 44, 45, 46, 47};
  EXPECT_EQ(q6, want48);
  // n = 60: n/8 = 7, 7n/8 = 52.
  q6.clear();
  for (int i = 0; i < 60; ++i)
    if (UseMoreBits(i, 60)) q6.push_back(i);
  std::vector<int> want60 = {0, 1, 2, 3, 4, 5, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33, 36, 39, 42, 45, 48, 51,
                             52, 53, 54, 55, 56, 57, 58, 59};
  EXPECT_EQ(q6, want60);
  ModelShape s = Builtin("qwen3.5-397b-a17b");
  for (int i = 0; i < 60; ++i) EXPECT_EQ(s.layers[i].q4_k_m_down_type, Q4KMDownType(i, 60)) << i;
  EXPECT_EQ(Bytes(s, "q4_k_m").layers_at_max, 30);
}

TEST(ExpertBytes, GptOssKQuantsAreNotApplicable) {
  for (const char* id : {"gpt-oss-120b", "gpt-oss-20b"}) {
    ModelShape s = Builtin(id);
    for (const char* f : {"q4_k", "q5_k", "q6_k", "q4_k_m"}) {
      FormatBytes b = Bytes(s, f);
      EXPECT_FALSE(b.applicable) << id << " " << f;
      EXPECT_EQ(b.not_applicable, "row 2880 not a multiple of 256");
      EXPECT_EQ(b.total_bytes, 0u);
    }
    const uint64_t elems = 3ull * 2880 * 2880;
    FormatBytes mx = Bytes(s, "mxfp4");
    EXPECT_TRUE(mx.applicable);
    EXPECT_EQ(mx.bytes_max, elems / 32 * 17);
    EXPECT_EQ(Bytes(s, "q8_0").bytes_max, elems / 32 * 34);
  }
  ModelShape s = Builtin("gpt-oss-120b");
  std::string text = ShapeReportText(*BuildShapeReport({s, ShapeSource::kBuiltin}, std::nullopt));
  EXPECT_NE(text.find("q4_k    n/a: row 2880 not a multiple of 256"), std::string::npos) << text;
}

TEST(ExpertBytes, BudgetArithmetic) {
  ModelShape s = Builtin("qwen3.5-122b-a10b");
  const uint64_t budget = 256ull << 20;  // 268435456
  FormatBytes q4k = Bytes(s, "q4_k", budget);
  ASSERT_TRUE(q4k.fit_any_layer);
  EXPECT_EQ(*q4k.fit_any_layer, 268435456u / 5308416u);  // 50
  EXPECT_EQ(*q4k.fit_any_layer, 50u);
  EXPECT_EQ(*q4k.fit_best_layer, 50u);
  FormatBytes q4km = Bytes(s, "q4_k_m", budget);
  EXPECT_EQ(*q4km.fit_any_layer, 268435456u / 6119424u);  // 43
  EXPECT_EQ(*q4km.fit_any_layer, 43u);
  EXPECT_EQ(*q4km.fit_best_layer, 50u);
  FormatBytes f32 = Bytes(s, "f32", budget);
  EXPECT_EQ(*f32.fit_any_layer, 268435456u / (3ull * 3072 * 1024 * 4));  // 7
  // Smaller than one expert: none fit.
  EXPECT_EQ(*Bytes(s, "f32", 1000).fit_any_layer, 0u);
  EXPECT_FALSE(Bytes(s, "f32").fit_any_layer);
  // Not applicable formats have no fit.
  EXPECT_FALSE(Bytes(Builtin("gpt-oss-20b"), "q4_k", budget).fit_any_layer);
  EXPECT_FALSE(BytesForFormat(s, "f32", 0));
}

TEST(ExpertShare, EstimatedFromNominalParams) {
  ModelShape s = Builtin("qwen3.5-122b-a10b");
  auto share = ExpertsShare(s);
  ASSERT_TRUE(share);
  EXPECT_TRUE(share->estimated);
  EXPECT_EQ(share->expert_bytes, 48ull * 256 * 3 * 3072 * 1024);
  EXPECT_NEAR(share->share, 115964116992.0 / 122e9, 1e-9);
  EXPECT_FALSE(ExpertsShare(Builtin("tiny-qwen35moe")));  // no nominal count
}

TEST(ShapeJson, RoundTripsAndRejectsBadFields) {
  for (const std::string& id : BuiltinIds()) {
    ModelShape s = Builtin(id.c_str());
    s.layers[0].gate_type = GgmlType::Q4_K;
    s.layers[0].up_type = GgmlType::Q4_K;
    s.layers[0].down_type = GgmlType::Q6_K;
    s.layers[0].stored_expert_bytes = 12345;
    s.checkpoint = CheckpointFacts{"/x/y.gguf", "gguf", 100, 80};
    nlohmann::json j = ShapeToJson(s);
    auto back = ShapeFromJson(nlohmann::json::parse(j.dump()), "test");
    ASSERT_TRUE(back) << back.error().ToString();
    EXPECT_EQ(ShapeToJson(*back), j) << id;
  }
  nlohmann::json j = ShapeToJson(Builtin("deepseek-v3"));
  j["n_expert_used"] = 999;
  auto r = ShapeFromJson(j, "cat.json");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kCorruption);
  EXPECT_NE(r.error().message().find("cat.json"), std::string::npos);
  j = ShapeToJson(Builtin("deepseek-v3"));
  j["layers"][3]["attention"] = "diagonal";
  r = ShapeFromJson(j, "cat.json");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("attention"), std::string::npos) << r.error().message();
  j = ShapeToJson(Builtin("deepseek-v3"));
  j["routing"]["kind"] = 7;
  EXPECT_FALSE(ShapeFromJson(j, "cat.json"));
  j = ShapeToJson(Builtin("deepseek-v3"));
  j["layers"].erase(0);
  EXPECT_FALSE(ShapeFromJson(j, "cat.json"));
  EXPECT_FALSE(ShapeFromJson(nlohmann::json::array(), "cat.json"));
}

TEST(ShapeReport, TextAndJsonCarryTheFacts) {
  ModelShape s = Builtin("qwen3.5-397b-a17b");
  auto rep = BuildShapeReport({s, ShapeSource::kBuiltin}, 256ull << 20);
  ASSERT_TRUE(rep);
  std::string text = ShapeReportText(*rep);
  EXPECT_NE(text.find("60 layers: 45 x linear-attention MoE, 15 x full-attention MoE (pattern 3 linear + 1 full)"),
            std::string::npos) << text;
  EXPECT_NE(text.find("estimated"), std::string::npos);
  nlohmann::json j = ShapeReportJson(*rep);
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["source"], "builtin");
  EXPECT_EQ(j["total_experts"], 30720);
  EXPECT_EQ(j["budget_bytes"], 256ull << 20);
  EXPECT_EQ(j["shape"]["n_expert_used"], 10);
  EXPECT_EQ(j["experts_share"]["estimated"], true);
  bool saw = false;
  for (auto& f : j["expert_bytes"])
    if (f["format"] == "q4_k") {
      saw = true;
      EXPECT_EQ(f["bytes_max"], 3ull * 1024 * 4096 / 256 * 144);
    }
  EXPECT_TRUE(saw);
}

}  // namespace
}  // namespace tenzro::catalog
