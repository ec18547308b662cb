#include "runtime/expert_ffn.h"

#include <cmath>
#include <vector>

#include "runtime/matmul.h"

namespace tenzro::runtime {

Result<void> ExpertFfnIsa(KernelIsa isa, const ExpertWeights& w, const float* x, int n_tok, float* y,
                          ThreadPool* pool) {
  if (!KernelIsaSupported(isa))
    return Error::InvalidArgument("this CPU cannot run {} kernels", KernelIsaName(isa));
  TENZRO_CHECK_OK(w.Validate());
  if (n_tok < 0) return Error::InvalidArgument("negative token count {}", n_tok);
  if (n_tok == 0) return Ok();
  const int64_t n_ff = w.n_ff();

  QuantizedActs qx;
  if (UsesQuantizedActs(w.gate.type) || UsesQuantizedActs(w.up.type))
    QuantizeActs(x, n_tok, w.n_embd(), &qx, UsesTokenTiles(w.gate.type) || UsesTokenTiles(w.up.type));
  std::vector<float> g(static_cast<size_t>(n_tok) * n_ff), u(g.size());
  const MatMulJob gate_up[2] = {{&w.gate, x, &qx, g.data()}, {&w.up, x, &qx, u.data()}};
  RunMatMuls(isa, gate_up, 2, n_tok, pool);

  for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];

  QuantizedActs qh;
  if (UsesQuantizedActs(w.down.type)) QuantizeActs(g.data(), n_tok, n_ff, &qh, UsesTokenTiles(w.down.type));
  const MatMulJob down{&w.down, g.data(), &qh, y};
  RunMatMuls(isa, &down, 1, n_tok, pool);
  return Ok();
}

Result<void> ExpertFfn(const ExpertWeights& w, const float* x, int n_tok, float* y, ThreadPool* pool) {
  return ExpertFfnIsa(BestKernelIsa(), w, x, n_tok, y, pool);
}

Result<void> SharedExpertWeights::Validate() const {
  TENZRO_CHECK_OK(ffn.Validate());
  if (gate_inp) {
    TENZRO_CHECK_OK(gate_inp->Validate("shared expert gate"));
    if (gate_inp->rows != 1 || gate_inp->row_len != ffn.n_embd())
      return Error::InvalidArgument("shared expert gate is {} x {}, expected 1 x {}", gate_inp->rows,
                                    gate_inp->row_len, ffn.n_embd());
  }
  return Ok();
}

Result<void> SharedExpertFfn(const SharedExpertWeights& w, const float* x, int n_tok, float* y,
                             ThreadPool* pool) {
  TENZRO_CHECK_OK(w.Validate());
  TENZRO_CHECK_OK(ExpertFfn(w.ffn, x, n_tok, y, pool));
  if (!w.gate_inp || n_tok <= 0) return Ok();
  std::vector<float> logit(n_tok);
  TENZRO_CHECK_OK(MatMul(*w.gate_inp, x, n_tok, logit.data(), nullptr));
  const int64_t n = w.ffn.n_embd();
  for (int t = 0; t < n_tok; ++t) {
    const float s = 1.0f / (1.0f + std::exp(-logit[t]));
    for (int64_t i = 0; i < n; ++i) y[t * n + i] *= s;
  }
  return Ok();
}

}  // namespace tenzro::runtime
