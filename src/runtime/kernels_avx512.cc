// AVX-512 kernels: not written yet; GetKernel returns null so MatMul falls
// back to the AVX2 kernels on AVX-512 machines (see docs/compute.md).
#include "runtime/kernels.h"

namespace tenzro::runtime::avx512 {

RowsKernel GetKernel(quant::GgmlType) { return nullptr; }

}  // namespace tenzro::runtime::avx512
