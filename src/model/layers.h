// tenzro model: the mixing sub-layers of the spine, on a batch of sequences.
//
// A step's tokens are stacked into N rows (sequence after sequence); a
// SeqSlice says which rows belong to which session and at which position the
// first one sits. The projections run once over all N rows (runtime::MatMul);
// the per-sequence parts (KV cache, conv and recurrent state) run per slice,
// so a row's result never depends on the other sequences in the batch.
//
//   in:  h   [N][n_embd]  the normalised hidden states (attn_norm applied)
//   out: out [N][n_embd]  the sub-layer's output (before the residual add)
//
// REQUIRES: every slice's session has room for its tokens and the weights
// match hp (the engine checks both before a step). Errors come only from
// the matrix kernels (kInvalidArgument / kUnsupported).
#pragma once

#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"
#include "model/hparams.h"
#include "model/session.h"
#include "model/weights.h"

namespace tenzro::model {

struct SeqSlice {
  Session* session;
  int row0;  // first row in the batch
  int n;     // rows (tokens) of this sequence in the step
  int pos0;  // position of the first of them (session->n_past() before the step)
  bool undo = false;  // keep what Engine::Rollback needs (session.h: SsmUndo)
};

// Makes a delta-net layer's conv and recurrent state what they were after
// the first `keep` tokens of the session's last rollback step: restores the
// state from before it and replays those tokens' delta rule from the kept
// inputs (session.h). REQUIRES: 0 <= keep <= that step's tokens.
void DeltaNetKeepFirst(const HParams& hp, int layer, Session& s, int keep);

// Softmax attention (kAttention, kGatedAttention): Q/K RMSNorm per head, NEOX
// rotary over n_rot dims, GQA (query head h reads KV head h / (n_head /
// n_head_kv)), causal over the session's cache, sigmoid output gate when
// gated, then attn_output. Appends the new keys and values to the caches.
Result<void> AttentionLayer(const HParams& hp, const AttentionWeights& w, bool gated, int layer,
                            const std::vector<SeqSlice>& seqs, const float* h, int n_rows, float* out,
                            ThreadPool* pool);

// Gated delta net (kDeltaNet), llama.cpp's delta-net-base semantics:
// qkv -> causal depthwise conv (kernel ssm_conv_kernel) + SiLU -> q | k | v;
// q, k L2-normalised per key head, q scaled by 1/sqrt(d_state); value head h
// reads key head h % n_k_heads; per token t and value head:
//   S *= exp(g_t),  g_t = softplus(alpha_t + dt_bias) * a
//   S += k_t (beta_t (v_t - S^T k_t))^T,  beta_t = sigmoid(beta_t)
//   o_t = S^T q_t
// then RMSNorm(o) * ssm_norm * SiLU(z) per head and ssm_out. The recurrence
// runs token by token (the recurrent form) inside one pass over the prompt:
// prefill and one-token decode execute the same arithmetic.
Result<void> DeltaNetLayer(const HParams& hp, const DeltaNetWeights& w, int layer, const std::vector<SeqSlice>& seqs,
                           const float* h, int n_rows, float* out, ThreadPool* pool);

// The recurrent delta-rule step for one value head (delta_rule.h picks the
// ISA): S (d_k x d_v, row i contiguous) updated in place, o receives d_v.
// REQUIRES: d_v <= kMaxDeltaDv (1024; HParams::Validate refuses more).
void DeltaRuleStep(float* S, const float* q, const float* k, const float* v, float decay, float beta, int d_k,
                   int d_v, float* o);

}  // namespace tenzro::model
