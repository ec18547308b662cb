// tenzro blob: blob URIs, `tenzro://blob/<64 lower-case hex>[?k=v&...]`.
//
// The query may carry hints where to fetch the blob (e.g. node=<id>,
// addr=<ip:port>); they are kept in order, percent-decoded, and written back
// percent-encoded. The hash is the BLAKE3 hash of the content (docs/formats/blob-store.md).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "blob/blake3.h"
#include "core/result.h"

namespace tenzro::blob {

inline constexpr std::string_view kBlobUriPrefix = "tenzro://blob/";

struct BlobUri {
  Blake3Hash hash;
  std::vector<std::pair<std::string, std::string>> params;

  // Value of the first parameter named `key`, or "" if absent.
  std::string Param(std::string_view key) const;
  std::string ToString() const;
};

// kInvalidArgument names what is wrong (prefix, hash, query).
Result<BlobUri> ParseBlobUri(std::string_view text);
// "tenzro://blob/<hex>"
std::string FormatBlobUri(const Blake3Hash& hash);
// Accepts a URI or a bare 64-hex hash (CLI arguments).
Result<Blake3Hash> ParseHashOrUri(std::string_view text);

}  // namespace tenzro::blob
