#include "blob/blob_uri.h"

#include <cctype>

namespace tenzro::blob {
namespace {

int HexVal(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Result<std::string> PercentDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      if (i + 2 >= s.size()) return Error::InvalidArgument("truncated %-escape in '{}'", s);
      int hi = HexVal(s[i + 1]), lo = HexVal(s[i + 2]);
      if (hi < 0 || lo < 0) return Error::InvalidArgument("bad %-escape in '{}'", s);
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (s[i] == '+') {
      out.push_back(' ');
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::string PercentEncode(std::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == ':' || c == '[' || c == ']') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace

std::string BlobUri::Param(std::string_view key) const {
  for (const auto& [k, v] : params)
    if (k == key) return v;
  return "";
}

std::string BlobUri::ToString() const {
  std::string s = FormatBlobUri(hash);
  char sep = '?';
  for (const auto& [k, v] : params) {
    s += sep;
    s += PercentEncode(k) + "=" + PercentEncode(v);
    sep = '&';
  }
  return s;
}

std::string FormatBlobUri(const Blake3Hash& hash) { return std::string(kBlobUriPrefix) + hash.ToHex(); }

Result<BlobUri> ParseBlobUri(std::string_view text) {
  if (text.substr(0, kBlobUriPrefix.size()) != kBlobUriPrefix)
    return Error::InvalidArgument("blob URI must start with {}: '{}'", kBlobUriPrefix, text);
  std::string_view rest = text.substr(kBlobUriPrefix.size());
  size_t q = rest.find('?');
  std::string_view hex = rest.substr(0, q);
  BlobUri uri;
  auto h = Blake3Hash::FromHex(hex);
  if (!h) return h.error().WithContext("blob URI");
  uri.hash = *h;
  if (q != std::string_view::npos) {
    std::string_view query = rest.substr(q + 1);
    while (!query.empty()) {
      size_t amp = query.find('&');
      std::string_view kv = query.substr(0, amp);
      query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
      if (kv.empty()) continue;
      size_t eq = kv.find('=');
      TENZRO_TRY(std::string k, PercentDecode(kv.substr(0, eq)));
      std::string v;
      if (eq != std::string_view::npos) {
        TENZRO_TRY(std::string dv, PercentDecode(kv.substr(eq + 1)));
        v = std::move(dv);
      }
      if (k.empty()) return Error::InvalidArgument("blob URI has a query parameter without a name: '{}'", text);
      uri.params.emplace_back(std::move(k), std::move(v));
    }
  }
  return uri;
}

Result<Blake3Hash> ParseHashOrUri(std::string_view text) {
  if (text.substr(0, kBlobUriPrefix.size()) == kBlobUriPrefix) {
    TENZRO_TRY(BlobUri u, ParseBlobUri(text));
    return u.hash;
  }
  return Blake3Hash::FromHex(text);
}

}  // namespace tenzro::blob
