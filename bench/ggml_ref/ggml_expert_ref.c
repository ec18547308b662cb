// ggml's own CPU backend on one routed expert at Qwen3.5-122B shape (n_embd
// 3072, FFN 1024): y = down . (silu(gate . x) * (up . x)), gate/up Q4_K and
// down Q4_K or Q6_K, random weights quantized by ggml, 1/8/64 tokens, 1 and 2
// threads. The same-machine, same-run reference for bench/expert_bench.cc
// (this host's speed drifts by up to ~1.5x over minutes; compare runs made
// back to back). Not part of the CMake build: it needs a ggml checkout.
//
//   cmake -S ggml -B ggml/build -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF && ninja -C ggml/build ggml
//   cc -O2 -I ggml/include bench/ggml_ref/ggml_expert_ref.c ggml/build/src/libggml*.a -lm -lpthread -lgomp -lstdc++ -o ggml_expert_ref
//   ./ggml_expert_ref
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-cpu.h"
#include "ggml.h"

enum { kEmbd = 3072, kFf = 1024 };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static float frand(unsigned* s) {  // ~N(0, 1) (sum of 4 uniforms)
  float a = 0;
  for (int i = 0; i < 4; ++i) {
    *s = *s * 1664525u + 1013904223u;
    a += (float)(*s >> 8) / 16777216.0f - 0.5f;
  }
  return a * 1.7320508f;
}

static void fill_quant(struct ggml_tensor* t, unsigned seed) {
  const int64_t n = t->ne[0], rows = t->ne[1];
  float* f = malloc(sizeof(float) * n * rows);
  for (int64_t i = 0; i < n * rows; ++i) f[i] = 0.02f * frand(&seed);
  ggml_quantize_chunk(t->type, f, t->data, 0, rows, n, NULL);
  free(f);
}

static double run(enum ggml_type down_type, int n_tok, int threads) {
  struct ggml_init_params p = {256u << 20, NULL, false};
  struct ggml_context* ctx = ggml_init(p);
  struct ggml_tensor* gate = ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_K, kEmbd, kFf);
  struct ggml_tensor* up = ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_K, kEmbd, kFf);
  struct ggml_tensor* down = ggml_new_tensor_2d(ctx, down_type, kFf, kEmbd);
  struct ggml_tensor* x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, kEmbd, n_tok);
  fill_quant(gate, 1);
  fill_quant(up, 2);
  fill_quant(down, 3);
  unsigned s = 7;
  for (int64_t i = 0; i < (int64_t)kEmbd * n_tok; ++i) ((float*)x->data)[i] = frand(&s);
  struct ggml_tensor* h = ggml_mul(ctx, ggml_silu(ctx, ggml_mul_mat(ctx, gate, x)), ggml_mul_mat(ctx, up, x));
  struct ggml_tensor* y = ggml_mul_mat(ctx, down, h);
  struct ggml_cgraph* gf = ggml_new_graph(ctx);
  ggml_build_forward_expand(gf, y);
  ggml_graph_compute_with_ctx(ctx, gf, threads);  // warm up
  double best = 1e9;
  for (int rep = 0; rep < 5; ++rep) {
    int it = 0;
    const double t0 = now();
    double el;
    do {
      ggml_graph_compute_with_ctx(ctx, gf, threads);
      ++it;
      el = now() - t0;
    } while (el < 0.3);
    if (el / it < best) best = el / it;
  }
  ggml_free(ctx);
  return best * 1e3;
}

int main(void) {
  const int toks[] = {1, 8, 64};
  for (int d = 0; d < 2; ++d)
    for (int th = 1; th <= 2; ++th)
      for (int i = 0; i < 3; ++i) {
        const enum ggml_type dt = d ? GGML_TYPE_Q6_K : GGML_TYPE_Q4_K;
        printf("ggml %-6s down %-4s tok %2d thr %d: %.3f ms (best of 5)\n", "Q4_K", d ? "Q6_K" : "Q4_K", toks[i], th,
               run(dt, toks[i], th));
      }
  return 0;
}
