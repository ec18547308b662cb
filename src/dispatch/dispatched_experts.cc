#include "dispatch/dispatched_experts.h"

namespace tenzro::dispatch {

Result<void> DispatchedExperts::Run(const std::vector<runtime::TokenRouting>& routing, const float* x,
                                    int64_t n_embd, float* out) {
  TENZRO_CHECK_OK(runtime::CheckWireRow(options_.dtype, n_embd));  // q8_0: before any holder is asked
  ForwardInput in;
  in.model = model_;
  in.layer = layer_;
  in.d_model = n_embd;
  in.n_tok = static_cast<int>(routing.size());
  in.x = x;
  in.routing = routing;
  TENZRO_TRY(report_, dispatcher_.Forward(in, options_, out));
  return Ok();
}

}  // namespace tenzro::dispatch
