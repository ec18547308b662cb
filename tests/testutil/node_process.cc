#include "testutil/node_process.h"

#include <signal.h>

#include <gtest/gtest.h>

#include "core/file.h"

namespace tenzro::testing {

using nlohmann::json;

net::HttpClient RunningNode::Admin(bool with_token) const {
  net::ClientOptions o;
  o.timeout = std::chrono::seconds(20);
  net::HttpClient c(admin, o);
  if (with_token) c.SetBearerToken(token);
  return c;
}

RunResult RunningNode::Cli(std::vector<std::string> args, std::chrono::milliseconds timeout) const {
  args.insert(args.begin(), {"--data-dir", dir});
  return RunTenzro(args, timeout);
}

json RunningNode::CliJson(std::vector<std::string> args) const {
  RunResult r = Cli(std::move(args));
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  json j = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j.is_discarded() ? json() : j;
}

int RunningNode::Stop(std::chrono::milliseconds timeout) {
  if (!proc) return -1;
  proc->Signal(SIGTERM);
  return proc->Wait(timeout);
}

RunningNode StartNode(const std::string& dir, const NodeOptions& options) {
  RunningNode n;
  n.dir = dir;
  std::vector<std::string> argv{TenzroBin(), "--data-dir", dir};
  argv.insert(argv.end(), options.global_args.begin(), options.global_args.end());
  argv.insert(argv.end(), {"node", "run", "--threads", std::to_string(options.threads)});
  argv.insert(argv.end(), options.run_args.begin(), options.run_args.end());
  n.proc = std::make_unique<ChildProcess>(argv, options.log_path.empty() ? dir + ".log" : options.log_path);
  const std::string node_json = dir + "/node.json";
  // A killed node leaves a stale node.json: wait for the one naming this child.
  auto ours = [&] {
    auto text = ReadTextFile(node_json);
    if (!text) return false;
    auto j = json::parse(*text, nullptr, false);
    return j.is_object() && j.value("pid", -1) == n.proc->pid();
  };
  const bool up = WaitFor([&] { return ours() || !n.proc->running(); }, options.start_timeout);
  EXPECT_TRUE(up && n.proc->running()) << n.proc->Log();
  if (!up || !n.proc->running()) return n;
  n.node_json = json::parse(*ReadTextFile(node_json));
  n.admin = *net::ParseEndpoint(n.node_json["admin"].get<std::string>());
  n.http = *net::ParseEndpoint(n.node_json["http"].get<std::string>());
  if (auto t = ReadTextFile(dir + "/admin.token")) {
    n.token = *t;
    while (!n.token.empty() && n.token.back() == '\n') n.token.pop_back();
  }
  return n;
}

json PrepareTinyLayer(const RunningNode& n, const std::string& model, int layer, std::vector<std::string> extra) {
  RunResult add = n.Cli({"moe", "catalog-add", "--model", model, "--checkpoint", DataPath("moe/tiny-qwen35moe-Q4_K_M.gguf")});
  EXPECT_EQ(add.exit_code, 0) << add.err;
  std::vector<std::string> args = {"moe", "prepare-experts", "--model-id", model, "--layer", std::to_string(layer),
                                   "--quant", "q4_k_m"};
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), {"--wait", "--json"});
  json job = n.CliJson(args);
  EXPECT_EQ(job.value("state", ""), "done") << job.dump();
  return job.value("state", "") == "done" ? job["result"] : json();
}

std::string MetricsText(const RunningNode& n) {
  net::HttpClient c(n.http);
  auto r = c.Send("GET", "/metrics");
  return r && r->status == 200 ? r->body : std::string();
}

double MetricSample(const std::string& text, const std::string& series) {
  size_t at = 0;
  while ((at = text.find(series, at)) != std::string::npos) {
    const bool line_start = at == 0 || text[at - 1] == '\n';
    const size_t end = at + series.size();
    if (line_start && end < text.size() && text[end] == ' ') return std::strtod(text.c_str() + end + 1, nullptr);
    at = end;
  }
  return -1;
}

}  // namespace tenzro::testing
