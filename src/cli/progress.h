// tenzro CLI: a one-line progress bar on stderr, drawn only when stderr is a
// terminal (quiet when piped, as docs/cli.md promises).
#pragma once

#include <cstdint>
#include <string>

namespace tenzro::cli {

class ProgressBar {
 public:
  explicit ProgressBar(std::string label);
  ~ProgressBar();  // ends the line if anything was drawn
  void Update(uint64_t done, uint64_t total, const std::string& message = {});
  bool enabled() const { return enabled_; }

 private:
  std::string label_;
  bool enabled_;
  bool drawn_ = false;
};

}  // namespace tenzro::cli
