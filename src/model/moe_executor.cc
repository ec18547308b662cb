#include "model/moe_executor.h"

#include <fmt/format.h>

namespace tenzro::model {

namespace {

Result<runtime::WeightMatrix> SlabMatrix(const format::ExpertSlab& s) {
  return runtime::WeightMatrix::Borrow(s.type, s.row_len, s.rows, s.bytes);
}

}  // namespace

Result<runtime::RouterWeights> LoadRouter(const format::Checkpoint& c, const HParams& hp, int layer) {
  TENZRO_TRY(format::TensorRef t, c.Router(layer));
  if (t.ne.size() != 2 || t.ne[0] != hp.n_embd || t.ne[1] != hp.n_expert)
    return Error::InvalidArgument("router of layer {} ({}) has shape [{}], expected [{}, {}]", layer, t.name,
                                  fmt::join(t.ne, ", "), hp.n_embd, hp.n_expert);
  runtime::RouterWeights r;
  TENZRO_TRY(r.w, runtime::WeightMatrix::Borrow(t.type, hp.n_embd, hp.n_expert, t.bytes));
  TENZRO_CHECK_OK(r.Validate());
  return r;
}

Result<runtime::ExpertWeights> LoadExpert(const format::Checkpoint& c, int layer, int expert) {
  runtime::ExpertWeights w;
  runtime::WeightMatrix* m[3] = {&w.gate, &w.up, &w.down};
  for (int p = 0; p < 3; ++p) {
    TENZRO_TRY(format::ExpertSlab s, c.Expert(layer, expert, format::kProjections[p]));
    TENZRO_TRY(*m[p], SlabMatrix(s));
  }
  auto v = w.Validate();
  if (!v) return v.error().WithContext(fmt::format("layer {} expert {}", layer, expert));
  return w;
}

Result<std::optional<runtime::SharedExpertWeights>> LoadSharedExpert(const format::Checkpoint& c, int layer) {
  auto gate = c.SharedExpert(layer, format::Projection::kGate);
  if (!gate) {
    if (gate.error().code() == ErrorCode::kNotFound) return std::optional<runtime::SharedExpertWeights>();
    return gate.error();
  }
  runtime::SharedExpertWeights sh;
  TENZRO_TRY(sh.ffn.gate, SlabMatrix(*gate));
  TENZRO_TRY(format::ExpertSlab up, c.SharedExpert(layer, format::Projection::kUp));
  TENZRO_TRY(sh.ffn.up, SlabMatrix(up));
  TENZRO_TRY(format::ExpertSlab down, c.SharedExpert(layer, format::Projection::kDown));
  TENZRO_TRY(sh.ffn.down, SlabMatrix(down));
  auto g = c.SharedExpertGate(layer);
  if (g) {
    TENZRO_TRY(sh.gate_inp, runtime::WeightMatrix::Borrow(g->type, sh.ffn.n_embd(), 1, g->bytes));
  } else if (g.error().code() != ErrorCode::kNotFound) {
    return g.error();
  }
  auto v = sh.Validate();
  if (!v) return v.error().WithContext(fmt::format("layer {} shared expert", layer));
  return std::optional<runtime::SharedExpertWeights>(std::move(sh));
}

Result<std::unique_ptr<LocalMoeExecutor>> LocalMoeExecutor::Create(const format::Checkpoint& c, const HParams& hp,
                                                                   ThreadPool* pool, runtime::WireDtype wire) {
  TENZRO_CHECK_OK(runtime::CheckWireRow(wire, hp.n_embd));
  auto ex = std::unique_ptr<LocalMoeExecutor>(new LocalMoeExecutor());
  ex->pool_ = pool;
  ex->wire_ = wire;
  for (int il = 0; il < hp.n_layer; ++il) {
    auto l = std::make_unique<Layer>();
    TENZRO_TRY(l->block.router, LoadRouter(c, hp, il));
    l->block.routing = hp.routing;
    for (int e = 0; e < hp.n_expert; ++e) {
      TENZRO_TRY(runtime::ExpertWeights w, LoadExpert(c, il, e));
      if (w.n_embd() != hp.n_embd)
        return Error::InvalidArgument("layer {} expert {}: n_embd {} != model's {}", il, e, w.n_embd(), hp.n_embd);
      ex->expert_bytes_ += w.bytes();
      l->experts.push_back(std::move(w));
    }
    for (const auto& w : l->experts) l->block.experts.push_back(&w);
    TENZRO_TRY(l->block.shared, LoadSharedExpert(c, il));
    ex->layers_.push_back(std::move(l));
  }
  return ex;
}

Result<void> LocalMoeExecutor::Run(int layer, const float* x, int n_tok, float* out) {
  if (layer < 0 || layer >= static_cast<int>(layers_.size()))
    return Error::InvalidArgument("MoE layer {} out of range [0, {})", layer, layers_.size());
  runtime::MoeBlockOptions o;
  o.wire = wire_;
  auto r = runtime::ComputeMoeBlock(layers_[layer]->block, x, n_tok, out, pool_, o);
  if (!r) return r.error().WithContext(fmt::format("MoE layer {}", layer));
  return Ok();
}

}  // namespace tenzro::model
