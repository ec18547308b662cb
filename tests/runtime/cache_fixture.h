// Expert and gate mini-GGUF images for the cache tests: synthetic ones
// (small F32 experts with a recognisable first value) and the tiny
// Qwen3.5-MoE fixture's real ones (byte-range copies of its Q4_K_M slabs).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "format/checkpoint.h"
#include "format/expert_gguf.h"
#include "runtime/expert_loader.h"
#include "testutil/testutil.h"

namespace tenzro::runtime::testing {

// An F32 expert (n_embd x n_ff) whose gate[0][0] == marker.
inline Bytes SyntheticExpert(const std::string& model, int layer, int expert, float marker, int64_t n_embd = 32,
                             int64_t n_ff = 64) {
  std::mt19937 rng(static_cast<uint32_t>(layer * 1000 + expert));
  std::normal_distribution<float> nd(0.0f, 0.05f);
  std::vector<float> g(n_ff * n_embd), u(n_ff * n_embd), d(n_embd * n_ff);
  for (auto* v : {&g, &u, &d})
    for (float& x : *v) x = nd(rng);
  g[0] = marker;
  auto span = [](const std::vector<float>& v) {
    return ByteSpan(reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4);
  };
  format::ExpertTensors t;
  t.proj[0] = {quant::GgmlType::F32, n_embd, n_ff, span(g)};
  t.proj[1] = {quant::GgmlType::F32, n_embd, n_ff, span(u)};
  t.proj[2] = {quant::GgmlType::F32, n_ff, n_embd, span(d)};
  auto img = format::EncodeExpertGguf({"test", model, layer, expert, "f32"}, t);
  EXPECT_TRUE(img) << img.error().ToString();
  return img ? *img : Bytes{};
}

inline float FirstGate(const ExpertWeights& w) {
  float f;
  std::memcpy(&f, w.gate.data.data(), 4);
  return f;
}

inline format::Matrix FromSlab(const format::ExpertSlab& s) { return {s.type, s.row_len, s.rows, s.bytes}; }

// The tiny fixture checkpoint (kept open: images borrow nothing from it).
struct TinyModel {
  std::unique_ptr<format::Checkpoint> ck;
  static constexpr const char* kModel = "tiny-qwen35moe";

  explicit TinyModel(const std::string& weights = "Q4_K_M") {
    auto c = format::Checkpoint::Open(tenzro::testing::DataPath("moe/tiny-qwen35moe-" + weights + ".gguf"));
    EXPECT_TRUE(c) << c.error().ToString();
    if (c) ck = std::move(*c);
  }

  Bytes Expert(int layer, int e) const {
    format::ExpertTensors t;
    for (int p = 0; p < 3; ++p)
      t.proj[p] = FromSlab(*ck->Expert(layer, e, static_cast<format::Projection>(p)));
    auto img = format::EncodeExpertGguf({"qwen35moe", kModel, layer, e, "q4_k_m"}, t);
    EXPECT_TRUE(img) << img.error().ToString();
    return img ? *img : Bytes{};
  }

  Bytes Gate(int layer) const {
    format::GateTensors g;
    auto r = ck->Router(layer);
    g.router = {r->type, r->ne[0], r->ne[1], r->bytes};
    format::ExpertTensors sh;
    for (int p = 0; p < 3; ++p) sh.proj[p] = FromSlab(*ck->SharedExpert(layer, static_cast<format::Projection>(p)));
    g.shared = sh;
    auto sg = ck->SharedExpertGate(layer);
    g.shared_gate = format::Matrix{sg->type, sg->ne[0], 1, sg->bytes};
    g.n_expert_used = 2;
    auto img = format::EncodeGateGguf({"qwen35moe", kModel, layer, 0, "q4_k_m"}, g);
    EXPECT_TRUE(img) << img.error().ToString();
    return img ? *img : Bytes{};
  }
};

inline std::shared_ptr<const Bytes> Shared(Bytes b) { return std::make_shared<const Bytes>(std::move(b)); }

}  // namespace tenzro::runtime::testing
