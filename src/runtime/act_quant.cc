#include "runtime/act_quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/cpu.h"
#include "runtime/act_quant_internal.h"

namespace tenzro::runtime {
namespace scalar {

float BlockAmax(const float* x) {
  float m = 0.0f;
  for (int i = 0; i < kActBlock; ++i) m = std::fmax(m, std::fabs(x[i]));  // NaN ignored
  return m;
}

void QuantizeBlock(const float* x, float id, int8_t* q, int sums[2]) {
  sums[0] = sums[1] = 0;
  for (int i = 0; i < kActBlock; ++i) {
    // nearbyint: round half to even in the default FP environment. Clamped
    // before the conversion, which is undefined out of range; NaN -> 0.
    const float r = x[i] * id;
    const int v = r == r ? static_cast<int>(std::nearbyint(std::fmin(std::fmax(r, -127.0f), 127.0f))) : 0;
    q[i] = static_cast<int8_t>(v);
    sums[i / 16] += v;
  }
}

}  // namespace scalar
namespace {

struct BlockOps {
  float (*amax)(const float*);
  void (*quantize)(const float*, float, int8_t*, int[2]);
};

BlockOps PickOps() {
#if defined(__x86_64__)
  if (GetCpuFeatures().HasAvx2Set()) return {avx2::BlockAmax, avx2::QuantizeBlock};
#elif defined(__aarch64__)
  if (GetCpuFeatures().HasNeonSet()) return {neon::BlockAmax, neon::QuantizeBlock};
#endif
  return {scalar::BlockAmax, scalar::QuantizeBlock};
}

}  // namespace

void QuantizeActs(const float* x, int n_tok, int64_t n, QuantizedActs* out, bool tiles) {
  static const BlockOps ops = PickOps();
  const int64_t nb = n / kActBlock;
  const int64_t ng = (n + kActGroup - 1) / kActGroup;
  out->n = n;
  out->n_tok = n_tok;
  out->qs.resize(static_cast<size_t>(n_tok) * n);
  out->d.resize(static_cast<size_t>(n_tok) * nb);
  out->base.resize(static_cast<size_t>(n_tok) * ng);
  out->mul.resize(static_cast<size_t>(n_tok) * nb);
  out->b16.resize(static_cast<size_t>(n_tok) * nb * 2);
  for (int t = 0; t < n_tok; ++t) {
    const float* xt = x + static_cast<int64_t>(t) * n;
    int8_t* qt = out->qs.data() + static_cast<int64_t>(t) * n;
    for (int64_t g = 0; g < ng; ++g) {
      const int64_t b0 = g * (kActGroup / kActBlock), b1 = std::min(nb, b0 + kActGroup / kActBlock);
      float bmax[kActGroup / kActBlock];
      float gmax = 0.0f;
      for (int64_t b = b0; b < b1; ++b) {
        bmax[b - b0] = ops.amax(xt + b * kActBlock);
        gmax = std::fmax(gmax, bmax[b - b0]);
      }
      const float base = gmax / (127.0f * 16.0f);
      const bool ok = gmax > 0.0f && gmax <= 3.4e38f;  // zero, inf or NaN groups quantize to 0
      out->base[t * ng + g] = ok ? base : 0.0f;
      for (int64_t b = b0; b < b1; ++b) {
        // The finest step (base * mul, mul integer) that still covers the block.
        int mul = 1;
        if (ok) {
          const float f = std::ceil(16.0f * (bmax[b - b0] / gmax));
          mul = f < 1.0f ? 1 : f > 16.0f ? 16 : static_cast<int>(f);
        }
        const float id = ok ? 1.0f / (base * static_cast<float>(mul)) : 0.0f;
        int sums[2];
        ops.quantize(xt + b * kActBlock, id, qt + b * kActBlock, sums);
        const int64_t bi = static_cast<int64_t>(t) * nb + b;
        out->d[bi] = base * static_cast<float>(mul);
        out->mul[bi] = static_cast<int16_t>(mul);
        out->b16[2 * bi] = static_cast<int16_t>(sums[0] * mul);
        out->b16[2 * bi + 1] = static_cast<int16_t>(sums[1] * mul);
      }
    }
  }

  out->n_tiles = 0;
  if (!tiles || n_tok < kTileMin || n % kActGroup != 0) {
    out->tq.clear();
    out->tmul.clear();
    out->tb16.clear();
    out->tbase.clear();
    return;
  }
  const int n_tiles = (n_tok + kTileTokens - 1) / kTileTokens;
  out->n_tiles = n_tiles;
  out->tq.assign(static_cast<size_t>(n_tiles) * n * kTileTokens, 0);
  out->tmul.assign(static_cast<size_t>(n_tiles) * nb * 16, 0);
  out->tb16.assign(static_cast<size_t>(n_tiles) * nb * 16, 0);
  out->tbase.assign(static_cast<size_t>(n_tiles) * ng * kTileTokens, 0.0f);
  for (int t = 0; t < n_tok; ++t) {
    const int tile = t / kTileTokens, lane = t % kTileTokens;
    const int8_t* qt = out->q(t);
    int8_t* tq = out->tq.data() + static_cast<int64_t>(tile) * n * kTileTokens + lane * 4;
    for (int64_t k = 0; k < n; k += 4) std::memcpy(tq + k * kTileTokens, qt + k, 4);
    int16_t* tmul = out->tmul.data() + static_cast<int64_t>(tile) * nb * 16 + 2 * lane;
    int16_t* tb16 = out->tb16.data() + static_cast<int64_t>(tile) * nb * 16 + 2 * lane;
    for (int64_t b = 0; b < nb; ++b) {
      tmul[b * 16] = tmul[b * 16 + 1] = out->muls(t)[b];
      tb16[b * 16] = out->sums16(t)[2 * b];
      tb16[b * 16 + 1] = out->sums16(t)[2 * b + 1];
    }
    for (int64_t g = 0; g < ng; ++g)
      out->tbase[(static_cast<int64_t>(tile) * ng + g) * kTileTokens + lane] = out->group_base(t)[g];
  }
}

}  // namespace tenzro::runtime
