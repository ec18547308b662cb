#include "runtime/weight_matrix.h"

namespace tenzro::runtime {

bool IsComputeType(quant::GgmlType type) {
  using quant::GgmlType;
  switch (type) {
    case GgmlType::F32: case GgmlType::F16: case GgmlType::BF16: case GgmlType::Q8_0:
    case GgmlType::Q4_K: case GgmlType::Q5_K: case GgmlType::Q6_K:
      return true;
    default:
      return false;
  }
}

Result<WeightMatrix> WeightMatrix::Borrow(quant::GgmlType type, int64_t row_len, int64_t rows, ByteSpan data) {
  WeightMatrix m;
  m.type = type;
  m.row_len = row_len;
  m.rows = rows;
  m.data = data;
  TENZRO_CHECK_OK(m.Validate());
  return m;
}

Result<WeightMatrix> WeightMatrix::Own(quant::GgmlType type, int64_t row_len, int64_t rows, Bytes data) {
  auto buf = std::make_shared<Bytes>(std::move(data));
  TENZRO_TRY(WeightMatrix m, Borrow(type, row_len, rows, ByteSpan(buf->data(), buf->size())));
  m.owner = std::move(buf);
  return m;
}

uint64_t WeightMatrix::row_bytes() const {
  auto rb = quant::RowBytes(type, row_len);
  return rb ? *rb : 0;
}

Result<void> WeightMatrix::Validate(std::string_view what) const {
  if (!IsComputeType(type))
    return Error::Unsupported("{}: no compute kernel for type {}", what, quant::TypeName(type));
  if (row_len <= 0 || rows <= 0)
    return Error::InvalidArgument("{}: shape {} x {} is not positive", what, rows, row_len);
  if (row_len > (int64_t{1} << 31) || rows > (int64_t{1} << 31))
    return Error::InvalidArgument("{}: shape {} x {} is too large", what, rows, row_len);
  auto rb = quant::RowBytes(type, row_len);
  if (!rb) return rb.error().WithContext(what);
  uint64_t total;
  if (MulOverflow(*rb, static_cast<uint64_t>(rows), &total))
    return Error::InvalidArgument("{}: size overflows", what);
  if (data.size() != total)
    return Error::InvalidArgument("{}: {} {} x {} needs {} bytes, got {}", what, quant::TypeName(type), rows,
                                  row_len, total, data.size());
  return Ok();
}

Result<void> ExpertWeights::Validate() const {
  TENZRO_CHECK_OK(gate.Validate("gate"));
  TENZRO_CHECK_OK(up.Validate("up"));
  TENZRO_CHECK_OK(down.Validate("down"));
  if (up.row_len != gate.row_len || up.rows != gate.rows)
    return Error::InvalidArgument("up is {} x {} but gate is {} x {}", up.rows, up.row_len, gate.rows,
                                  gate.row_len);
  if (down.rows != gate.row_len)
    return Error::InvalidArgument("down has {} rows, expected n_embd {}", down.rows, gate.row_len);
  if (down.row_len != gate.rows)
    return Error::InvalidArgument("down rows have {} values, expected n_ff {}", down.row_len, gate.rows);
  return Ok();
}

}  // namespace tenzro::runtime
