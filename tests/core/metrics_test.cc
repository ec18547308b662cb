#include "core/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

namespace tenzro::metrics {
namespace {

TEST(MetricsTest, CounterRendersHelpTypeAndValue) {
  Counter c("tenzro_x_total", "Things.\nCounted \\ here.");
  c.Inc();
  c.Inc(41);
  std::string out;
  c.Render(out);
  EXPECT_EQ(out,
            "# HELP tenzro_x_total Things.\\nCounted \\\\ here.\n"
            "# TYPE tenzro_x_total counter\n"
            "tenzro_x_total 42\n");
}

TEST(MetricsTest, LabelledCounterSortsSeriesAndEscapesValues) {
  LabelledCounter c("tenzro_bytes_total", "Bytes.", {"transport", "direction"});
  EXPECT_TRUE(c.Inc({"quic", "sent"}, 10));
  EXPECT_TRUE(c.Inc({"http", "re\"cv\\d\n"}, 3));
  EXPECT_TRUE(c.Touch({"local", "sent"}));
  EXPECT_FALSE(c.Inc({"http"}));  // wrong arity: ignored
  EXPECT_EQ(c.value({"quic", "sent"}), 10u);
  EXPECT_EQ(c.value({"nope", "sent"}), 0u);
  std::string out;
  c.Render(out);
  EXPECT_EQ(out,
            "# HELP tenzro_bytes_total Bytes.\n"
            "# TYPE tenzro_bytes_total counter\n"
            "tenzro_bytes_total{transport=\"http\",direction=\"re\\\"cv\\\\d\\n\"} 3\n"
            "tenzro_bytes_total{transport=\"local\",direction=\"sent\"} 0\n"
            "tenzro_bytes_total{transport=\"quic\",direction=\"sent\"} 10\n");
}

TEST(MetricsTest, EmptyFamilyRendersOnlyItsHeader) {
  LabelledCounter c("tenzro_none_total", "None yet.", {"a"});
  std::string out;
  c.Render(out);
  EXPECT_EQ(out, "# HELP tenzro_none_total None yet.\n# TYPE tenzro_none_total counter\n");
}

TEST(MetricsTest, HistogramBucketsAreCumulativeWithInfSumAndCount) {
  Histogram h("tenzro_stage_seconds", "Stage time.", {1, 0.1, 0.1, INFINITY}, {"stage"});
  EXPECT_EQ(h.bounds(), (std::vector<double>{0.1, 1}));
  EXPECT_TRUE(h.Observe({"gate"}, 0.05));
  EXPECT_TRUE(h.Observe({"gate"}, 0.1));  // le is inclusive
  EXPECT_TRUE(h.Observe({"gate"}, 0.5));
  EXPECT_TRUE(h.Observe({"gate"}, 7));
  EXPECT_FALSE(h.Observe({"gate"}, NAN));
  EXPECT_FALSE(h.Observe(0.2));  // unlabelled call on a labelled family
  EXPECT_EQ(h.count({"gate"}), 4u);
  std::string out;
  h.Render(out);
  EXPECT_EQ(out,
            "# HELP tenzro_stage_seconds Stage time.\n"
            "# TYPE tenzro_stage_seconds histogram\n"
            "tenzro_stage_seconds_bucket{stage=\"gate\",le=\"0.1\"} 2\n"
            "tenzro_stage_seconds_bucket{stage=\"gate\",le=\"1\"} 3\n"
            "tenzro_stage_seconds_bucket{stage=\"gate\",le=\"+Inf\"} 4\n"
            "tenzro_stage_seconds_sum{stage=\"gate\"} 7.65\n"
            "tenzro_stage_seconds_count{stage=\"gate\"} 4\n");
}

TEST(MetricsTest, UnlabelledHistogram) {
  Histogram h("h", "H.", {0.5});
  EXPECT_TRUE(h.Observe(0.25));
  std::string out;
  h.Render(out);
  EXPECT_NE(out.find("h_bucket{le=\"0.5\"} 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("h_bucket{le=\"+Inf\"} 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("h_sum 0.25\nh_count 1\n"), std::string::npos) << out;
}

TEST(MetricsTest, ConcurrentUpdatesAreAllCounted) {
  LabelledCounter c("c_total", "C.", {"t"});
  Histogram h("h_seconds", "H.", LatencyBucketsSeconds());
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c.Inc({i % 2 ? "a" : "b"});
        h.Observe(0.001 * (i % 100));
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(c.value({"a"}) + c.value({"b"}), 40000u);
  EXPECT_EQ(h.count(), 40000u);
}

}  // namespace
}  // namespace tenzro::metrics
