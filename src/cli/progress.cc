#include "cli/progress.h"

#include <unistd.h>

#include <fmt/core.h>

namespace tenzro::cli {

ProgressBar::ProgressBar(std::string label) : label_(std::move(label)), enabled_(::isatty(2) == 1) {}

ProgressBar::~ProgressBar() {
  if (drawn_) fmt::print(stderr, "\n");
}

void ProgressBar::Update(uint64_t done, uint64_t total, const std::string& message) {
  if (!enabled_) return;
  constexpr int kWidth = 30;
  int filled = total ? static_cast<int>(kWidth * std::min(done, total) / total) : 0;
  std::string bar(filled, '#');
  bar.resize(kWidth, '.');
  fmt::print(stderr, "\r{} [{}] {}/{} {:<40.40}", label_, bar, done, total, message);
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace tenzro::cli
