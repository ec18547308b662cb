#include "runtime/act_quant.h"

#include <cmath>

namespace tenzro::runtime {

void QuantizeActs(const float* x, int n_tok, int64_t n, QuantizedActs* out) {
  const int64_t nb = n / kActBlock;
  out->n = n;
  out->n_tok = n_tok;
  out->qs.resize(static_cast<size_t>(n_tok) * n);
  out->d.resize(static_cast<size_t>(n_tok) * nb);
  out->s16.resize(static_cast<size_t>(n_tok) * nb * 2);
  out->dxs.resize(static_cast<size_t>(n_tok) * nb);
  for (int t = 0; t < n_tok; ++t) {
    for (int64_t b = 0; b < nb; ++b) {
      const float* xb = x + static_cast<int64_t>(t) * n + b * kActBlock;
      float amax = 0.0f;
      for (int i = 0; i < kActBlock; ++i) amax = std::fmax(amax, std::fabs(xb[i]));
      const float d = amax / 127.0f;
      const float id = d > 0.0f ? 127.0f / amax : 0.0f;
      int8_t* q = out->qs.data() + static_cast<int64_t>(t) * n + b * kActBlock;
      int sum[2] = {0, 0};
      for (int i = 0; i < kActBlock; ++i) {
        // nearbyint: round half to even in the default FP environment.
        // Clamped before the conversion, which is undefined out of range;
        // NaN (a non-finite input) quantizes to 0.
        const float r = xb[i] * id;
        const int v = r == r ? static_cast<int>(std::nearbyint(std::fmin(std::fmax(r, -127.0f), 127.0f))) : 0;
        q[i] = static_cast<int8_t>(v);
        sum[i / 16] += q[i];
      }
      const int64_t bi = static_cast<int64_t>(t) * nb + b;
      out->d[bi] = d;
      out->s16[2 * bi] = static_cast<int16_t>(sum[0]);
      out->s16[2 * bi + 1] = static_cast<int16_t>(sum[1]);
      out->dxs[bi] = d * static_cast<float>(sum[0] + sum[1]);
    }
  }
}

}  // namespace tenzro::runtime
