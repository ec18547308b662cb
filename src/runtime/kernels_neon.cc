// Baseline aarch64 kernels (armv8-a Advanced SIMD, every ARMv8 core): float
// weights and, for CPUs without the dot-product extension, Q8_0 and the
// k-quants with SMULL/SMLAL2/SADALP integer dot products. The bodies, and how
// they stay bit-identical to the AVX2 kernels, are in kernels_arm.h.
#include "runtime/kernels_arm.h"

namespace tenzro::runtime::neon {

RowsKernel GetKernel(quant::GgmlType type) {
  using namespace arm;
  switch (type) {
    case GgmlType::F32: return FloatRows<4, LoadF32, ScalarF32>;
    case GgmlType::F16: return FloatRows<2, LoadF16, ScalarF16>;
    case GgmlType::BF16: return FloatRows<2, LoadBf16, ScalarBf16>;
    case GgmlType::Q8_0: return Q8_0Rows<NeonDot>;
    case GgmlType::Q4_K: return KRows<NeonDot, KKind::kQ4>;
    case GgmlType::Q5_K: return KRows<NeonDot, KKind::kQ5>;
    case GgmlType::Q6_K: return KRows<NeonDot, KKind::kQ6>;
    default: return nullptr;
  }
}

}  // namespace tenzro::runtime::neon
