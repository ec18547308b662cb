// tenzro dispatch: the exec frame — the binary request a forward sends to an
// expert holder ("run these experts of (model, layer) on these rows") and
// the holder's answer. Wire format: docs/formats/exec-frame.md.
//
// Transport-free: the same bytes travel as an HTTP body (POST /v1/moe/exec)
// and on a QUIC stream (ALPN tenzro/moe-exec/1). Rows travel as f32 (exact),
// bf16 or f16 (half the bytes; rounded by quant/fp16.h, ggml's rounding);
// in memory they are always float32.
//
//   Bytes b = EncodeExecRequest(req);                       // client
//   TENZRO_TRY(ExecRequest r, DecodeExecRequest(b));         // holder
//   Bytes a = EncodeExecResponse(resp);                     // holder
//   TENZRO_TRY(ExecResponse x, DecodeExecResponse(a));       // client
//
// Decoding is strict: magic, version, reserved bits, every count checked
// against ExecLimits and against the bytes left before anything is
// allocated; trailing bytes are an error; with reject_non_finite a NaN or
// Inf row value is refused naming the expert and row; a q8_0 block with a
// NaN or Inf scale is refused in both frames. Errors: kCorruption
// (malformed, a non-finite q8_0 scale), kUnsupported (other version or
// dtype), kResourceExhausted (over a limit), kInvalidArgument (non-finite
// values, bad model id, q8_0 with d_model not a multiple of 32).
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/bytes.h"
#include "core/result.h"
#include "runtime/wire_rows.h"

namespace tenzro::dispatch {

inline constexpr uint8_t kExecRequestMagic[4] = {'T', 'Z', 'X', 'Q'};
inline constexpr uint8_t kExecResponseMagic[4] = {'T', 'Z', 'X', 'R'};
inline constexpr uint16_t kExecVersion = 1;
inline constexpr size_t kMaxModelIdBytes = 128;
inline constexpr size_t kMaxErrorMessageBytes = 4096;
// HTTP Content-Type of both frames.
inline constexpr std::string_view kExecContentType = "application/x-tenzro-exec";

// The frame's dtype byte is the WireDtype value: 0 f32, 1 bf16, 2 f16, 3 q8_0.
using RowType = runtime::WireDtype;
inline std::string_view RowTypeName(RowType t) { return runtime::WireDtypeName(t); }
// kInvalidArgument for anything but "f32", "bf16", "f16", "q8_0".
inline Result<RowType> ParseRowType(std::string_view name) { return runtime::ParseWireDtype(name); }
// Bytes of `n_values` row values on the wire (q8_0: n_values % 32 == 0).
inline uint64_t RowBytesOnWire(RowType t, uint64_t n_values) { return runtime::WireBytes(t, n_values); }

struct ExecLimits {
  uint32_t max_experts = 4096;            // expert entries per frame
  uint64_t max_rows = 1u << 16;           // rows per frame, all experts together
  uint32_t max_d_model = 1u << 16;
  uint64_t max_frame_bytes = 256ull << 20;
  bool reject_non_finite = true;          // requests only: NaN / Inf rows
};

// One expert's rows: n_rows x d_model floats, token-major.
struct ExecBatch {
  int expert = 0;
  uint32_t n_rows = 0;
  std::vector<float> rows;
};

struct ExecRequest {
  uint64_t request_id = 0;  // opaque; echoed by the answer
  std::string model;        // catalog id, 1..128 printable ASCII bytes
  int layer = 0;
  uint32_t d_model = 0;
  RowType dtype = RowType::kF32;
  uint32_t deadline_ms = 0;  // the holder's time budget; 0 = its default
  std::vector<ExecBatch> experts;
};

// One expert's answer: rows (n_rows x d_model) or an error (rows empty).
struct ExecResult {
  int expert = 0;
  uint32_t n_rows = 0;
  std::optional<Error> error;
  std::vector<float> rows;
};

struct ExecResponse {
  uint64_t request_id = 0;
  int layer = 0;
  uint32_t d_model = 0;
  RowType dtype = RowType::kF32;
  uint32_t compute_us = 0;    // holder time from decoded request to last row
  std::optional<Error> error; // the whole request failed (experts empty)
  std::vector<ExecResult> experts;
};

// REQUIRES: req is well formed (model id fits, every batch has
// rows.size() == n_rows * d_model; see CheckExecRequest).
Bytes EncodeExecRequest(const ExecRequest& req);
Result<ExecRequest> DecodeExecRequest(ByteSpan frame, const ExecLimits& limits = {});

// REQUIRES: every ok result has rows.size() == n_rows * d_model.
Bytes EncodeExecResponse(const ExecResponse& resp);
Result<ExecResponse> DecodeExecResponse(ByteSpan frame, const ExecLimits& limits = {});

// An upper bound on the size of any answer to `req` (f32 rows, or an error
// message, per expert, plus the headers): what a caller may read before it
// knows the holder is sending more than the request can produce.
uint64_t ExecResponseBoundBytes(const ExecRequest& req);

// An upper bound on the size of any request `limits` accept for a model of
// `d_model` (f32 rows: `limits.max_rows` in all, `limits.max_experts`
// entries, the longest model id): what a holder may admit as the body of an
// exec request before reading it.
uint64_t ExecRequestBoundBytes(const ExecLimits& limits, uint32_t d_model);

// The checks Decode applies to a request, for one built in memory (local
// execution never encodes). kInvalidArgument / kResourceExhausted.
Result<void> CheckExecRequest(const ExecRequest& req, const ExecLimits& limits = {});

// An error answer to `req_id` (used for frames that did not decode).
ExecResponse ErrorExecResponse(uint64_t request_id, Error error);

}  // namespace tenzro::dispatch
