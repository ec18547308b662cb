#include "cli/command.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

#include <fmt/core.h>

namespace tenzro::cli {

static std::vector<Registrar>& Registrars() {
  static std::vector<Registrar> v;
  return v;
}

bool RegisterCommands(Registrar fn) {
  Registrars().push_back(fn);
  return true;
}

void RunRegistrars(CLI::App& root, Globals& g) {
  for (Registrar fn : Registrars()) fn(root, g);
}

std::string DataDir(const Globals& g) {
  if (!g.data_dir.empty()) return g.data_dir;
  if (const char* env = std::getenv("TENZRO_DATA_DIR"); env && *env) return env;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.tenzro";
}

CLI::App* Group(CLI::App& root, const std::string& name, const std::string& description) {
  for (CLI::App* sub : root.get_subcommands([](CLI::App*) { return true; }))
    if (sub->get_name() == name) return sub;
  CLI::App* g = root.add_subcommand(name, description);
  g->require_subcommand(1);
  g->fallthrough();
  return g;
}

int ReportError(const Error& e) {
  std::fflush(stdout);
  fmt::print(stderr, "error: {}\n", e.ToString());
  return ExitCodeFor(e.code());
}

void SetAction(CLI::App* cmd, Globals& g, std::function<Result<void>()> body) {
  cmd->callback([&g, body = std::move(body)] {
    Result<void> r = body();
    if (!r) g.exit_code = ReportError(r.error());
  });
}

}  // namespace tenzro::cli
