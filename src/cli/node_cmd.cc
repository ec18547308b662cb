// `tenzro node run|info|stop|jobs|job`: run the daemon and talk to it.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <thread>

#include <spdlog/spdlog.h>

#include "cli/command.h"
#include "cli/node_client.h"
#include "core/file.h"
#include "node/compose.h"
#include "node/node.h"
#include "node/node_config.h"

namespace tenzro::cli {
namespace {

struct RunFlags {
  std::string config_file;
  std::map<std::string, std::string> values;     // key -> flag argument
  std::map<std::string, CLI::Option*> options;   // key -> flag
};

Result<void> RunNode(CLI::App& root, Globals& g, const RunFlags& f) {
  node::NodeConfig cfg;
  if (!f.config_file.empty()) TENZRO_CHECK_OK(node::LoadConfigFile(f.config_file, cfg));
  for (const auto& [key, opt] : f.options)
    if (opt->count() > 0) TENZRO_CHECK_OK(node::ApplyConfigValue(cfg, key, f.values.at(key)));
  // --data-dir / TENZRO_DATA_DIR beat the file; the file beats the default.
  if (!g.data_dir.empty() || std::getenv("TENZRO_DATA_DIR") || cfg.data_dir.empty()) cfg.data_dir = DataDir(g);
  if (root.get_option("--log-level")->count() > 0) TENZRO_CHECK_OK(node::ApplyConfigValue(cfg, "log_level", g.log_level));
  spdlog::set_level(spdlog::level::from_str(cfg.log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%t] %v");
  TENZRO_TRY(auto n, node::CreateNode(cfg));
  std::printf("tenzro node running: http %s admin %s data dir %s\n", n->http_endpoint().Url().c_str(),
              n->admin_endpoint().Url().c_str(), cfg.data_dir.c_str());
  std::fflush(stdout);
  return n->Run();
}

void PrintJob(const nlohmann::json& j) {
  std::string line = fmt::format("{}  {:<8} {:<20}", j.value("id", ""), j.value("state", ""), j.value("kind", ""));
  const auto& p = j.value("progress", nlohmann::json::object());
  if (p.value("total", 0) > 0) line += fmt::format(" {}/{}", p.value("done", 0), p.value("total", 0));
  if (!p.value("message", "").empty()) line += "  " + p.value("message", "");
  if (j.contains("error") && j["error"].is_object())
    line += fmt::format("  error: {}: {}", j["error"].value("code", ""), j["error"].value("message", ""));
  std::printf("%s\n", line.c_str());
}

void RegisterNode(CLI::App& root, Globals& g) {
  CLI::App* grp = Group(root, "node");

  CLI::App* run = grp->add_subcommand("run", "Run a tenzro node in the foreground (Ctrl-C or SIGTERM stops it)");
  auto flags = std::make_shared<RunFlags>();
  run->add_option("--config", flags->config_file, "TOML config file; every flag below is also a key there");
  for (const node::NodeConfigKey& k : node::NodeConfigKeys()) {
    std::string key = k.name;
    if (key == "data_dir" || key == "log_level") continue;  // global --data-dir / --log-level
    flags->values[key];
    flags->options[key] = run->add_option("--" + node::FlagNameForKey(key), flags->values[key], k.help);
    if (k.repeatable) flags->options[key]->multi_option_policy(CLI::MultiOptionPolicy::Join);
    if (k.hidden) flags->options[key]->group("");  // test-only: accepted, not listed in --help
  }
  run->footer(
      "Example: tenzro node run --data-dir /tmp/n1 --http 127.0.0.1:7070 --threads 4\n"
      "Join a swarm: tenzro node run --data-dir /tmp/n2 --dht-port 4223 --bootstrap 127.0.0.1:4222\n"
      "Config file keys mirror the flags (http = \"127.0.0.1:7070\", threads = 4, log_level = \"debug\").\n"
      "While running, DATA_DIR/node.json names the listeners and DATA_DIR/admin.token holds the admin token.");
  SetAction(run, g, [&root, &g, flags] { return RunNode(root, g, *flags); });

  CLI::App* info = grp->add_subcommand("info", "Show the running node's version, listeners and uptime");
  auto info_json = std::make_shared<bool>(false);
  info->add_flag("--json", *info_json, "Print the raw JSON from GET /v1/node/info");
  info->footer("Example: tenzro node info --data-dir /tmp/n1 --json");
  SetAction(info, g, [&g, info_json]() -> Result<void> {
    TENZRO_TRY(NodeClient c, ConnectToNode(g));
    TENZRO_TRY(nlohmann::json j, c.Get("/v1/node/info"));
    if (*info_json) {
      std::printf("%s\n", j.dump(2).c_str());
      return Ok();
    }
    std::printf("version   %s\npid       %lld\ndata dir  %s\nuptime    %.1f s\nhttp      %s\nadmin     %s\n",
                j.value("version", "").c_str(), static_cast<long long>(j.value("pid", 0)),
                j.value("data_dir", "").c_str(), j.value("uptime_s", 0.0),
                j["listeners"].value("http", "").c_str(), j["listeners"].value("admin", "").c_str());
    return Ok();
  });

  CLI::App* stop = grp->add_subcommand("stop", "Ask the running node to shut down and wait until it has");
  stop->footer("Example: tenzro node stop --data-dir /tmp/n1");
  SetAction(stop, g, [&g]() -> Result<void> {
    TENZRO_TRY(NodeClient c, ConnectToNode(g));
    TENZRO_TRY(nlohmann::json j, c.Post("/v1/node/shutdown"));
    (void)j;
    if (g.node_url.empty()) {
      std::string node_json = DataDir(g) + "/node.json";
      for (int i = 0; i < 300 && PathExists(node_json); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (PathExists(node_json)) return Error::DeadlineExceeded("node did not stop within 30 s ({} remains)", node_json);
    }
    std::printf("node stopped\n");
    return Ok();
  });

  CLI::App* jobs = grp->add_subcommand("jobs", "List the node's background jobs");
  auto jobs_json = std::make_shared<bool>(false);
  jobs->add_flag("--json", *jobs_json, "Print the raw JSON from GET /v1/jobs");
  jobs->footer("Example: tenzro node jobs --data-dir /tmp/n1");
  SetAction(jobs, g, [&g, jobs_json]() -> Result<void> {
    TENZRO_TRY(NodeClient c, ConnectToNode(g));
    TENZRO_TRY(nlohmann::json j, c.Get("/v1/jobs"));
    if (*jobs_json) {
      std::printf("%s\n", j.dump(2).c_str());
      return Ok();
    }
    for (const auto& job : j["jobs"]) PrintJob(job);
    return Ok();
  });

  CLI::App* job = grp->add_subcommand("job", "Show one background job (--wait: until it finishes)");
  auto job_id = std::make_shared<std::string>();
  auto job_wait = std::make_shared<bool>(false);
  job->add_option("id", *job_id, "Job id (from `tenzro node jobs`)")->required();
  job->add_flag("--wait", *job_wait, "Wait until the job is done or failed; fail with the job's error");
  job->footer("Example: tenzro node job 3f9a0c1d2b4e5f60 --wait");
  SetAction(job, g, [&g, job_id, job_wait]() -> Result<void> {
    TENZRO_TRY(NodeClient c, ConnectToNode(g));
    if (*job_wait) {
      TENZRO_TRY(nlohmann::json j, c.WaitJob(*job_id, std::chrono::hours(24)));
      std::printf("%s\n", j.dump(2).c_str());
      return Ok();
    }
    TENZRO_TRY(nlohmann::json j, c.Get("/v1/jobs/" + *job_id));
    std::printf("%s\n", j.dump(2).c_str());
    return Ok();
  });
}

}  // namespace

TENZRO_CLI_REGISTER(RegisterNode);

}  // namespace tenzro::cli
