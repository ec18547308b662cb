// tenzro core: a tiny Prometheus metrics helper (text exposition format
// 0.0.4, https://prometheus.io/docs/instrumenting/exposition_formats/).
//
// Three families: Counter (one value), LabelledCounter (one value per
// combination of label values) and Histogram (fixed bucket upper bounds,
// optionally labelled). Each renders itself as a complete family: "# HELP",
// "# TYPE", then its samples, label sets in sorted order.
//
//   metrics::LabelledCounter fwd("tenzro_forwards_total", "Forwards.", {"outcome"});
//   fwd.Inc({"ok"});
//   metrics::Histogram lat("tenzro_stage_seconds", "Stage time.", {0.001, 0.01, 0.1, 1}, {"stage"});
//   lat.Observe({"gate"}, 0.0042);
//   std::string out;
//   fwd.Render(out);
//   lat.Render(out);
//
// Names and label names are the caller's constants (REQUIRES: valid
// Prometheus identifiers); label values are escaped when rendered. A call
// whose number of label values differs from the family's label names is
// ignored and returns false (never crashes).
// Thread-safety: every method may be called from any thread at any time.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace tenzro::metrics {

// `v` with \ " and newline escaped, for a label value.
std::string EscapeLabelValue(std::string_view v);
// `{a="x",b="y"}` ("" when there are no labels); `extra` (already formatted,
// e.g. `le="0.5"`) is appended inside the braces.
std::string FormatLabels(const std::vector<std::string>& names, const std::vector<std::string>& values,
                         std::string_view extra = {});

class Counter {
 public:
  Counter(std::string name, std::string help) : name_(std::move(name)), help_(std::move(help)) {}
  void Inc(uint64_t n = 1);
  uint64_t value() const;
  void Render(std::string& out) const;

 private:
  std::string name_, help_;
  mutable std::mutex mu_;
  uint64_t value_ = 0;
};

class LabelledCounter {
 public:
  LabelledCounter(std::string name, std::string help, std::vector<std::string> label_names)
      : name_(std::move(name)), help_(std::move(help)), labels_(std::move(label_names)) {}
  bool Inc(const std::vector<std::string>& values, uint64_t n = 1);
  // Makes the series exist (rendered as 0) without counting.
  bool Touch(const std::vector<std::string>& values) { return Inc(values, 0); }
  // 0 when the series does not exist.
  uint64_t value(const std::vector<std::string>& values) const;
  void Render(std::string& out) const;

 private:
  std::string name_, help_;
  std::vector<std::string> labels_;
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, uint64_t> values_;
};

class Histogram {
 public:
  // `bounds`: bucket upper bounds (sorted and deduplicated here; NaN and
  // infinities dropped); "+Inf" is always added.
  Histogram(std::string name, std::string help, std::vector<double> bounds,
            std::vector<std::string> label_names = {});
  bool Observe(double v) { return Observe({}, v); }
  // A NaN observation is ignored (returns false).
  bool Observe(const std::vector<std::string>& values, double v);
  // Observations of a series (0 when it does not exist).
  uint64_t count(const std::vector<std::string>& values = {}) const;
  const std::vector<double>& bounds() const { return bounds_; }
  void Render(std::string& out) const;

 private:
  struct Series {
    std::vector<uint64_t> buckets;  // per bound, not cumulative; last = +Inf
    uint64_t count = 0;
    double sum = 0;
  };
  std::string name_, help_;
  std::vector<double> bounds_;
  std::vector<std::string> labels_;
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, Series> series_;
};

// Latency buckets in seconds, 0.5 ms .. 30 s.
std::vector<double> LatencyBucketsSeconds();

}  // namespace tenzro::metrics
