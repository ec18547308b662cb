// tenzro dispatch: the swarm as a block's routed-expert runner
// (runtime/moe_block.h): Run is one Dispatcher::Forward of the routing it is
// given, with no shared rows (RunMoeBlock adds the shared expert itself, as
// for the local runners), so the block's output is bit for bit the
// in-process one that rounds each expert's rows through the same wire dtype
// (runtime/local_experts.h; f32: exact) when every routed expert runs on a
// remote holder. The report of the last Run is kept for the
// caller's stats and answers. One Run at a time per object; `dispatcher`
// must outlive it.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "dispatch/forward.h"
#include "runtime/moe_block.h"

namespace tenzro::dispatch {

class DispatchedExperts : public runtime::RoutedExpertRunner {
 public:
  // `model`: normalised catalog id.
  DispatchedExperts(Dispatcher& dispatcher, std::string model, int layer, ForwardOptions options)
      : dispatcher_(dispatcher), model_(std::move(model)), layer_(layer), options_(std::move(options)) {}

  // Dispatcher::Forward's errors; kInvalidArgument when rows of n_embd
  // cannot travel as options.dtype (q8_0: n_embd % 32 != 0).
  Result<void> Run(const std::vector<runtime::TokenRouting>& routing, const float* x, int64_t n_embd,
                   float* out) override;

  // The last successful Run's report (empty before one).
  const ForwardReport& report() const { return report_; }

 private:
  Dispatcher& dispatcher_;
  std::string model_;
  int layer_;
  ForwardOptions options_;
  ForwardReport report_;
};

}  // namespace tenzro::dispatch
