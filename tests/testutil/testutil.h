// Shared helpers for tenzro tests: golden data paths, temp dirs, running the
// `tenzro` binary as a real child process, sha256 of byte ranges.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/bytes.h"

namespace tenzro::testing {

// Absolute path of tests/data/<name>.
std::string DataPath(const std::string& name);
// Path of the built `tenzro` binary.
std::string TenzroBin();
// Absolute paths of the checkout's root and of the build directory.
std::string ProjectSourceDir();
std::string ProjectBuildDir();

// A fresh directory under $TMPDIR, removed recursively on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string Join(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

struct RunResult {
  int exit_code = -1;  // -1 if killed by a signal or timed out
  std::string out;
  std::string err;
};

// Runs argv[0] with args, waits at most `timeout`, captures stdout/stderr.
RunResult Run(const std::vector<std::string>& argv,
              std::chrono::milliseconds timeout = std::chrono::seconds(120),
              const std::vector<std::string>& extra_env = {});
// Runs the tenzro binary with `args`.
RunResult RunTenzro(const std::vector<std::string>& args,
                    std::chrono::milliseconds timeout = std::chrono::seconds(120),
                    const std::vector<std::string>& extra_env = {});

// A long-running child process (e.g. a node); killed (SIGKILL) on destruction.
class ChildProcess {
 public:
  // Starts argv; stdout+stderr go to `log_path`.
  ChildProcess(const std::vector<std::string>& argv, const std::string& log_path,
               const std::vector<std::string>& extra_env = {});
  ~ChildProcess();
  pid_t pid() const { return pid_; }
  bool running();
  void Signal(int sig);
  // Waits for exit up to `timeout`; returns exit code, or -1 (signal/timeout).
  int Wait(std::chrono::milliseconds timeout);
  std::string Log() const;

 private:
  pid_t pid_ = -1;
  std::string log_path_;
  bool reaped_ = false;
  int status_ = 0;
};

std::string Sha256Hex(ByteSpan data);
Bytes ReadAll(const std::string& path);
std::vector<float> ReadF32(const std::string& path);
// Relative L2 error ||a - ref|| / ||ref|| (0 when ref is all zeros).
double RelL2(const std::vector<float>& a, const std::vector<float>& ref);
void WriteAll(const std::string& path, ByteSpan data);
// A field of /proc/PID/status in bytes ("VmRSS", "VmHWM"); 0 when unreadable.
uint64_t ProcStatusBytes(pid_t pid, const std::string& field);

// Polls `pred` every 20 ms until true or `timeout` elapses; returns pred().
template <typename Pred>
bool WaitFor(Pred pred, std::chrono::milliseconds timeout) {
  auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    struct timespec ts{0, 20 * 1000 * 1000};
    nanosleep(&ts, nullptr);
  }
  return pred();
}

}  // namespace tenzro::testing
