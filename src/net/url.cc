#include "net/url.h"

#include <charconv>

namespace tenzro::net {

std::string Endpoint::HostPort() const {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

std::string Endpoint::Url() const { return "http://" + HostPort(); }

Result<Endpoint> ParseEndpoint(std::string_view text) {
  std::string_view s = text;
  auto bad = [&](std::string_view why) {
    return Error::InvalidArgument("bad address '{}': {} (want HOST:PORT or http://HOST:PORT)", text, why);
  };
  if (s.starts_with("https://")) return bad("https is not supported");
  if (s.starts_with("http://")) s.remove_prefix(7);
  if (s.ends_with("/")) s.remove_suffix(1);
  if (s.find('/') != std::string_view::npos) return bad("a path is not allowed");
  Endpoint ep;
  std::string_view port_text;
  if (s.starts_with("[")) {
    size_t close = s.find(']');
    if (close == std::string_view::npos) return bad("missing ']'");
    ep.host = std::string(s.substr(1, close - 1));
    std::string_view rest = s.substr(close + 1);
    if (!rest.starts_with(":")) return bad("missing ':PORT'");
    port_text = rest.substr(1);
  } else {
    size_t colon = s.rfind(':');
    if (colon == std::string_view::npos) return bad("missing ':PORT'");
    ep.host = std::string(s.substr(0, colon));
    if (ep.host.find(':') != std::string::npos) return bad("IPv6 addresses need brackets");
    port_text = s.substr(colon + 1);
  }
  if (ep.host.empty()) return bad("empty host");
  unsigned port = 0;
  auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || p != port_text.data() + port_text.size() || port > 65535)
    return bad("port must be a number in 0..65535");
  ep.port = static_cast<uint16_t>(port);
  return ep;
}

bool IsLoopbackHost(std::string_view host) {
  if (host == "localhost" || host == "::1") return true;
  if (!host.starts_with("127.")) return false;
  int dots = 0;
  for (char c : host) {
    if (c == '.') ++dots;
    else if (c < '0' || c > '9') return false;
  }
  return dots == 3;
}

Result<std::string> PercentDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    unsigned v = 0;
    if (i + 2 >= s.size()) return Error::InvalidArgument("bad percent escape at offset {} in '{}'", i, s);
    auto [p, ec] = std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16);
    if (ec != std::errc() || p != s.data() + i + 3)
      return Error::InvalidArgument("bad percent escape at offset {} in '{}'", i, s);
    out.push_back(static_cast<char>(v));
    i += 2;
  }
  return out;
}

}  // namespace tenzro::net
