#include "core/metrics.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace tenzro::metrics {
namespace {

void Header(std::string& out, const std::string& name, const std::string& help, const char* type) {
  std::string h;
  for (char c : help) {  // HELP escapes only \ and newline
    if (c == '\\') h += "\\\\";
    else if (c == '\n') h += "\\n";
    else h += c;
  }
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, h, name, type);
}

std::string FormatDouble(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  return fmt::format("{}", v);
}

}  // namespace

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string FormatLabels(const std::vector<std::string>& names, const std::vector<std::string>& values,
                         std::string_view extra) {
  if (names.empty() && extra.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
    if (i) out += ',';
    out += names[i] + "=\"" + EscapeLabelValue(values[i]) + "\"";
  }
  if (!extra.empty()) {
    if (!names.empty()) out += ',';
    out += extra;
  }
  out += '}';
  return out;
}

void Counter::Inc(uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  value_ += n;
}

uint64_t Counter::value() const {
  std::lock_guard<std::mutex> lock(mu_);
  return value_;
}

void Counter::Render(std::string& out) const {
  Header(out, name_, help_, "counter");
  out += fmt::format("{} {}\n", name_, value());
}

bool LabelledCounter::Inc(const std::vector<std::string>& values, uint64_t n) {
  if (values.size() != labels_.size()) return false;
  std::lock_guard<std::mutex> lock(mu_);
  values_[values] += n;
  return true;
}

uint64_t LabelledCounter::value(const std::vector<std::string>& values) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = values_.find(values);
  return it == values_.end() ? 0 : it->second;
}

void LabelledCounter::Render(std::string& out) const {
  Header(out, name_, help_, "counter");
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [vals, v] : values_) out += fmt::format("{}{} {}\n", name_, FormatLabels(labels_, vals), v);
}

Histogram::Histogram(std::string name, std::string help, std::vector<double> bounds,
                     std::vector<std::string> label_names)
    : name_(std::move(name)), help_(std::move(help)), labels_(std::move(label_names)) {
  for (double b : bounds)
    if (std::isfinite(b)) bounds_.push_back(b);
  std::sort(bounds_.begin(), bounds_.end());
  bounds_.erase(std::unique(bounds_.begin(), bounds_.end()), bounds_.end());
}

bool Histogram::Observe(const std::vector<std::string>& values, double v) {
  if (values.size() != labels_.size() || std::isnan(v)) return false;
  size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();  // first bound >= v
  std::lock_guard<std::mutex> lock(mu_);
  Series& s = series_[values];
  if (s.buckets.empty()) s.buckets.assign(bounds_.size() + 1, 0);
  ++s.buckets[i];
  ++s.count;
  s.sum += v;
  return true;
}

uint64_t Histogram::count(const std::vector<std::string>& values) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = series_.find(values);
  return it == series_.end() ? 0 : it->second.count;
}

void Histogram::Render(std::string& out) const {
  Header(out, name_, help_, "histogram");
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [vals, s] : series_) {
    uint64_t cum = 0;
    for (size_t i = 0; i <= bounds_.size(); ++i) {
      cum += s.buckets[i];
      const double le = i < bounds_.size() ? bounds_[i] : INFINITY;
      out += fmt::format("{}_bucket{} {}\n", name_, FormatLabels(labels_, vals, "le=\"" + FormatDouble(le) + "\""),
                         cum);
    }
    out += fmt::format("{}_sum{} {}\n", name_, FormatLabels(labels_, vals), FormatDouble(s.sum));
    out += fmt::format("{}_count{} {}\n", name_, FormatLabels(labels_, vals), s.count);
  }
}

std::vector<double> LatencyBucketsSeconds() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
}

}  // namespace tenzro::metrics
