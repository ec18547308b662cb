// tenzro prepare: which block format each expert projection is published in.
//
// A QuantPlan is either a preset applied to all three FFN projections
// (q4_k_m, q8_0, q4_k, q5_k, q6_k, and the dense f32/f16/bf16), or a per-
// projection map from --quant-json: {"gate": "q4_k", "up": "q4_k",
// "down": "q6_k"}. With neither, experts are published as dense f32.
// q4_k_m is llama.cpp's rule: gate and up Q4_K; down Q6_K on the layers where
// catalog::UseMoreBits(i, n) holds (n = the model's layer count), else Q4_K.
// Pure logic: no I/O.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "core/result.h"
#include "format/checkpoint.h"
#include "quant/types.h"

namespace tenzro::prepare {

class QuantPlan {
 public:
  // Dense f32 for every projection (what "neither flag" means).
  QuantPlan();

  // Parses a preset name (case-insensitive): q4_k_m, q4_k, q5_k, q6_k, q8_0,
  // f32, f16, bf16. kInvalidArgument naming the accepted names otherwise.
  static Result<QuantPlan> FromPreset(std::string_view preset);
  // Parses {"gate": T, "up": T, "down": T} (all three keys required, types
  // as ggml names them, case-insensitive; unknown keys are an error).
  static Result<QuantPlan> FromJson(std::string_view json_text);

  // Target type of projection `p` on `layer` of an n_layer model.
  quant::GgmlType TypeFor(format::Projection p, int layer, int n_layer) const;
  // "q4_k_m", "f32", or "custom" for --quant-json plans.
  const std::string& name() const { return name_; }
  // {"preset": name} or {"gate": .., "up": .., "down": ..} as JSON text.
  std::string ToJson() const;

 private:
  std::string name_;
  bool q4_k_m_ = false;
  std::array<quant::GgmlType, 3> types_;
};

}  // namespace tenzro::prepare
