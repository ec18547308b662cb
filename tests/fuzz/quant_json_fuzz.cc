// libFuzzer target: the quantization choice a node accepts from the network
// and the CLI (prepare/quant_plan.h, prepare/prepare_job.h): the
// --quant-json / "quant_json" per-projection map {"gate", "up", "down"}, the
// --quant / "quant" preset name, the whole POST /v1/moe/prepare body
// (PrepareRequest::FromJson, which also validates its plan) and the
// "experts" list text. Nothing may crash or throw; what parses round-trips
// through its own JSON to an equal value, and expert lists come back sorted,
// unique and in range.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "format/checkpoint.h"
#include "net/json_http.h"
#include "prepare/prepare_job.h"
#include "prepare/quant_plan.h"

using namespace tenzro;
using prepare::QuantPlan;

namespace {

bool SameTypes(const QuantPlan& a, const QuantPlan& b) {
  for (format::Projection p : format::kProjections)
    for (int layer : {0, 1, 5, 47})
      if (a.TypeFor(p, layer, 48) != b.TypeFor(p, layer, 48)) return false;
  return true;
}

void CheckExperts(std::string_view text, int n_expert) {
  auto list = prepare::ParseExpertList(text, n_expert);
  if (!list) return;
  for (size_t i = 0; i < list->size(); ++i) {
    if ((*list)[i] < 0 || (*list)[i] >= n_expert) std::abort();
    if (i > 0 && (*list)[i - 1] >= (*list)[i]) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto plan = QuantPlan::FromJson(text)) {
    if (plan->name() != "custom") std::abort();
    auto again = QuantPlan::FromJson(plan->ToJson());
    if (!again || !SameTypes(*plan, *again)) std::abort();
  }
  if (auto plan = QuantPlan::FromPreset(text)) {
    auto j = nlohmann::json::parse(plan->ToJson(), nullptr, false);
    if (j.is_discarded()) std::abort();
    auto again = QuantPlan::FromPreset(plan->name());
    if (!again || !SameTypes(*plan, *again)) std::abort();
  }
  if (auto body = net::ParseJsonBody(text)) {
    if (auto req = prepare::PrepareRequest::FromJson(*body)) {
      if (!req->Plan()) std::abort();  // FromJson validated it
      auto again = prepare::PrepareRequest::FromJson(req->ToJson());
      if (!again || again->ToJson() != req->ToJson()) std::abort();
      for (int n : {1, 8, 256}) CheckExperts(req->experts, n);
    }
  }
  for (int n : {0, 1, 8, 1000}) CheckExperts(text, n);
  return 0;
}
