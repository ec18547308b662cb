#include "testutil/testutil.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <sodium.h>

extern char** environ;

namespace tenzro::testing {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/tenzro-test-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

static std::vector<char*> BuildEnv(const std::vector<std::string>& extra, std::vector<std::string>* storage) {
  for (char** e = environ; *e; ++e) storage->push_back(*e);
  for (const auto& x : extra) storage->push_back(x);
  std::vector<char*> env;
  for (auto& s : *storage) env.push_back(s.data());
  env.push_back(nullptr);
  return env;
}

static pid_t Spawn(const std::vector<std::string>& argv, int out_fd, int err_fd,
                   const std::vector<std::string>& extra_env) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
  posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
  std::vector<std::string> args_storage(argv);
  std::vector<char*> args;
  for (auto& a : args_storage) args.push_back(a.data());
  args.push_back(nullptr);
  std::vector<std::string> env_storage;
  auto env = BuildEnv(extra_env, &env_storage);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  return pid;
}

static std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

RunResult Run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
              const std::vector<std::string>& extra_env) {
  TempDir tmp;
  std::string out_path = tmp.Join("out"), err_path = tmp.Join("err");
  int out_fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  RunResult r;
  pid_t pid = Spawn(argv, out_fd, err_fd, extra_env);
  ::close(out_fd);
  ::close(err_fd);
  if (pid < 0) {
    r.err = "spawn failed: " + argv[0];
    return r;
  }
  auto end = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  for (;;) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (std::chrono::steady_clock::now() > end) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      r.err = "timed out\n";
      break;
    }
    ::usleep(5000);
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = Slurp(out_path);
  r.err += Slurp(err_path);
  return r;
}

RunResult RunTenzro(const std::vector<std::string>& args, std::chrono::milliseconds timeout,
                    const std::vector<std::string>& extra_env) {
  std::vector<std::string> argv{TenzroBin()};
  argv.insert(argv.end(), args.begin(), args.end());
  return Run(argv, timeout, extra_env);
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::string& log_path,
                           const std::vector<std::string>& extra_env)
    : log_path_(log_path) {
  int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_ = Spawn(argv, fd, fd, extra_env);
  ::close(fd);
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !reaped_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status_, 0);
  }
}

bool ChildProcess::running() {
  if (pid_ <= 0 || reaped_) return false;
  pid_t w = ::waitpid(pid_, &status_, WNOHANG);
  if (w == pid_) reaped_ = true;
  return !reaped_;
}

void ChildProcess::Signal(int sig) {
  if (pid_ > 0 && !reaped_) ::kill(pid_, sig);
}

int ChildProcess::Wait(std::chrono::milliseconds timeout) {
  WaitFor([&] { return !running(); }, timeout);
  if (!reaped_) return -1;
  return WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
}

std::string ChildProcess::Log() const { return Slurp(log_path_); }

std::string Sha256Hex(ByteSpan data) {
  unsigned char h[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(h, data.data(), data.size());
  return ToHex(ByteSpan(h, sizeof h));
}

Bytes ReadAll(const std::string& path) {
  std::string s = Slurp(path);
  return Bytes(s.begin(), s.end());
}

std::vector<float> ReadF32(const std::string& path) {
  Bytes b = ReadAll(path);
  std::vector<float> f(b.size() / 4);
  std::memcpy(f.data(), b.data(), f.size() * 4);
  return f;
}

void WriteAll(const std::string& path, ByteSpan data) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

double RelL2(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size() && i < ref.size(); ++i) {
    num += (double(a[i]) - ref[i]) * (double(a[i]) - ref[i]);
    den += double(ref[i]) * ref[i];
  }
  return den > 0 ? std::sqrt(num / den) : 0;
}

uint64_t ProcStatusBytes(pid_t pid, const std::string& field) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.size() > field.size() && line.compare(0, field.size(), field) == 0 && line[field.size()] == ':')
      return std::strtoull(line.c_str() + field.size() + 1, nullptr, 10) * 1024;
  return 0;
}

}  // namespace tenzro::testing
