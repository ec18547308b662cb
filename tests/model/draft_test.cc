// Prompt-lookup drafts: the most recent earlier occurrence of the longest
// matching suffix, what followed it, and the bounds on the work.
#include "model/draft.h"

#include <gtest/gtest.h>

namespace tenzro::model {
namespace {

DraftOptions Opts(int k, int lo = 1, int hi = 3, int scan = 4096) {
  DraftOptions o;
  o.draft_max = k;
  o.ngram_min = lo;
  o.ngram_max = hi;
  o.scan_max = scan;
  return o;
}

TEST(DraftTest, ProposesWhatFollowedTheSuffixBefore) {
  // ... 1 2 3 [4 5 6 7] ... 1 2 3 -> 4 5 6 (k = 3)
  std::vector<int32_t> h = {9, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3};
  EXPECT_EQ(PromptLookupDraft(h, Opts(3)), (std::vector<int32_t>{4, 5, 6}));
  // The continuation stops at the end of the history.
  std::vector<int32_t> g = {1, 2, 5, 1, 2};
  EXPECT_EQ(PromptLookupDraft(g, Opts(8)), (std::vector<int32_t>{5, 1, 2}));
}

TEST(DraftTest, LongestSuffixFirstThenMostRecent) {
  // Suffix "7 3": the 2-gram occurred once (followed by 100); the 1-gram "3"
  // occurs later (followed by 200). The 2-gram wins.
  std::vector<int32_t> h = {7, 3, 100, 5, 3, 200, 7, 3};
  EXPECT_EQ(PromptLookupDraft(h, Opts(1, 1, 2)), (std::vector<int32_t>{100}));
  // With ngram_max 1, the most recent "3" (followed by 200).
  EXPECT_EQ(PromptLookupDraft(h, Opts(1, 1, 1)), (std::vector<int32_t>{200}));
  // ngram_min 3: no 3-gram repeats, no draft.
  EXPECT_TRUE(PromptLookupDraft(h, Opts(4, 3, 3)).empty());
}

TEST(DraftTest, NothingToProposeIsEmpty) {
  EXPECT_TRUE(PromptLookupDraft(std::vector<int32_t>{}, Opts(4)).empty());
  EXPECT_TRUE(PromptLookupDraft(std::vector<int32_t>{1}, Opts(4)).empty());
  EXPECT_TRUE(PromptLookupDraft(std::vector<int32_t>{1, 2, 3, 4}, Opts(4)).empty());
  EXPECT_TRUE(PromptLookupDraft(std::vector<int32_t>{1, 2, 1, 2}, Opts(0)).empty());
  // A run of one token drafts more of it.
  EXPECT_EQ(PromptLookupDraft(std::vector<int32_t>{5, 5, 5, 5}, Opts(2)), (std::vector<int32_t>{5}));
}

// scan_max bounds how far back a match is looked for.
TEST(DraftTest, ScanWindowIsBounded) {
  std::vector<int32_t> h = {42, 43};
  for (int i = 0; i < 1000; ++i) h.push_back(1000 + i);
  h.push_back(42);
  EXPECT_EQ(PromptLookupDraft(h, Opts(1, 1, 1, 2000)), (std::vector<int32_t>{43}));
  EXPECT_TRUE(PromptLookupDraft(h, Opts(1, 1, 1, 500)).empty());
}

TEST(DraftTest, BadOptionsAreRefused) {
  EXPECT_TRUE(Opts(4).Validate());
  EXPECT_FALSE(Opts(-1).Validate());
  EXPECT_FALSE(Opts(64).Validate());
  EXPECT_FALSE(Opts(4, 0, 3).Validate());
  EXPECT_FALSE(Opts(4, 3, 2).Validate());
  EXPECT_FALSE(Opts(4, 1, 17).Validate());
  EXPECT_FALSE(Opts(4, 1, 3, 0).Validate());
}

}  // namespace
}  // namespace tenzro::model
