// tenzro net: endpoints ("host:port", "http://host:port").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"

namespace tenzro::net {

struct Endpoint {
  std::string host;   // name or address; IPv6 without brackets ("::1")
  uint16_t port = 0;  // 0 = let the OS pick (listeners only)

  // "host:port" ("[::1]:port" for IPv6).
  std::string HostPort() const;
  // "http://host:port".
  std::string Url() const;
};

// Parses "host:port", "http://host:port" or "http://host:port/" (a trailing
// "/" is allowed, any other path is not). IPv6 needs brackets: "[::1]:8080".
// kInvalidArgument naming `text` when malformed (missing port, port > 65535,
// https://, empty host).
Result<Endpoint> ParseEndpoint(std::string_view text);

// True for "localhost", 127.0.0.0/8 and ::1.
bool IsLoopbackHost(std::string_view host);

// Percent-decodes `s` ('+' stays '+'); kInvalidArgument on a bad escape.
Result<std::string> PercentDecode(std::string_view s);

}  // namespace tenzro::net
