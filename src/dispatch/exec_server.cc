#include "dispatch/exec_server.h"

#include <algorithm>

#include "catalog/catalog.h"
#include "runtime/expert_ffn.h"

namespace tenzro::dispatch {

using Clock = std::chrono::steady_clock;

ExecResponse RunExec(const ExecRequest& req, ExpertRunner& runner, const ExecServeOptions& options) {
  const auto t0 = Clock::now();
  auto budget = req.deadline_ms == 0 ? options.default_deadline : std::chrono::milliseconds(req.deadline_ms);
  const auto deadline = t0 + std::min(budget, options.max_deadline);
  ExecResponse resp;
  resp.request_id = req.request_id;
  resp.layer = req.layer;
  resp.d_model = req.d_model;
  resp.dtype = req.dtype;
  std::vector<int> experts;
  for (const ExecBatch& b : req.experts) experts.push_back(b.expert);
  if (auto ok = runner.Check(req.model, req.layer, req.d_model, experts); !ok) {
    resp.error = ok.error();
    return resp;
  }
  runner.Prefetch(req.model, req.layer, experts);
  resp.experts.reserve(req.experts.size());
  for (const ExecBatch& b : req.experts) {
    ExecResult& e = resp.experts.emplace_back();
    e.expert = b.expert;
    e.n_rows = b.n_rows;
    if (Clock::now() > deadline) {
      e.error = Error::DeadlineExceeded("expert {} not run: the request's {} ms deadline passed", b.expert,
                                        std::chrono::duration_cast<std::chrono::milliseconds>(budget).count());
      continue;
    }
    e.rows.resize(b.rows.size());
    auto st = runner.Run(req.model, req.layer, b.expert, b.rows.data(), static_cast<int>(b.n_rows), e.rows.data());
    if (!st) {
      e.error = st.error();
      e.rows.clear();
      continue;
    }
    if (options.on_served) options.on_served(req.model, req.layer, b.expert, b.n_rows);
  }
  resp.compute_us = static_cast<uint32_t>(
      std::min<int64_t>(UINT32_MAX, std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count()));
  return resp;
}

Bytes ServeExec(ByteSpan frame, ExpertRunner& runner, const ExecServeOptions& options,
                std::optional<ErrorCode>* status) {
  auto req = DecodeExecRequest(frame, options.limits);
  ExecResponse resp = req ? RunExec(*req, runner, options) : ErrorExecResponse(0, req.error());
  if (status) *status = resp.error ? std::optional<ErrorCode>(resp.error->code()) : std::nullopt;
  return EncodeExecResponse(resp);
}

Result<void> CacheRunner::Check(const std::string& model, int layer, int64_t d_model, const std::vector<int>& experts) {
  TENZRO_TRY(std::string id, catalog::NormalizeModelId(model));
  for (int e : experts) {
    auto info = cache_.Info({id, layer, e});
    if (info && info->n_embd != d_model)
      return Error::InvalidArgument("d_model {} does not match model '{}' (expert {}/{} has n_embd {})", d_model, id,
                                    layer, e, info->n_embd);
  }
  return Ok();
}

void CacheRunner::Prefetch(const std::string& model, int layer, const std::vector<int>& experts) {
  auto id = catalog::NormalizeModelId(model);
  if (!id) return;
  std::vector<runtime::ExpertKey> keys;
  for (int e : experts) keys.push_back({*id, layer, e});
  cache_.Prefetch(keys);
}

Result<void> CacheRunner::Run(const std::string& model, int layer, int expert, const float* x, int n, float* y) {
  TENZRO_TRY(std::string id, catalog::NormalizeModelId(model));
  const runtime::ExpertKey key{id, layer, expert};
  if (!cache_.Contains(key)) return Error::NotFound("this holder does not hold expert {}", key.ToString());
  TENZRO_TRY(runtime::PinnedExpert pin, cache_.Pin(key));
  auto st = runtime::ExpertFfn(pin.weights(), x, n, y, pool_);
  if (!st) return st.error().WithContext(key.ToString());
  return Ok();
}

Result<void> MemoryRunner::Check(const std::string& model, int layer, int64_t d_model,
                                 const std::vector<int>& experts) {
  if (model != model_) return Error::NotFound("this holder serves model '{}', not '{}'", model_, model);
  for (int e : experts) {
    auto it = experts_.find({layer, e});
    if (it != experts_.end() && it->second->n_embd() != d_model)
      return Error::InvalidArgument("d_model {} does not match model '{}' (n_embd {})", d_model, model,
                                    it->second->n_embd());
  }
  return Ok();
}

Result<void> MemoryRunner::Run(const std::string& model, int layer, int expert, const float* x, int n, float* y) {
  auto it = experts_.find({layer, expert});
  if (model != model_ || it == experts_.end())
    return Error::NotFound("this holder does not hold expert {}/{}/{}", model, layer, expert);
  return runtime::ExpertFfn(*it->second, x, n, y, pool_);
}

}  // namespace tenzro::dispatch
