// tenzro net: bearer-token authentication of a request.
//
// BearerMatches is true when `req` carries "Authorization: Bearer <token>"
// (trailing spaces ignored) equal to `token`; the comparison takes the same
// time whatever the bytes (sodium_memcmp), so a timing side channel does not
// reveal a prefix. Used by the admin listener and the serving API.
#pragma once

#include <string_view>

#include "net/http_types.h"

namespace tenzro::net {

bool BearerMatches(const Request& req, std::string_view token);

}  // namespace tenzro::net
