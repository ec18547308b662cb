// The admin API's forward options ("wire_dtype" and friends) as
// /v1/moe/forward-distributed and /v1/model/generate parse them: bf16 by
// default, every wire dtype by name, anything else a clear invalid_argument.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "node/dispatch_service.h"

namespace tenzro::node {
namespace {

using nlohmann::json;

TEST(ForwardOptionsTest, WireDtypeDefaultsToBf16AndTakesEveryName) {
  auto d = ParseForwardOptions(json::object());
  ASSERT_TRUE(d) << d.error().ToString();
  EXPECT_EQ(d->dtype, dispatch::RowType::kBf16);
  for (const char* name : {"f32", "bf16", "f16", "q8_0"}) {
    auto o = ParseForwardOptions(json{{"wire_dtype", name}});
    ASSERT_TRUE(o) << name << ": " << o.error().ToString();
    EXPECT_EQ(dispatch::RowTypeName(o->dtype), name);
  }
  for (const json& bad : {json("fp8"), json("Q8_0"), json(3)}) {
    auto o = ParseForwardOptions(json{{"wire_dtype", bad}});
    ASSERT_FALSE(o) << bad.dump();
    EXPECT_EQ(o.error().code(), ErrorCode::kInvalidArgument);
  }
}

TEST(ForwardOptionsTest, HedgeIsOnByDefaultAndABooleanTurnsItOff) {
  auto d = ParseForwardOptions(json::object());
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->hedge);
  auto off = ParseForwardOptions(json{{"hedge", false}});
  ASSERT_TRUE(off) << off.error().ToString();
  EXPECT_FALSE(off->hedge);
  for (const json& bad : {json("no"), json(0)}) {
    auto o = ParseForwardOptions(json{{"hedge", bad}});
    ASSERT_FALSE(o) << bad.dump();
    EXPECT_EQ(o.error().code(), ErrorCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace tenzro::node
