// `tenzro demo` (the main job, README: make demo) end to end: it starts its
// own 4-node swarm on loopback and exits 0 only when every check passed
// (ggml reference, bit-identical to single-node, failover). It must leave no
// temp directory behind.
#include <gtest/gtest.h>

#include <filesystem>

#include "testutil/testutil.h"

namespace tenzro::testing {
namespace {

size_t DemoDirs() {
  size_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/tmp", ec))
    n += e.path().filename().string().rfind("tenzro-demo-", 0) == 0;
  return n;
}

TEST(DemoProcessTest, RunsEndToEndAndCleansUp) {
  const size_t before = DemoDirs();
  RunResult r = RunTenzro({"demo", "--nodes", "4", "--data", DataPath("moe")}, std::chrono::seconds(120));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("all checks passed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bit-identical to the fault-free one"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("coverage 16/16"), std::string::npos) << r.out;
  EXPECT_EQ(DemoDirs(), before);
}

}  // namespace
}  // namespace tenzro::testing
