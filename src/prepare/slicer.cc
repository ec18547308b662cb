#include "prepare/slicer.h"

#include <vector>

namespace tenzro::prepare {

Result<SlicedMatrix> ConvertSlab(const format::ExpertSlab& slab, quant::GgmlType target, int threads,
                                 std::string_view what) {
  SlicedMatrix out;
  out.source = {slab.file, slab.tensor, slab.file_offset, slab.bytes.size(), slab.type, slab.type == target};
  out.matrix = {target, slab.row_len, slab.rows, {}};
  auto row_bytes = quant::RowBytes(target, slab.row_len);
  if (!row_bytes)
    return Error::InvalidArgument("{} ({}): cannot publish as {}: {}", what, slab.tensor, quant::TypeName(target),
                                  row_bytes.error().message());
  if (slab.type == target) {
    out.matrix.bytes = slab.bytes;
    return out;
  }
  const quant::TypeTraits* src = quant::FindTraits(slab.type);
  if (src == nullptr || src->to_float == nullptr)
    return Error::Unsupported("{} ({}): cannot decode source format {}", what, slab.tensor, quant::TypeName(slab.type));
  uint64_t n = static_cast<uint64_t>(slab.rows) * static_cast<uint64_t>(slab.row_len);
  std::vector<float> f32(n);
  TENZRO_CHECK_OK(quant::DequantizeRowsParallel(slab.type, slab.bytes.data(), f32.data(), slab.rows, slab.row_len,
                                                threads));
  out.owned.resize(*row_bytes * static_cast<uint64_t>(slab.rows));
  TENZRO_CHECK_OK(quant::QuantizeRowsParallel(target, f32.data(), out.owned.data(), slab.rows, slab.row_len, threads));
  out.matrix.bytes = out.owned;
  return out;
}

int ModelLayerCount(const format::Checkpoint& ckpt) {
  std::string arch = ckpt.architecture();
  if (auto n = ckpt.GetInt(arch + ".block_count"); n && *n > 0 && *n < 100000) return static_cast<int>(*n);
  if (auto n = ckpt.GetInt("num_hidden_layers"); n && *n > 0 && *n < 100000) return static_cast<int>(*n);
  return ckpt.n_layers();
}

}  // namespace tenzro::prepare
