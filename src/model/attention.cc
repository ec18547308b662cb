#include <algorithm>
#include <cmath>

#include "model/layers.h"
#include "model/ops.h"
#include "runtime/matmul.h"
#include "runtime/parallel.h"

namespace tenzro::model {

Result<void> AttentionLayer(const HParams& hp, const AttentionWeights& w, bool gated, int layer,
                            const std::vector<SeqSlice>& seqs, const float* h, int n_rows, float* out,
                            ThreadPool* pool) {
  const int hd = hp.head_dim, nh = hp.n_head, nkv = hp.n_head_kv;
  const int64_t q_row = static_cast<int64_t>(nh) * hd * (gated ? 2 : 1);
  const int64_t kv_row = static_cast<int64_t>(nkv) * hd;
  std::vector<float> q(static_cast<size_t>(n_rows) * q_row), k(static_cast<size_t>(n_rows) * kv_row),
      v(static_cast<size_t>(n_rows) * kv_row), attn(static_cast<size_t>(n_rows) * nh * hd);
  TENZRO_CHECK_OK(runtime::MatMul(w.q, h, n_rows, q.data(), pool));
  TENZRO_CHECK_OK(runtime::MatMul(w.k, h, n_rows, k.data(), pool));
  TENZRO_CHECK_OK(runtime::MatMul(w.v, h, n_rows, v.data(), pool));

  // Per row: Q/K norms and rotary, then the new K/V go into the caches.
  std::vector<float> cs(std::max(2, hp.n_rot));
  for (const SeqSlice& s : seqs) {
    Session::Kv& kv = s.session->kv(layer);
    kv.k.resize(static_cast<size_t>(s.pos0 + s.n) * kv_row);
    kv.v.resize(static_cast<size_t>(s.pos0 + s.n) * kv_row);
    for (int i = 0; i < s.n; ++i) {
      const int r = s.row0 + i;
      RopeAngles(s.pos0 + i, hp.n_rot, hp.rope_base, cs.data());
      for (int hh = 0; hh < nh; ++hh) {
        float* qh = q.data() + r * q_row + static_cast<int64_t>(hh) * hd * (gated ? 2 : 1);
        RmsNorm(qh, w.q_norm.data(), hd, hp.rms_eps, qh);
        RopeNeox(qh, hp.n_rot, cs.data());
      }
      for (int hh = 0; hh < nkv; ++hh) {
        float* kh = k.data() + r * kv_row + static_cast<int64_t>(hh) * hd;
        RmsNorm(kh, w.k_norm.data(), hd, hp.rms_eps, kh);
        RopeNeox(kh, hp.n_rot, cs.data());
      }
      std::copy_n(k.data() + r * kv_row, kv_row, kv.k.data() + static_cast<size_t>(s.pos0 + i) * kv_row);
      std::copy_n(v.data() + r * kv_row, kv_row, kv.v.data() + static_cast<size_t>(s.pos0 + i) * kv_row);
    }
  }

  // Causal attention, one (row, head) per task.
  struct Task {
    const SeqSlice* s;
    int i;
  };
  std::vector<Task> rows;
  for (const SeqSlice& s : seqs)
    for (int i = 0; i < s.n; ++i) rows.push_back({&s, i});
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int group = nh / nkv;
  runtime::ParallelFor(pool, static_cast<int>(rows.size()) * nh, [&](int job) {
    const Task& t = rows[job / nh];
    const int hh = job % nh;
    const int r = t.s->row0 + t.i;
    const int n_ctx = t.s->pos0 + t.i + 1;
    const Session::Kv& kv = t.s->session->kv(layer);
    const float* qh = q.data() + r * q_row + static_cast<int64_t>(hh) * hd * (gated ? 2 : 1);
    const int64_t koff = static_cast<int64_t>(hh / group) * hd;
    std::vector<float> p(n_ctx);
    float mx = -INFINITY;
    for (int j = 0; j < n_ctx; ++j) {
      const float* kj = kv.k.data() + j * kv_row + koff;
      float d = 0.0f;
      for (int c = 0; c < hd; ++c) d += qh[c] * kj[c];
      p[j] = d * scale;
      mx = std::max(mx, p[j]);
    }
    double sum = 0.0;
    for (int j = 0; j < n_ctx; ++j) {
      p[j] = std::exp(p[j] - mx);
      sum += p[j];
    }
    const float inv = static_cast<float>(1.0 / sum);
    float* o = attn.data() + (static_cast<int64_t>(r) * nh + hh) * hd;
    std::fill_n(o, hd, 0.0f);
    for (int j = 0; j < n_ctx; ++j) {
      const float pj = p[j] * inv;
      const float* vj = kv.v.data() + j * kv_row + koff;
      for (int c = 0; c < hd; ++c) o[c] += pj * vj[c];
    }
    if (gated) {
      const float* g = qh + hd;
      for (int c = 0; c < hd; ++c) o[c] *= Sigmoid(g[c]);
    }
  });
  return runtime::MatMul(w.o, attn.data(), n_rows, out, pool);
}

}  // namespace tenzro::model
