#include <algorithm>
#include <cmath>

#include "model/layers.h"
#include "model/ops.h"
#include "runtime/matmul.h"
#include "runtime/parallel.h"

namespace tenzro::model {

Result<void> DeltaNetLayer(const HParams& hp, const DeltaNetWeights& w, int layer, const std::vector<SeqSlice>& seqs,
                           const float* h, int n_rows, float* out, ThreadPool* pool) {
  const int64_t ch = hp.ssm_conv_channels();
  const int K = hp.ssm_conv_kernel, dk = hp.ssm_d_state, dv = hp.ssm_d_v();
  const int nk = hp.ssm_n_k_heads, nv = hp.ssm_n_v_heads;
  const int64_t inner = hp.ssm_d_inner;
  std::vector<float> qkv(static_cast<size_t>(n_rows) * ch), z(static_cast<size_t>(n_rows) * inner),
      alpha(static_cast<size_t>(n_rows) * nv), beta(static_cast<size_t>(n_rows) * nv),
      conv(static_cast<size_t>(n_rows) * ch), o(static_cast<size_t>(n_rows) * inner);
  TENZRO_CHECK_OK(runtime::MatMul(w.qkv, h, n_rows, qkv.data(), pool));
  TENZRO_CHECK_OK(runtime::MatMul(w.gate, h, n_rows, z.data(), pool));
  TENZRO_CHECK_OK(runtime::MatMul(w.alpha, h, n_rows, alpha.data(), pool));
  TENZRO_CHECK_OK(runtime::MatMul(w.beta, h, n_rows, beta.data(), pool));

  // Rollback steps keep the state before them and the conv inputs.
  for (const SeqSlice& s : seqs) {
    if (!s.undo) continue;
    Session::SsmUndo& u = s.session->undo(layer);
    u.conv0 = s.session->ssm(layer).conv;
    u.state0 = s.session->ssm(layer).state;
    const float* x = qkv.data() + static_cast<int64_t>(s.row0) * ch;
    u.x.assign(x, x + static_cast<int64_t>(s.n) * ch);
    u.gb.resize(static_cast<size_t>(s.n) * nv * 2);
  }

  // Causal depthwise conv + SiLU per sequence, over [state | new rows]; then
  // the state keeps the last K-1 inputs. Channels in parallel.
  for (const SeqSlice& s : seqs) {
    float* state = s.session->ssm(layer).conv.data();  // [K-1][ch]
    const float* x = qkv.data() + static_cast<int64_t>(s.row0) * ch;
    float* y = conv.data() + static_cast<int64_t>(s.row0) * ch;
    const int n = s.n;
    runtime::ParallelFor(pool, static_cast<int>((ch + 255) / 256), [&](int blk) {
      const int64_t c0 = static_cast<int64_t>(blk) * 256, c1 = std::min<int64_t>(ch, c0 + 256);
      for (int64_t c = c0; c < c1; ++c) {
        const float* wc = w.conv.data() + c * K;
        for (int t = 0; t < n; ++t) {
          float acc = 0.0f;
          for (int j = 0; j < K; ++j) {
            const int src = t - (K - 1) + j;  // < 0: from the state
            const float xv = src < 0 ? state[static_cast<int64_t>(K - 1 + src) * ch + c] : x[src * ch + c];
            acc += wc[j] * xv;
          }
          y[t * ch + c] = Silu(acc);
        }
        // Shift the state: the last K-1 inputs of [state | x].
        for (int j = 0; j < K - 1; ++j) {
          const int src = n - (K - 1) + j;
          state[static_cast<int64_t>(j) * ch + c] =
              src < 0 ? state[static_cast<int64_t>(K - 1 + src) * ch + c] : x[src * ch + c];
        }
      }
    });
  }

  // q, k: L2 norm per key head; q scaled by 1/sqrt(d_k).
  const float qscale = 1.0f / std::sqrt(static_cast<float>(dk));
  runtime::ParallelFor(pool, n_rows, [&](int r) {
    float* row = conv.data() + static_cast<int64_t>(r) * ch;
    for (int hh = 0; hh < 2 * nk; ++hh) L2Norm(row + static_cast<int64_t>(hh) * dk, dk, hp.rms_eps);
    for (int64_t c = 0; c < static_cast<int64_t>(nk) * dk; ++c) row[c] *= qscale;
  });

  for (const SeqSlice& s : seqs) {
    if (!s.undo) continue;
    const float* y = conv.data() + static_cast<int64_t>(s.row0) * ch;
    s.session->undo(layer).y.assign(y, y + static_cast<int64_t>(s.n) * ch);
  }

  // The recurrence: one (sequence, value head) per task, tokens in order.
  std::vector<const SeqSlice*> slices;
  for (const SeqSlice& s : seqs) slices.push_back(&s);
  runtime::ParallelFor(pool, static_cast<int>(slices.size()) * nv, [&](int job) {
    const SeqSlice& s = *slices[job / nv];
    const int vh = job % nv, kh = vh % nk;
    float* S = s.session->ssm(layer).state.data() + static_cast<int64_t>(vh) * dk * dv;
    for (int t = 0; t < s.n; ++t) {
      const int r = s.row0 + t;
      const float* row = conv.data() + static_cast<int64_t>(r) * ch;
      const float* qh = row + static_cast<int64_t>(kh) * dk;
      const float* kh_ = row + static_cast<int64_t>(nk + kh) * dk;
      const float* vv = row + static_cast<int64_t>(2 * nk) * dk + static_cast<int64_t>(vh) * dv;
      const float g = Softplus(alpha[static_cast<size_t>(r) * nv + vh] + w.dt_bias[vh]) * w.a[vh];
      const float b = Sigmoid(beta[static_cast<size_t>(r) * nv + vh]);
      const float decay = std::exp(g);
      if (s.undo) {
        float* gb = s.session->undo(layer).gb.data() + (static_cast<size_t>(t) * nv + vh) * 2;
        gb[0] = decay;
        gb[1] = b;
      }
      float* oh = o.data() + static_cast<int64_t>(r) * inner + static_cast<int64_t>(vh) * dv;
      DeltaRuleStep(S, qh, kh_, vv, decay, b, dk, dv, oh);
      // Gated RMSNorm: RMSNorm(o) * ssm_norm * SiLU(z).
      RmsNorm(oh, w.norm.data(), dv, hp.rms_eps, oh);
      const float* zh = z.data() + static_cast<int64_t>(r) * inner + static_cast<int64_t>(vh) * dv;
      for (int j = 0; j < dv; ++j) oh[j] *= Silu(zh[j]);
    }
  });
  return runtime::MatMul(w.out, o.data(), n_rows, out, pool);
}

void DeltaNetKeepFirst(const HParams& hp, int layer, Session& s, int keep) {
  const int64_t ch = hp.ssm_conv_channels();
  const int K = hp.ssm_conv_kernel, dk = hp.ssm_d_state, dv = hp.ssm_d_v();
  const int nk = hp.ssm_n_k_heads, nv = hp.ssm_n_v_heads;
  Session::SsmUndo& u = s.undo(layer);
  Session::Ssm& st = s.ssm(layer);
  // Conv state: the last K-1 inputs of [conv0 | x_0 .. x_keep-1].
  for (int j = 0; j < K - 1; ++j) {
    const int src = keep - (K - 1) + j;
    const float* from = src < 0 ? u.conv0.data() + static_cast<int64_t>(K - 1 + src) * ch : u.x.data() + src * ch;
    std::copy_n(from, ch, st.conv.data() + static_cast<int64_t>(j) * ch);
  }
  // Recurrent state: from before the step, the first `keep` tokens again.
  st.state = u.state0;
  std::vector<float> o(static_cast<size_t>(dv));
  for (int vh = 0; vh < nv; ++vh) {
    const int kh = vh % nk;
    float* S = st.state.data() + static_cast<int64_t>(vh) * dk * dv;
    for (int t = 0; t < keep; ++t) {
      const float* row = u.y.data() + static_cast<int64_t>(t) * ch;
      const float* gb = u.gb.data() + (static_cast<size_t>(t) * nv + vh) * 2;
      DeltaRuleStep(S, row + static_cast<int64_t>(kh) * dk, row + static_cast<int64_t>(nk + kh) * dk,
                    row + static_cast<int64_t>(2 * nk) * dk + static_cast<int64_t>(vh) * dv, gb[0], gb[1], dk, dv,
                    o.data());
    }
  }
}

}  // namespace tenzro::model
