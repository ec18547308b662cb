#include "model/weights.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "quant/types.h"

namespace tenzro::model {

namespace {

uint64_t MatrixBytes(const runtime::WeightMatrix& m) { return m.data.size(); }

}  // namespace

uint64_t ModelWeights::bytes_per_token() const {
  uint64_t b = MatrixBytes(output);
  for (const LayerWeights& l : layers) {
    if (l.kind == LayerKind::kDeltaNet) {
      b += MatrixBytes(l.ssm.qkv) + MatrixBytes(l.ssm.gate) + MatrixBytes(l.ssm.alpha) + MatrixBytes(l.ssm.beta) +
           MatrixBytes(l.ssm.out);
    } else {
      b += MatrixBytes(l.attn.q) + MatrixBytes(l.attn.k) + MatrixBytes(l.attn.v) + MatrixBytes(l.attn.o);
    }
  }
  return b;
}

std::string BlockTensor(int layer, std::string_view suffix) { return fmt::format("blk.{}.{}", layer, suffix); }

Result<runtime::WeightMatrix> LoadMatrix(const format::Checkpoint& c, const std::string& name, int64_t row_len,
                                         int64_t rows) {
  const format::TensorRef* t = c.FindTensor(name);
  if (!t) return Error::NotFound("tensor {} is missing", name);
  if (t->ne.size() < 1 || t->ne.size() > 2 || t->ne[0] != row_len || (t->ne.size() == 2 ? t->ne[1] : 1) != rows)
    return Error::InvalidArgument("tensor {} has shape [{}], expected [{}, {}]", name, fmt::join(t->ne, ", "),
                                  row_len, rows);
  auto m = runtime::WeightMatrix::Borrow(t->type, row_len, rows, t->bytes);
  if (!m) return m.error().WithContext(name);
  return m;
}

Result<std::vector<float>> LoadVector(const format::Checkpoint& c, const std::string& name, int64_t n) {
  const format::TensorRef* t = c.FindTensor(name);
  if (!t) return Error::NotFound("tensor {} is missing", name);
  int64_t count = 1;
  for (int64_t d : t->ne) count *= d;
  if (count != n) return Error::InvalidArgument("tensor {} has {} values, expected {}", name, count, n);
  const quant::TypeTraits* tr = quant::FindTraits(t->type);
  if (!tr || !tr->to_float) return Error::Unsupported("tensor {}: type cannot be decoded", name);
  if (n % tr->block_elems != 0 || t->bytes.size() != static_cast<uint64_t>(n / tr->block_elems) * tr->block_bytes)
    return Error::InvalidArgument("tensor {}: {} bytes do not hold {} values of {}", name, t->bytes.size(), n,
                                  tr->name);
  std::vector<float> out(static_cast<size_t>(n));
  auto r = quant::DequantizeRows(t->type, t->bytes.data(), out.data(), 1, n);
  if (!r) return r.error().WithContext(name);
  return out;
}

}  // namespace tenzro::model
