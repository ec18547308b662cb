// tenzro blob: the iroh-blobs request codec (iroh-blobs 0.35, ALPN
// /iroh-bytes/4; docs/formats/quic.md "Request"): a pure codec, no I/O.
//
// A request is postcard-encoded Request::Get { hash, RangeSpecSeq }: varint
// kind 0, the 32-byte hash, then (offset, RangeSpec) pairs. Only
// single-blob requests exist here: ranges of the blob itself (index 0) and an
// empty spec for the children. Fuzzed by tests/fuzz/iroh_request_fuzz.cc.
#pragma once

#include "blob/blake3.h"
#include "blob/chunk_ranges.h"
#include "core/bytes.h"
#include "core/result.h"

namespace tenzro::blob {

struct GetRequest {
  Blake3Hash hash;
  ChunkRanges ranges;  // of the blob itself (index 0)
};

// Request::Get(GetRequest { hash, RangeSpecSeq::from_ranges([ranges]) }).
Bytes EncodeGetRequest(const Blake3Hash& hash, const ChunkRanges& ranges);
// kCorruption naming the field for malformed bytes; kUnsupported for
// another request kind or a hash-sequence request (children selected).
Result<GetRequest> DecodeGetRequest(ByteSpan bytes);

}  // namespace tenzro::blob
