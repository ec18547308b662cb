// Shared by the model tests: the float64 reference of the tiny Qwen3.5-MoE
// (tests/data/model/README.md) and small helpers.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "model/engine.h"
#include "testutil/testutil.h"

namespace tenzro::model::testref {

inline const char* kModel = "model/tiny-qwen35moe-tok-BF16.gguf";

struct Ref {
  std::vector<int32_t> prompt, greedy;
  std::vector<double> margins;
  std::vector<float> logits;  // rows x 1024
  int rows = 0;
};

inline Ref LoadRef(const std::string& name) {
  Ref r;
  std::ifstream f(testing::DataPath("model/ref/" + name + ".json"));
  nlohmann::json j = nlohmann::json::parse(f);
  r.prompt = j["prompt_ids"].get<std::vector<int32_t>>();
  r.greedy = j["greedy_ids"].get<std::vector<int32_t>>();
  r.margins = j["greedy_top1_top2_margin"].get<std::vector<double>>();
  r.rows = j["logits_rows"].get<int>();
  std::ifstream lf(testing::DataPath("model/ref/" + name + ".logits.f32"), std::ios::binary);
  r.logits.resize(static_cast<size_t>(r.rows) * 1024);
  lf.read(reinterpret_cast<char*>(r.logits.data()), r.logits.size() * sizeof(float));
  EXPECT_TRUE(lf.good());
  return r;
}

inline double RelL2(const float* a, const float* ref, int n) {
  double num = 0, den = 0;
  for (int i = 0; i < n; ++i) {
    num += (static_cast<double>(a[i]) - ref[i]) * (static_cast<double>(a[i]) - ref[i]);
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(num / den);
}

inline int Argmax(const float* x, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return best;
}

inline std::unique_ptr<Engine> OpenTiny(int threads = 2) {
  EngineOptions o;
  o.threads = threads;
  auto e = Engine::Open(testing::DataPath(kModel), o);
  EXPECT_TRUE(e) << e.error().ToString();
  return e ? std::move(*e) : nullptr;
}

}  // namespace tenzro::model::testref
