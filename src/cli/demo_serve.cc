#include "cli/demo_serve.h"

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/demo_generate.h"
#include "net/client.h"

namespace tenzro::cli {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
constexpr const char* kOpenAiVersion = "5.12.0";

double MsSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// node_modules/openai in ~/.cache/tenzro/openai-<version>, installed there
// once with npm; "" (and `why`) when npm or the registry is not available.
std::string OpenAiModule(std::string& why) {
  const char* home = std::getenv("HOME");
  std::string dir = fmt::format("{}/.cache/tenzro/openai-{}", home && *home ? home : "/tmp", kOpenAiVersion);
  std::string module = dir + "/node_modules/openai";
  std::error_code ec;
  if (std::filesystem::exists(module + "/package.json", ec)) return module;
  if (std::system("command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1") != 0) {
    why = "node and npm are not installed (scripts/setup installs them)";
    return "";
  }
  std::filesystem::create_directories(dir, ec);
  std::string cmd = fmt::format("npm install --prefix '{}' --no-audit --no-fund --no-save --loglevel=error openai@{} "
                                ">/dev/null 2>&1",
                                dir, kOpenAiVersion);
  if (std::system(cmd.c_str()) != 0 || !std::filesystem::exists(module + "/package.json", ec)) {
    why = fmt::format("npm install openai@{} failed (is the npm registry reachable?)", kOpenAiVersion);
    return "";
  }
  return module;
}

// Streams a chat completion with our own HTTP client, calling `on_chunk`
// with the number of content chunks seen so far; returns the text.
Result<std::string> StreamChat(const net::Endpoint& api, const std::string& model, int max_tokens,
                               const std::function<void(int)>& on_chunk) {
  net::ClientOptions co;
  co.timeout = std::chrono::milliseconds(120000);
  net::HttpClient c(api, co);
  json body = {{"model", model},
               {"messages", json::array({{{"role", "user"}, {"content", "Hi"}}})},
               {"max_tokens", max_tokens},
               {"temperature", 0},
               {"ignore_eos", true},
               {"stream", true}};
  std::string buf, text, error;
  int chunks = 0;
  auto sink = [&](ByteSpan piece) -> Result<void> {
    buf.append(reinterpret_cast<const char*>(piece.data()), piece.size());
    size_t end;
    while ((end = buf.find("\n\n")) != std::string::npos) {
      std::string frame = buf.substr(0, end);
      buf.erase(0, end + 2);
      if (frame.rfind("data: ", 0) != 0 || frame == "data: [DONE]") continue;
      json j = json::parse(frame.substr(6), nullptr, false);
      if (j.is_object() && j.contains("error")) error = j["error"].dump();
      if (!j.is_object() || !j.contains("choices") || j["choices"].empty()) continue;
      const json& d = j["choices"][0]["delta"];
      if (d.contains("content") && d["content"].is_string()) {
        text += d["content"].get<std::string>();
        on_chunk(++chunks);
      }
    }
    return Ok();
  };
  TENZRO_TRY(net::ClientResponse r,
             c.SendStreaming("POST", "/v1/chat/completions", body.dump(), "application/json", {}, sink));
  if (r.status != 200) return Error::Unavailable("stream answered {}: {}", r.status, r.body);
  if (!error.empty()) fmt::print("  the stream ended with an error after {} tokens: {}\n", chunks, error);
  return text;
}

}  // namespace

Result<bool> RunDemoServing(const DemoServeSetup& s) {
  bool ok = true;
  // 1. Publish the chat model's experts, load them on every live holder.
  auto t = Clock::now();
  int loads = 0;
  for (int layer = 0; layer < s.layers; ++layer) {
    TENZRO_TRY(json job, s.preparer->Post("/v1/moe/prepare", {{"model_id", s.model_id}, {"checkpoint", s.checkpoint},
                                                              {"layer", layer}, {"experts", "all"}, {"quant", "bf16"}}));
    TENZRO_TRY(json done, s.preparer->WaitJob(job.value("job_id", ""), std::chrono::seconds(300)));
    for (const json& e : done["result"]["experts"])
      for (NodeClient* h : s.holders) {
        TENZRO_TRY(json r, h->Post("/v1/moe/load-expert", {{"model", s.model_id}, {"layer", layer},
                                                           {"expert", e["expert"]}, {"file", e["uri"]}}));
        ++loads;
      }
  }
  fmt::print("  {} experts of {} published at bf16 (the stored bytes) and loaded {} times on {} holders ({:.0f} ms)\n",
             loads / std::max<size_t>(1, s.holders.size()), s.model_id, loads, s.holders.size(), MsSince(t));
  net::ClientOptions co;
  co.timeout = std::chrono::milliseconds(10000);
  net::HttpClient api(s.api, co);
  t = Clock::now();
  std::string health;
  while (MsSince(t) < 30000) {
    auto h = api.Send("GET", "/health");
    if (h) health = h->body;
    if (h && h->status == 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (health.find("\"ok\"") == std::string::npos)
    return Error::Unavailable("node 0 did not become healthy: {}", health);
  fmt::print("  GET /health: 200 after {:.0f} ms (every routed expert has a live holder)\n", MsSince(t));

  // 2. The official OpenAI client, streaming, checked against all-local.
  const int n1 = 24;
  TENZRO_TRY(std::string local, LocalChatText(s.checkpoint, n1));
  std::string why;
  std::string module = OpenAiModule(why);
  if (module.empty()) {
    fmt::print("  OpenAI client step skipped: {}\n", why);
  } else {
    std::string cmd = fmt::format("OPENAI_MODULE='{}' BASE_URL='{}/v1' MODEL='{}' MAX_TOKENS={} node '{}'",
                                  module, s.api.Url(), s.model_id, n1, s.scripts_dir + "/demo-openai-chat.cjs");
    fmt::print("  openai@{} (npm), stream: true, {} tokens: ", kOpenAiVersion, n1);
    std::fflush(stdout);
    t = Clock::now();
    FILE* p = ::popen(cmd.c_str(), "r");
    if (!p) return Error::Io("cannot run node");
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int rc = ::pclose(p);
    json j = json::parse(out, nullptr, false);
    const bool same = rc == 0 && j.is_object() && j.value("text", "") == local;
    ok &= same;
    fmt::print("\n  the OpenAI client's stream ({} chunks, {} completion tokens, {:.0f} ms) {} the all-local generation\n",
               j.is_object() ? j.value("chunks", 0) : 0,
               j.is_object() && j["usage"].is_object() ? j["usage"].value("completion_tokens", 0) : 0, MsSince(t),
               same ? "equals" : "DIFFERS from");
  }

  // 3. Kill a holder while a stream runs.
  const int n2 = 48;
  TENZRO_TRY(std::string local2, LocalChatText(s.checkpoint, n2));
  // Our HTTP client hands a body over in 64 KiB pieces, so the holder is
  // killed just before the stream starts, not in its middle: the first
  // forwards still plan calls to it (its declaration lives until its TTL)
  // and fail over to the holder left.
  const pid_t victim = s.holder_pids.back();
  ::kill(victim, SIGKILL);
  ::waitpid(victim, nullptr, 0);
  fmt::print("  SIGKILLed a holder; its declaration is still live\n");
  t = Clock::now();
  TENZRO_TRY(std::string streamed, StreamChat(s.api, s.model_id, n2, [](int) {}));
  const bool same2 = streamed == local2;
  ok &= same2;
  fmt::print("  the stream completed in {:.0f} ms ({} tokens, the rest served by the holder left); text {} the "
             "all-local generation\n",
             MsSince(t), n2, same2 ? "equals" : "DIFFERS from");
  return ok;
}

}  // namespace tenzro::cli
