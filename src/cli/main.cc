// The `tenzro` binary: command groups moe, node, blob, tensor (docs/cli.md).
#include <cstdio>

#include <spdlog/spdlog.h>

#include "cli/command.h"

int main(int argc, char** argv) {
  tenzro::cli::Globals g;
  CLI::App app{"tenzro: serve a Mixture-of-Experts model from a swarm of expert holders"};
  app.set_version_flag("--version", "tenzro 0.1.0");
  app.require_subcommand(1);
  app.fallthrough();
  app.add_option("--data-dir", g.data_dir, "Data directory (default $TENZRO_DATA_DIR or ~/.tenzro)");
  app.add_option("--node", g.node_url, "Admin URL of a running node (default: from DATA_DIR/node.json)")
      ->envname("TENZRO_NODE");
  app.add_option("--token", g.token, "Admin bearer token (default: from DATA_DIR/admin.token)")
      ->envname("TENZRO_TOKEN");
  app.add_option("--log-level", g.log_level, "trace|debug|info|warn|error (default warn)");
  tenzro::cli::Group(app, "moe", "Mixture-of-Experts: catalog, preparation, runtime, swarm, dispatch");
  tenzro::cli::Group(app, "node", "Run and inspect a tenzro node");
  tenzro::cli::Group(app, "blob", "Content-addressed BLAKE3 blobs");
  tenzro::cli::Group(app, "tensor", "Block quantization codecs (ggml-exact)");
  tenzro::cli::RunRegistrars(app, g);
  app.parse_complete_callback([&] { spdlog::set_level(spdlog::level::from_str(g.log_level)); });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return g.exit_code;
}
