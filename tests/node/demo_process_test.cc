// `tenzro demo` (the main job, README: make demo) end to end: it starts its
// own 4-node swarm on loopback and exits 0 only when every check passed
// (ggml reference, bit-identical to single-node, failover). It must leave no
// temp directory behind (each test gives it its own TMPDIR).
#include <gtest/gtest.h>

#include <filesystem>

#include "testutil/testutil.h"

namespace tenzro::testing {
namespace {

// Entries left in `dir` (the demo's TMPDIR: each test has its own, so tests
// running side by side cannot see each other's work dirs).
size_t Entries(const std::string& dir) {
  size_t n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(dir, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec))
    ++n;
  return n;
}

TEST(DemoProcessTest, RunsEndToEndAndCleansUp) {
  TempDir tmp;
  RunResult r = RunTenzro({"demo", "--nodes", "4", "--data", DataPath("moe")}, std::chrono::seconds(120),
                          {"TMPDIR=" + tmp.path()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("all checks passed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bit-identical to the fault-free one"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("coverage 16/16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("greedy tokens equal the float64 reference's"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("text equals the all-local generation"), std::string::npos) << r.out;
  EXPECT_EQ(Entries(tmp.path()), 0u) << "the demo left its work dir behind";
}

// --shape: random weights at a real model's shape (a small one, to stay quick
// in CI): the checkpoint is generated, prepared, spread and forwarded.
TEST(DemoProcessTest, RandomWeightsAtABuiltInShape) {
  TempDir tmp;
  RunResult r = RunTenzro({"demo", "--nodes", "3", "--shape", "qwen3.5-35b-a3b", "--layers", "1", "--experts", "12",
                           "--tokens", "8"},
                          std::chrono::seconds(180), {"TMPDIR=" + tmp.path()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("n_embd 2048, expert FFN 512, top-8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("coverage 12/12"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("is bit-identical to the single-node forward"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("all checks passed"), std::string::npos) << r.out;
  EXPECT_EQ(Entries(tmp.path()), 0u) << "the demo left its work dir behind";
}

TEST(DemoProcessTest, RejectsBadShapeArguments) {
  RunResult r = RunTenzro({"demo", "--shape", "no-such-model"}, std::chrono::seconds(30));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE((r.out + r.err).find("no-such-model"), std::string::npos) << r.out << r.err;
  r = RunTenzro({"demo", "--shape", "qwen3.5-35b-a3b", "--experts", "300"}, std::chrono::seconds(30));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE((r.out + r.err).find("--experts 300"), std::string::npos) << r.out << r.err;
}

}  // namespace
}  // namespace tenzro::testing
