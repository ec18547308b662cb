#include "runtime/matmul.h"

#include <cstdlib>
#include <cstring>
#include <iterator>
#include <vector>

#include "core/cpu.h"
#include "runtime/parallel.h"

namespace tenzro::runtime {
namespace {

// Only the target's own family is compiled in (cmake/TenzroModule.cmake).
RowsKernel KernelFor(KernelIsa isa, quant::GgmlType type) {
  RowsKernel k = nullptr;
#if defined(__x86_64__)
  if (isa == KernelIsa::kAvx512) k = avx512::GetKernel(type);
  if (!k && (isa == KernelIsa::kAvx512 || isa == KernelIsa::kAvx2)) k = avx2::GetKernel(type);
#elif defined(__aarch64__)
  if (isa == KernelIsa::kI8mm) k = i8mm::GetKernel(type);
  if (!k && (isa == KernelIsa::kI8mm || isa == KernelIsa::kDotprod)) k = dotprod::GetKernel(type);
  if (!k && isa >= KernelIsa::kNeon) k = neon::GetKernel(type);
#endif
  if (!k) k = scalar::GetKernel(type);
  return k;
}

// The ISAs of this build's family, lowest first (other targets: none, kScalar
// stands in).
#if defined(__x86_64__)
constexpr KernelIsa kFamily[] = {KernelIsa::kAvx2, KernelIsa::kAvx512};
#elif defined(__aarch64__)
constexpr KernelIsa kFamily[] = {KernelIsa::kNeon, KernelIsa::kDotprod, KernelIsa::kI8mm};
#else
constexpr KernelIsa kFamily[] = {KernelIsa::kScalar};
#endif

// Rows per chunk: enough work per chunk to amortise claiming it, enough
// chunks to balance threads. Does not affect results.
int64_t ChunkRows(int64_t rows, int n_tok, int width) {
  if (width <= 1) return rows;
  int64_t target = rows / (4 * width);
  const int64_t min_rows = n_tok >= 8 ? 4 : 16;
  if (target < min_rows) target = min_rows;
  return target;
}

}  // namespace

const char* KernelIsaName(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::kScalar: return "scalar";
    case KernelIsa::kAvx2: return "avx2";
    case KernelIsa::kAvx512: return "avx512";
    case KernelIsa::kNeon: return "neon";
    case KernelIsa::kDotprod: return "dotprod";
    case KernelIsa::kI8mm: return "i8mm";
  }
  return "?";
}

std::span<const KernelIsa> KernelIsaFamily() { return kFamily; }

bool KernelIsaSupported(KernelIsa isa) {
  const CpuFeatures& f = GetCpuFeatures();
  switch (isa) {
    case KernelIsa::kScalar: return true;
    case KernelIsa::kAvx2: return f.HasAvx2Set();
    case KernelIsa::kAvx512: return f.HasAvx512Set();
    case KernelIsa::kNeon: return f.HasNeonSet();
    case KernelIsa::kDotprod: return f.HasDotprodSet();
    case KernelIsa::kI8mm: return f.HasI8mmSet();
  }
  return false;
}

KernelIsa BestKernelIsa() {
  static const KernelIsa best = [] {
    // The family is ordered lowest first: the last supported one wins;
    // TENZRO_RUNTIME_ISA may name a lower one (never a higher or foreign one).
    KernelIsa b = KernelIsa::kScalar;
    int rank = -1;
    for (int i = 0; i < static_cast<int>(std::size(kFamily)); ++i)
      if (kFamily[i] != KernelIsa::kScalar && KernelIsaSupported(kFamily[i])) b = kFamily[i], rank = i;
    if (const char* env = std::getenv("TENZRO_RUNTIME_ISA")) {
      if (std::strcmp(env, "scalar") == 0) b = KernelIsa::kScalar;
      for (int i = 0; i < rank; ++i)
        if (std::strcmp(env, KernelIsaName(kFamily[i])) == 0) b = kFamily[i];
    }
    return b;
  }();
  return best;
}

void RunMatMuls(KernelIsa isa, const MatMulJob* jobs, int n_jobs, int n_tok, ThreadPool* pool) {
  if (n_tok <= 0 || n_jobs <= 0) return;
  const int width = ParallelWidth(pool);
  struct Chunk { int job; int64_t r0, r1; };
  std::vector<Chunk> chunks;
  std::vector<RowsKernel> kernels(n_jobs);
  for (int j = 0; j < n_jobs; ++j) {
    kernels[j] = KernelFor(isa, jobs[j].w->type);
    const int64_t rows = jobs[j].w->rows;
    const int64_t step = ChunkRows(rows, n_tok, width);
    for (int64_t r = 0; r < rows; r += step) chunks.push_back({j, r, std::min(rows, r + step)});
  }
  ParallelFor(pool, static_cast<int>(chunks.size()), [&](int c) {
    const Chunk& ch = chunks[c];
    const MatMulJob& job = jobs[ch.job];
    KernelArgs a;
    a.w = job.w;
    a.x = job.x;
    a.q = job.q;
    a.n_tok = n_tok;
    a.row_bytes = job.w->row_bytes();
    a.y = job.y;
    a.ldy = job.w->rows;
    kernels[ch.job](a, ch.r0, ch.r1);
  });
}

Result<void> MatMulIsa(KernelIsa isa, const WeightMatrix& w, const float* x, int n_tok, float* y,
                       ThreadPool* pool) {
  if (!KernelIsaSupported(isa))
    return Error::InvalidArgument("this CPU cannot run {} kernels", KernelIsaName(isa));
  TENZRO_CHECK_OK(w.Validate());
  if (n_tok < 0) return Error::InvalidArgument("negative token count {}", n_tok);
  if (n_tok == 0) return Ok();
  QuantizedActs q;
  if (UsesQuantizedActs(w.type)) QuantizeActs(x, n_tok, w.row_len, &q, UsesTokenTiles(w.type));
  MatMulJob job{&w, x, &q, y};
  RunMatMuls(isa, &job, 1, n_tok, pool);
  return Ok();
}

Result<void> MatMul(const WeightMatrix& w, const float* x, int n_tok, float* y, ThreadPool* pool) {
  return MatMulIsa(BestKernelIsa(), w, x, n_tok, y, pool);
}

}  // namespace tenzro::runtime
