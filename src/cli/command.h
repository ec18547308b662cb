// tenzro CLI: how command files plug into the `tenzro` binary.
//
// Each src/cli/<group>_<topic>_cmd.cc defines a registrar that adds its
// subcommands under a group ("moe", "node", "blob", "tensor") and registers it
// with TENZRO_CLI_REGISTER. A command's action returns Result<void>; an error
// is printed as "error: <code>: <message>" on stderr and mapped to the exit
// code documented in docs/cli.md (core/error.h ExitCodeFor).
#pragma once

#include <functional>
#include <string>

#include <CLI/CLI.hpp>

#include "core/result.h"

namespace tenzro::cli {

// Options shared by every command (set on the root, accepted anywhere).
struct Globals {
  std::string data_dir;   // --data-dir / TENZRO_DATA_DIR / ~/.tenzro
  std::string node_url;   // --node / TENZRO_NODE: admin API of a running node
  std::string token;      // --token / TENZRO_TOKEN
  std::string log_level = "warn";
  int exit_code = 0;
};

// The resolved data directory (flag, then TENZRO_DATA_DIR, then ~/.tenzro).
std::string DataDir(const Globals& g);

using Registrar = void (*)(CLI::App& root, Globals& g);
bool RegisterCommands(Registrar fn);
void RunRegistrars(CLI::App& root, Globals& g);

// The group subcommand `name` of root, created on first use.
CLI::App* Group(CLI::App& root, const std::string& name, const std::string& description = "");

// Makes `body` the action of `cmd`; errors are printed and set g.exit_code.
void SetAction(CLI::App* cmd, Globals& g, std::function<Result<void>()> body);

// Prints "error: ..." to stderr and returns the exit code for it.
int ReportError(const Error& e);

}  // namespace tenzro::cli

#define TENZRO_CLI_REGISTER(fn) \
  [[maybe_unused]] static const bool tenzro_cli_registered_##fn = ::tenzro::cli::RegisterCommands(fn)
