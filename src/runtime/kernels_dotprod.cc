// aarch64 kernels with the dot-product extension (compiled with
// -march=armv8.2-a+dotprod; called only when core/cpu.h reports dotprod):
// Q8_0 and the k-quants with SDOT, one instruction per 16 products. Float
// weights have nothing to gain from it and fall back to kernels_neon.cc.
// Bodies and the bit-exactness argument: kernels_arm.h.
#include "runtime/kernels_arm.h"

namespace tenzro::runtime::dotprod {

RowsKernel GetKernel(quant::GgmlType type) {
  using namespace arm;
  switch (type) {
    case GgmlType::Q8_0: return Q8_0Rows<SdotDot>;
    case GgmlType::Q4_K: return KRows<SdotDot, KKind::kQ4>;
    case GgmlType::Q5_K: return KRows<SdotDot, KKind::kQ5>;
    case GgmlType::Q6_K: return KRows<SdotDot, KKind::kQ6>;
    default: return nullptr;
  }
}

}  // namespace tenzro::runtime::dotprod
