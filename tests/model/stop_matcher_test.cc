#include "model/stop_matcher.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace tenzro::model {
namespace {

StopMatcher Make(std::vector<std::string> stops) {
  auto m = StopMatcher::Create(std::move(stops));
  EXPECT_TRUE(m) << m.error().ToString();
  return std::move(*m);
}

// Feeds `pieces` and returns everything emitted (plus the flush when no
// stop happened) and whether it stopped.
std::pair<std::string, bool> FeedAll(StopMatcher& m, const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) {
    auto o = m.Feed(p);
    out += o.emit;
    if (o.stopped) return {out, true};
  }
  return {out + m.Flush(), false};
}

TEST(StopMatcher, NoStopPassesEverythingThrough) {
  StopMatcher m = Make({"</s>"});
  auto [text, stopped] = FeedAll(m, {"Hello", ", wor", "ld <", "/x>"});
  EXPECT_EQ(text, "Hello, world </x>");
  EXPECT_FALSE(stopped);
  StopMatcher none = Make({});
  EXPECT_EQ(none.Feed("abc").emit, "abc");
}

TEST(StopMatcher, HoldsBackAPartialMatchAcrossPieces) {
  StopMatcher m = Make({"STOP"});
  auto o = m.Feed("abcST");
  EXPECT_EQ(o.emit, "abc");
  EXPECT_FALSE(o.stopped);
  EXPECT_EQ(m.held_bytes(), 2u);
  o = m.Feed("O");
  EXPECT_EQ(o.emit, "");
  o = m.Feed("Px");  // "STOPx": stop, "x" dropped
  EXPECT_EQ(o.emit, "");
  EXPECT_TRUE(o.stopped);
  EXPECT_TRUE(m.Feed("more").stopped);
  EXPECT_EQ(m.Feed("more").emit, "");
  EXPECT_EQ(m.Flush(), "");
}

TEST(StopMatcher, FalseStartIsReleased) {
  StopMatcher m = Make({"STOP"});
  EXPECT_EQ(m.Feed("xST").emit, "x");
  EXPECT_EQ(m.Feed("OX").emit, "STOX");
  EXPECT_EQ(m.Feed("S").emit, "");
  EXPECT_EQ(m.Flush(), "S");
}

TEST(StopMatcher, EmitsTextBeforeTheMatchInTheSamePiece) {
  StopMatcher m = Make({"\n\n"});
  auto o = m.Feed("line one\n\nline two");
  EXPECT_EQ(o.emit, "line one");
  EXPECT_TRUE(o.stopped);
}

TEST(StopMatcher, OverlappingStopStrings) {
  // "abcd" and "bc": "bc" completes first inside "abc", and it starts later
  // than "abcd" would, but "abcd" cannot match any more once "bc" has: the
  // earliest complete match wins.
  StopMatcher m = Make({"abcd", "bc"});
  EXPECT_EQ(m.Feed("xa").emit, "x");
  auto o = m.Feed("bc");
  EXPECT_TRUE(o.stopped);
  EXPECT_EQ(o.emit, "a");
  // Two matches in one piece: the earlier position wins.
  StopMatcher m2 = Make({"world", "lo"});
  o = m2.Feed("hello world");
  EXPECT_TRUE(o.stopped);
  EXPECT_EQ(o.emit, "hel");
  // A stop string that is its own prefix's suffix ("aab" in "aaab").
  StopMatcher m3 = Make({"aab"});
  EXPECT_EQ(m3.Feed("a").emit, "");
  EXPECT_EQ(m3.Feed("a").emit, "");
  EXPECT_EQ(m3.Feed("a").emit, "a");
  o = m3.Feed("b");
  EXPECT_TRUE(o.stopped);
  EXPECT_EQ(o.emit, "");
}

TEST(StopMatcher, MultiByteUtf8StopStrings) {
  // "。" is E3 80 82; pieces split it byte by byte, as byte-level BPE tokens may.
  StopMatcher m = Make({"。", "終わり"});
  auto [text, stopped] = FeedAll(m, {"こんにちは", "\xE3", "\x80", "\x82", "after"});
  EXPECT_TRUE(stopped);
  EXPECT_EQ(text, "こんにちは");
  // A different character sharing the lead byte is released whole.
  StopMatcher m2 = Make({"。"});
  EXPECT_EQ(m2.Feed("a\xE3").emit, "a");
  EXPECT_EQ(m2.Feed("\x81").emit, "");       // E3 81: incomplete, held
  EXPECT_EQ(m2.Feed("\x82").emit, "\xE3\x81\x82");  // "あ"
  // Multi-character stop across pieces.
  StopMatcher m3 = Make({"終わり"});
  auto [t3, s3] = FeedAll(m3, {"文", "終わ", "り", "x"});
  EXPECT_TRUE(s3);
  EXPECT_EQ(t3, "文");
}

TEST(StopMatcher, IncompleteUtf8IsHeldUntilFlush) {
  StopMatcher m = Make({});
  EXPECT_EQ(m.Feed("ok\xF0\x9F").emit, "ok");
  EXPECT_EQ(m.Feed("\x98").emit, "");
  EXPECT_EQ(m.Feed("\x80!").emit, "\xF0\x9F\x98\x80!");
  EXPECT_EQ(m.Feed("\xE3").emit, "");
  EXPECT_EQ(m.Flush(), "\xE3");  // end of generation: whatever is left
}

TEST(StopMatcher, CreateErrors) {
  EXPECT_FALSE(StopMatcher::Create({"a", "b", "c", "d", "e"}));
  auto r = StopMatcher::Create({"a", ""});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("stop[1]"), std::string::npos);
}

}  // namespace
}  // namespace tenzro::model
