#include "model/engine.h"

#include <algorithm>
#include <thread>
#include <unordered_set>

#include <fmt/format.h>

#include "model/arch.h"
#include "model/layers.h"
#include "model/ops.h"
#include "quant/types.h"
#include "runtime/matmul.h"
#include "runtime/parallel.h"

namespace tenzro::model {

Engine::~Engine() = default;

Result<std::unique_ptr<Engine>> Engine::Open(const std::string& path, const EngineOptions& options,
                                             std::unique_ptr<MoeExecutor> moe) {
  auto e = std::unique_ptr<Engine>(new Engine());
  TENZRO_TRY(e->ckpt_, format::Checkpoint::Open(path));
  std::string arch = e->ckpt_->architecture();
  const ArchDef* def = FindArch(arch);
  if (!def)
    return Error::Unsupported("{}: architecture '{}' is not supported (supported: {})", path, arch,
                              fmt::join(ArchNames(), ", "));
  auto hp = def->read_hparams(*e->ckpt_);
  if (!hp) return hp.error().WithContext(path);
  e->hp_ = std::move(*hp);
  auto w = def->load_weights(*e->ckpt_, e->hp_);
  if (!w) return w.error().WithContext(path);
  e->w_ = std::move(*w);
  int threads = options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  if (threads > 1) e->pool_ = std::make_unique<ThreadPool>(threads - 1, "engine", runtime::kComputePoolSpin);
  if (!moe) {
    auto local = LocalMoeExecutor::Create(*e->ckpt_, e->hp_, e->pool_.get(), options.wire_dtype);
    if (!local) return local.error().WithContext(fmt::format("{}: routed experts", path));
    moe = std::move(*local);
  }
  e->moe_ = std::move(moe);
  e->budget_ = std::make_shared<SessionBudget>(options.session_budget);
  return e;
}

Result<std::unique_ptr<Session>> Engine::NewSession(int max_tokens, int rollback_tokens) {
  if (rollback_tokens < 0 || rollback_tokens > Session::kMaxRollbackTokens)
    return Error::InvalidArgument("rollback steps of {} tokens: at most {}", rollback_tokens,
                                  Session::kMaxRollbackTokens);
  if (max_tokens <= 0) max_tokens = std::max(1, hp_.n_ctx_train);
  if (max_tokens > (1 << 20)) return Error::InvalidArgument("session of {} positions: at most {}", max_tokens, 1 << 20);
  uint64_t bytes = Session::BytesFor(hp_, max_tokens) + Session::RollbackBytes(hp_, rollback_tokens);
  TENZRO_CHECK_OK(budget_->Reserve(bytes));
  return std::unique_ptr<Session>(new Session(hp_, max_tokens, rollback_tokens, budget_, bytes));
}

Result<void> Engine::Step(std::span<const SeqInput> batch, std::vector<float>& logits) {
  // Validate everything before any state changes.
  std::unordered_set<const Session*> seen;
  int n_rows = 0, n_out = 0;
  for (const SeqInput& in : batch) {
    if (!in.session) return Error::InvalidArgument("step: null session");
    if (!seen.insert(in.session).second) return Error::InvalidArgument("step: a session appears twice in the batch");
    if (in.session->broken()) return Error::InvalidArgument("step: session was broken by an earlier failed step");
    if (in.tokens.empty()) return Error::InvalidArgument("step: a sequence with no tokens");
    if (static_cast<int64_t>(in.session->n_past()) + static_cast<int64_t>(in.tokens.size()) > in.session->max_tokens())
      return Error::ResourceExhausted("step: {} + {} tokens exceed the session's {} positions", in.session->n_past(),
                                      in.tokens.size(), in.session->max_tokens());
    for (int32_t t : in.tokens)
      if (t < 0 || t >= hp_.n_vocab) return Error::InvalidArgument("step: token id {} outside [0, {})", t, hp_.n_vocab);
    if (in.rollback && in.tokens.size() > static_cast<size_t>(in.session->rollback_max()))
      return Error::InvalidArgument("step: {} tokens with rollback, the session allows {}", in.tokens.size(),
                                    in.session->rollback_max());
    n_rows += static_cast<int>(in.tokens.size());
    n_out += in.all_logits ? static_cast<int>(in.tokens.size()) : 1;
  }
  if (batch.empty()) return Error::InvalidArgument("step: empty batch");

  const int64_t E = hp_.n_embd;
  x_.resize(static_cast<size_t>(n_rows) * E);
  std::vector<SeqSlice> seqs;
  int row = 0;
  for (const SeqInput& in : batch) {
    seqs.push_back({in.session, row, static_cast<int>(in.tokens.size()), in.session->n_past(), in.rollback});
    in.session->undo_n_ = 0;  // a new step ends what the last one kept
    for (int32_t t : in.tokens) {
      TENZRO_CHECK_OK(quant::DequantizeRows(w_.tok_embd.type, w_.tok_embd.row(t), x_.data() + row * E, 1, E));
      ++row;
    }
  }
  auto run = RunLayers(seqs, n_rows);
  if (!run) {
    for (const SeqInput& in : batch) in.session->broken_ = true;
    return run.error();
  }
  for (const SeqInput& in : batch) {
    in.session->n_past_ += static_cast<int>(in.tokens.size());
    if (in.rollback) in.session->undo_n_ = static_cast<int>(in.tokens.size());
    in.session->tokens_.insert(in.session->tokens_.end(), in.tokens.begin(), in.tokens.end());
  }

  // Output head on the rows asked for.
  h_.resize(static_cast<size_t>(n_out) * E);
  int o = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    const SeqSlice& s = seqs[i];
    int first = batch[i].all_logits ? 0 : s.n - 1;
    for (int t = first; t < s.n; ++t, ++o)
      RmsNorm(x_.data() + (s.row0 + t) * E, w_.output_norm.data(), E, hp_.rms_eps, h_.data() + o * E);
  }
  logits.resize(static_cast<size_t>(n_out) * hp_.n_vocab);
  return runtime::MatMul(w_.output, h_.data(), n_out, logits.data(), pool_.get());
}

Result<void> Engine::Rollback(Session* s, int keep) {
  if (!s || s->broken()) return Error::InvalidArgument("rollback: no session, or a broken one");
  const int n = s->undo_n_;
  if (n == 0) return Error::InvalidArgument("rollback: the session's last step was not a rollback step");
  if (keep < 0 || keep > n) return Error::InvalidArgument("rollback: keep {} of {} tokens", keep, n);
  s->undo_n_ = 0;
  if (keep == n) return Ok();
  const int pos = s->n_past_ - n + keep;
  const size_t kv_row = static_cast<size_t>(hp_.n_head_kv) * hp_.head_dim;
  for (int il = 0; il < hp_.n_layer; ++il) {
    if (hp_.layers[il] == LayerKind::kDeltaNet) {
      DeltaNetKeepFirst(hp_, il, *s, keep);
    } else {
      s->kv(il).k.resize(pos * kv_row);
      s->kv(il).v.resize(pos * kv_row);
    }
  }
  s->n_past_ = pos;
  s->tokens_.resize(pos);
  return Ok();
}

Result<void> Engine::RunLayers(const std::vector<SeqSlice>& seqs, int n_rows) {
  const int64_t E = hp_.n_embd;
  h_.resize(static_cast<size_t>(n_rows) * E);
  y_.resize(static_cast<size_t>(n_rows) * E);
  for (int il = 0; il < hp_.n_layer; ++il) {
    const LayerWeights& L = w_.layers[il];
    for (int r = 0; r < n_rows; ++r) RmsNorm(x_.data() + r * E, L.attn_norm.data(), E, hp_.rms_eps, h_.data() + r * E);
    Result<void> mix = L.kind == LayerKind::kDeltaNet
                           ? DeltaNetLayer(hp_, L.ssm, il, seqs, h_.data(), n_rows, y_.data(), pool_.get())
                           : AttentionLayer(hp_, L.attn, L.kind == LayerKind::kGatedAttention, il, seqs, h_.data(),
                                            n_rows, y_.data(), pool_.get());
    if (!mix) return mix.error().WithContext(fmt::format("layer {} {}", il, LayerKindName(L.kind)));
    for (int64_t i = 0; i < n_rows * E; ++i) x_[i] += y_[i];
    for (int r = 0; r < n_rows; ++r) RmsNorm(x_.data() + r * E, L.ffn_norm.data(), E, hp_.rms_eps, h_.data() + r * E);
    TENZRO_CHECK_OK(moe_->Run(il, h_.data(), n_rows, y_.data()));
    for (int64_t i = 0; i < n_rows * E; ++i) x_[i] += y_[i];
  }
  return Ok();
}

}  // namespace tenzro::model
