#include "net/bearer.h"

#include <sodium.h>

namespace tenzro::net {

bool BearerMatches(const Request& req, std::string_view token) {
  auto h = req.Header("authorization");
  if (!h || !h->starts_with("Bearer ")) return false;
  std::string_view given = h->substr(7);
  while (!given.empty() && given.back() == ' ') given.remove_suffix(1);
  if (given.size() != token.size()) return false;
  return sodium_memcmp(given.data(), token.data(), token.size()) == 0;
}

}  // namespace tenzro::net
