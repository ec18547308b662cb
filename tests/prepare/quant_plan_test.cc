#include "prepare/quant_plan.h"

#include <gtest/gtest.h>

namespace tenzro::prepare {
namespace {

using format::Projection;
using quant::GgmlType;

TEST(QuantPlan, DefaultIsDenseF32) {
  QuantPlan p;
  EXPECT_EQ(p.TypeFor(Projection::kDown, 0, 48), GgmlType::F32);
  EXPECT_EQ(p.name(), "f32");
}

TEST(QuantPlan, Q4KMFollowsUseMoreBits) {
  auto p = QuantPlan::FromPreset("Q4_K_M");
  ASSERT_TRUE(p);
  // The tiny fixture: 2 layers; layer 0 down Q4_K, layer 1 down Q6_K (fixtures README).
  EXPECT_EQ(p->TypeFor(Projection::kDown, 0, 2), GgmlType::Q4_K);
  EXPECT_EQ(p->TypeFor(Projection::kDown, 1, 2), GgmlType::Q6_K);
  EXPECT_EQ(p->TypeFor(Projection::kGate, 1, 2), GgmlType::Q4_K);
  // n = 48: n/8 = 6, 7n/8 = 42.
  int q6 = 0;
  for (int i = 0; i < 48; ++i) q6 += p->TypeFor(Projection::kDown, i, 48) == GgmlType::Q6_K;
  // layers 0..5, 42..47, and (i-6)%3==2 for 6<=i<42: i = 8, 11, ..., 41 (12 layers)
  EXPECT_EQ(q6, 6 + 6 + 12);
  EXPECT_EQ(p->TypeFor(Projection::kDown, 8, 48), GgmlType::Q6_K);
  EXPECT_EQ(p->TypeFor(Projection::kDown, 9, 48), GgmlType::Q4_K);
}

TEST(QuantPlan, PresetsAndErrors) {
  EXPECT_EQ(QuantPlan::FromPreset("q8_0")->TypeFor(Projection::kUp, 3, 10), GgmlType::Q8_0);
  EXPECT_EQ(QuantPlan::FromPreset("q6_k")->TypeFor(Projection::kGate, 3, 10), GgmlType::Q6_K);
  auto bad = QuantPlan::FromPreset("q3_k_s");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.error().message().find("q3_k_s"), std::string::npos);
}

TEST(QuantPlan, JsonPerProjection) {
  auto p = QuantPlan::FromJson(R"({"gate": "q4_k", "up": "Q5_K", "down": "q6_k"})");
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_EQ(p->TypeFor(Projection::kGate, 0, 2), GgmlType::Q4_K);
  EXPECT_EQ(p->TypeFor(Projection::kUp, 0, 2), GgmlType::Q5_K);
  EXPECT_EQ(p->TypeFor(Projection::kDown, 0, 2), GgmlType::Q6_K);
  EXPECT_FALSE(QuantPlan::FromJson("{"));
  EXPECT_FALSE(QuantPlan::FromJson(R"({"gate": "q4_k", "up": "q4_k"})"));
  EXPECT_FALSE(QuantPlan::FromJson(R"({"gate": "q4_k", "up": "q4_k", "down": "iq2_xxs"})"));
  EXPECT_FALSE(QuantPlan::FromJson(R"({"gate": "q4_k", "up": "q4_k", "down": "q6_k", "extra": 1})"));
  EXPECT_FALSE(QuantPlan::FromJson(R"([1,2])"));
}

}  // namespace
}  // namespace tenzro::prepare
