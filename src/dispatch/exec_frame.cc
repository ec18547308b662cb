#include "dispatch/exec_frame.h"

#include <cmath>
#include <cstring>
#include <unordered_set>


namespace tenzro::dispatch {
namespace {

constexpr uint8_t kMaxErrorCode = static_cast<uint8_t>(ErrorCode::kInternal);

// Appends rows to `out` (the frame the ByteWriter writes to).
void PutRows(Bytes& out, const std::vector<float>& rows, RowType t) {
  if (rows.empty()) return;
  const size_t at = out.size();
  out.resize(at + RowBytesOnWire(t, rows.size()));
  runtime::EncodeWireRows(t, rows.data(), rows.size(), out.data() + at);
}

void PutMessage(ByteWriter& w, const Error& e) {
  const std::string& m = e.message();
  const size_t n = std::min(m.size(), kMaxErrorMessageBytes);
  w.U16(static_cast<uint16_t>(n));
  w.Raw(m.data(), n);
}

// (Result<Error> would be ambiguous: the error travels in `out`.)
Result<void> GetError(ByteReader& r, uint8_t status, std::string_view what, std::optional<Error>* out) {
  if (status > kMaxErrorCode) return r.Corrupt(what, fmt::format("unknown status {}", status));
  TENZRO_TRY(uint16_t n, r.U16(what));
  if (n > kMaxErrorMessageBytes) return r.Corrupt(what, fmt::format("message of {} bytes", n));
  TENZRO_TRY(std::string msg, r.String(n, what));
  out->emplace(static_cast<ErrorCode>(status), std::move(msg));
  return Ok();
}

Result<RowType> GetRowType(ByteReader& r) {
  TENZRO_TRY(uint8_t t, r.U8("dtype"));
  if (t > static_cast<uint8_t>(RowType::kQ8_0))
    return Error::Unsupported("exec frame: dtype {} is not f32/bf16/f16/q8_0", t);
  return static_cast<RowType>(t);
}

// Magic + version; kUnsupported for another version.
Result<void> GetPreamble(ByteReader& r, const uint8_t (&magic)[4], std::string_view kind) {
  TENZRO_TRY(ByteSpan m, r.Take(4, "magic"));
  if (std::memcmp(m.data(), magic, 4) != 0) return r.Corrupt("magic", fmt::format("not an exec {} frame", kind));
  TENZRO_TRY(uint16_t v, r.U16("version"));
  if (v != kExecVersion)
    return Error::Unsupported("exec {} frame version {} (this build speaks {})", kind, v, kExecVersion);
  return Ok();
}

Result<int> GetIndex(ByteReader& r, std::string_view what) {
  TENZRO_TRY(uint32_t v, r.U32(what));
  if (v > static_cast<uint32_t>(INT32_MAX)) return r.Corrupt(what, fmt::format("{} is out of range", v));
  return static_cast<int>(v);
}

Result<void> CheckModelId(std::string_view m) {
  if (m.empty() || m.size() > kMaxModelIdBytes)
    return Error::InvalidArgument("exec frame: model id of {} bytes (1..{})", m.size(), kMaxModelIdBytes);
  for (char c : m)
    if (c <= 0x20 || c >= 0x7f) return Error::InvalidArgument("exec frame: model id has a non-printable byte");
  return Ok();
}

Result<void> CheckFinite(const float* v, size_t n, int expert, int64_t d_model) {
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(v[i]))
      return Error::InvalidArgument("exec request: expert {} row {} column {} is {}", expert, i / d_model, i % d_model,
                                    std::isnan(v[i]) ? "NaN" : "Inf");
  return Ok();
}

// Reads n_rows x d_model values of `t` into rows (count checked by caller).
Result<void> GetBatchRows(ByteReader& r, RowType t, uint32_t d_model, uint32_t n_rows, std::vector<float>* rows) {
  const size_t n = static_cast<size_t>(n_rows) * d_model;
  TENZRO_TRY(ByteSpan src, r.Take(RowBytesOnWire(t, n), "rows"));
  rows->resize(n);
  if (auto st = runtime::DecodeWireRows(t, src.data(), n, rows->data()); !st) return r.Corrupt("rows", st.error().message());
  return Ok();
}

// A request entry asks for work: at least one row, each expert once (an
// entry without rows would still make the holder load and pin the expert).
Result<void> CheckEntry(const ExecBatch& b, std::unordered_set<int>& seen) {
  if (b.n_rows == 0) return Error::InvalidArgument("exec request: expert {} has no rows", b.expert);
  if (!seen.insert(b.expert).second)
    return Error::InvalidArgument("exec request: expert {} appears more than once", b.expert);
  return Ok();
}

// q8_0 blocks must not cross rows: d_model a multiple of 32.
Result<void> CheckDtypeFits(RowType t, uint32_t d_model, std::string_view what) {
  if (auto st = runtime::CheckWireRow(t, d_model); !st)
    return Error::InvalidArgument("{}: {}", what, st.error().message());
  return Ok();
}

// Overflow-safe total: the rows' bytes == remaining. (total_rows <= 2^32 and
// d_model <= 2^32, so vals fits in u64; 4 bytes a value at most.)
Result<void> CheckRowBytes(const ByteReader& r, uint64_t total_rows, uint32_t d_model, RowType t) {
  uint64_t vals = 0, bytes = 0;
  if (MulOverflow(total_rows, d_model, &vals) || MulOverflow(vals, uint64_t{4}, &bytes) ||
      (bytes = RowBytesOnWire(t, vals)) != r.remaining())
    return r.Corrupt("rows", fmt::format("{} rows of d_model {} {} need {} bytes, {} left", total_rows, d_model,
                                         RowTypeName(t), bytes, r.remaining()));
  return Ok();
}

}  // namespace

Result<void> CheckExecRequest(const ExecRequest& req, const ExecLimits& limits) {
  TENZRO_CHECK_OK(CheckModelId(req.model));
  if (req.layer < 0) return Error::InvalidArgument("exec request: layer {} is negative", req.layer);
  if (req.d_model == 0 || req.d_model > limits.max_d_model)
    return Error::InvalidArgument("exec request: d_model {} is outside 1..{}", req.d_model, limits.max_d_model);
  TENZRO_CHECK_OK(CheckDtypeFits(req.dtype, req.d_model, "exec request"));
  if (req.experts.size() > limits.max_experts)
    return Error::ResourceExhausted("exec request: {} experts (limit {})", req.experts.size(), limits.max_experts);
  uint64_t total = 0;
  std::unordered_set<int> seen;
  for (const ExecBatch& b : req.experts) {
    if (b.expert < 0) return Error::InvalidArgument("exec request: expert {} is negative", b.expert);
    TENZRO_CHECK_OK(CheckEntry(b, seen));
    if (b.rows.size() != static_cast<size_t>(b.n_rows) * req.d_model)
      return Error::InvalidArgument("exec request: expert {} has {} values for {} rows of d_model {}", b.expert,
                                    b.rows.size(), b.n_rows, req.d_model);
    total += b.n_rows;
    if (limits.reject_non_finite) TENZRO_CHECK_OK(CheckFinite(b.rows.data(), b.rows.size(), b.expert, req.d_model));
  }
  if (total > limits.max_rows)
    return Error::ResourceExhausted("exec request: {} rows (limit {})", total, limits.max_rows);
  return Ok();
}

Bytes EncodeExecRequest(const ExecRequest& req) {
  Bytes out;
  size_t vals = 0;
  for (const ExecBatch& b : req.experts) vals += b.rows.size();
  out.reserve(40 + req.model.size() + 8 * req.experts.size() + RowBytesOnWire(req.dtype, vals));
  ByteWriter w(&out);
  w.Raw(kExecRequestMagic, 4);
  w.U16(kExecVersion);
  w.U8(static_cast<uint8_t>(req.dtype));
  w.U8(0);
  w.U64(req.request_id);
  w.U32(static_cast<uint32_t>(req.layer));
  w.U32(req.d_model);
  w.U32(req.deadline_ms);
  w.U16(static_cast<uint16_t>(req.model.size()));
  w.Raw(req.model.data(), req.model.size());
  w.U32(static_cast<uint32_t>(req.experts.size()));
  for (const ExecBatch& b : req.experts) {
    w.U32(static_cast<uint32_t>(b.expert));
    w.U32(b.n_rows);
  }
  for (const ExecBatch& b : req.experts) PutRows(out, b.rows, req.dtype);
  return out;
}

Result<ExecRequest> DecodeExecRequest(ByteSpan frame, const ExecLimits& limits) {
  if (frame.size() > limits.max_frame_bytes)
    return Error::ResourceExhausted("exec request: {} bytes (limit {})", frame.size(), limits.max_frame_bytes);
  ByteReader r(frame, "exec request");
  TENZRO_CHECK_OK(GetPreamble(r, kExecRequestMagic, "request"));
  ExecRequest req;
  TENZRO_TRY(req.dtype, GetRowType(r));
  TENZRO_TRY(uint8_t flags, r.U8("flags"));
  if (flags != 0) return r.Corrupt("flags", fmt::format("reserved bits set ({:#x})", flags));
  TENZRO_TRY(req.request_id, r.U64("request_id"));
  TENZRO_TRY(req.layer, GetIndex(r, "layer"));
  TENZRO_TRY(req.d_model, r.U32("d_model"));
  if (req.d_model == 0) return r.Corrupt("d_model", "0");
  if (req.d_model > limits.max_d_model)
    return Error::ResourceExhausted("exec request: d_model {} is over {}", req.d_model, limits.max_d_model);
  TENZRO_CHECK_OK(CheckDtypeFits(req.dtype, req.d_model, "exec request"));
  TENZRO_TRY(req.deadline_ms, r.U32("deadline_ms"));
  TENZRO_TRY(uint16_t model_len, r.U16("model_len"));
  TENZRO_TRY(req.model, r.String(model_len, "model"));
  TENZRO_CHECK_OK(CheckModelId(req.model));
  TENZRO_TRY(uint32_t n_experts, r.U32("n_experts"));
  if (n_experts > limits.max_experts)
    return Error::ResourceExhausted("exec request: {} experts (limit {})", n_experts, limits.max_experts);
  TENZRO_CHECK_OK(r.CheckCount(n_experts, 8, "expert table"));
  req.experts.resize(n_experts);
  uint64_t total_rows = 0;
  std::unordered_set<int> seen;
  for (ExecBatch& b : req.experts) {
    TENZRO_TRY(b.expert, GetIndex(r, "expert"));
    TENZRO_TRY(b.n_rows, r.U32("n_rows"));
    TENZRO_CHECK_OK(CheckEntry(b, seen));
    total_rows += b.n_rows;  // <= 2^32 * 2^32: no overflow in u64
  }
  if (total_rows > limits.max_rows)
    return Error::ResourceExhausted("exec request: {} rows (limit {})", total_rows, limits.max_rows);
  TENZRO_CHECK_OK(CheckRowBytes(r, total_rows, req.d_model, req.dtype));
  for (ExecBatch& b : req.experts) {
    TENZRO_CHECK_OK(GetBatchRows(r, req.dtype, req.d_model, b.n_rows, &b.rows));
    if (limits.reject_non_finite) TENZRO_CHECK_OK(CheckFinite(b.rows.data(), b.rows.size(), b.expert, req.d_model));
  }
  return req;
}

Bytes EncodeExecResponse(const ExecResponse& resp) {
  Bytes out;
  size_t vals = 0;
  for (const ExecResult& e : resp.experts) vals += e.rows.size();
  out.reserve(40 + 16 * resp.experts.size() + RowBytesOnWire(resp.dtype, vals));
  ByteWriter w(&out);
  w.Raw(kExecResponseMagic, 4);
  w.U16(kExecVersion);
  w.U8(static_cast<uint8_t>(resp.dtype));
  w.U8(resp.error ? static_cast<uint8_t>(resp.error->code()) : 0);
  w.U64(resp.request_id);
  w.U32(static_cast<uint32_t>(resp.layer));
  w.U32(resp.d_model);
  w.U32(resp.compute_us);
  if (resp.error) {
    PutMessage(w, *resp.error);
    return out;
  }
  w.U32(static_cast<uint32_t>(resp.experts.size()));
  for (const ExecResult& e : resp.experts) {
    w.U32(static_cast<uint32_t>(e.expert));
    w.U32(e.n_rows);
    if (e.error) {
      w.U8(static_cast<uint8_t>(e.error->code()));
      PutMessage(w, *e.error);
    } else {
      w.U8(0);
      w.U16(0);
    }
  }
  for (const ExecResult& e : resp.experts)
    if (!e.error) PutRows(out, e.rows, resp.dtype);
  return out;
}

Result<ExecResponse> DecodeExecResponse(ByteSpan frame, const ExecLimits& limits) {
  if (frame.size() > limits.max_frame_bytes)
    return Error::ResourceExhausted("exec response: {} bytes (limit {})", frame.size(), limits.max_frame_bytes);
  ByteReader r(frame, "exec response");
  TENZRO_CHECK_OK(GetPreamble(r, kExecResponseMagic, "response"));
  ExecResponse resp;
  TENZRO_TRY(resp.dtype, GetRowType(r));
  TENZRO_TRY(uint8_t status, r.U8("status"));
  TENZRO_TRY(resp.request_id, r.U64("request_id"));
  TENZRO_TRY(resp.layer, GetIndex(r, "layer"));
  TENZRO_TRY(resp.d_model, r.U32("d_model"));
  if (resp.d_model > limits.max_d_model)
    return Error::ResourceExhausted("exec response: d_model {} is over {}", resp.d_model, limits.max_d_model);
  TENZRO_TRY(resp.compute_us, r.U32("compute_us"));
  if (status != 0) {
    TENZRO_CHECK_OK(GetError(r, status, "error", &resp.error));
  } else {
    if (resp.d_model == 0) return r.Corrupt("d_model", "0");
    TENZRO_CHECK_OK(CheckDtypeFits(resp.dtype, resp.d_model, "exec response"));
    TENZRO_TRY(uint32_t n_experts, r.U32("n_experts"));
    if (n_experts > limits.max_experts)
      return Error::ResourceExhausted("exec response: {} experts (limit {})", n_experts, limits.max_experts);
    TENZRO_CHECK_OK(r.CheckCount(n_experts, 11, "expert table"));
    resp.experts.resize(n_experts);
    uint64_t total_rows = 0;
    for (ExecResult& e : resp.experts) {
      TENZRO_TRY(e.expert, GetIndex(r, "expert"));
      TENZRO_TRY(e.n_rows, r.U32("n_rows"));
      TENZRO_TRY(uint8_t st, r.U8("expert status"));
      if (st != 0) {
        TENZRO_CHECK_OK(GetError(r, st, "expert error", &e.error));
      } else {
        TENZRO_TRY(uint16_t n, r.U16("expert message"));
        if (n != 0) return r.Corrupt("expert message", "an ok entry carries a message");
        total_rows += e.n_rows;
      }
    }
    if (total_rows > limits.max_rows)
      return Error::ResourceExhausted("exec response: {} rows (limit {})", total_rows, limits.max_rows);
    TENZRO_CHECK_OK(CheckRowBytes(r, total_rows, resp.d_model, resp.dtype));
    for (ExecResult& e : resp.experts)
      if (!e.error) TENZRO_CHECK_OK(GetBatchRows(r, resp.dtype, resp.d_model, e.n_rows, &e.rows));
  }
  if (r.remaining() != 0) return r.Corrupt("end", fmt::format("{} trailing bytes", r.remaining()));
  return resp;
}

ExecResponse ErrorExecResponse(uint64_t request_id, Error error) {
  ExecResponse r;
  r.request_id = request_id;
  r.error = std::move(error);
  return r;
}

uint64_t ExecRequestBoundBytes(const ExecLimits& limits, uint32_t d_model) {
  constexpr uint64_t kHeader = 30 + 128 + 4;  // fixed fields, the longest model id, n_experts
  return kHeader + uint64_t{8} * limits.max_experts + limits.max_rows * d_model * sizeof(float);
}

uint64_t ExecResponseBoundBytes(const ExecRequest& req) {
  constexpr uint64_t kHeader = 64, kPerExpert = 32;
  uint64_t n = kHeader + kMaxErrorMessageBytes;
  for (const ExecBatch& b : req.experts)
    n += kPerExpert + kMaxErrorMessageBytes + uint64_t{b.n_rows} * req.d_model * sizeof(float);
  return n;
}

}  // namespace tenzro::dispatch
