#include "net/bearer.h"

#include <gtest/gtest.h>

namespace tenzro::net {
namespace {

Request WithAuth(std::string value) {
  Request r;
  r.headers.emplace_back("authorization", std::move(value));
  return r;
}

TEST(BearerTest, MatchesOnlyTheExactToken) {
  EXPECT_TRUE(BearerMatches(WithAuth("Bearer s3cret"), "s3cret"));
  EXPECT_TRUE(BearerMatches(WithAuth("Bearer s3cret  "), "s3cret"));  // trailing spaces ignored
  EXPECT_FALSE(BearerMatches(WithAuth("Bearer s3cre"), "s3cret"));
  EXPECT_FALSE(BearerMatches(WithAuth("Bearer s3cretX"), "s3cret"));
  EXPECT_FALSE(BearerMatches(WithAuth("Basic s3cret"), "s3cret"));
  EXPECT_FALSE(BearerMatches(WithAuth("bearer s3cret"), "s3cret"));
  EXPECT_FALSE(BearerMatches(Request{}, "s3cret"));
}

}  // namespace
}  // namespace tenzro::net
