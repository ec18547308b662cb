#include "cli/node_client.h"

#include <thread>

#include "core/file.h"
#include "net/json_http.h"

namespace tenzro::cli {

std::string NoNodeMessage(const std::string& data_dir) {
  return fmt::format("no tenzro node is running for data dir {}: start one with `tenzro node run --data-dir {}`",
                     data_dir, data_dir);
}

NodeClient::NodeClient(net::HttpClient http, std::string data_dir, bool from_node_json)
    : http_(std::move(http)), data_dir_(std::move(data_dir)), from_node_json_(from_node_json) {}

Result<nlohmann::json> NodeClient::Call(std::string_view method, std::string_view path, std::string_view body) {
  Result<net::ClientResponse> r = http_.Send(method, path, body, "application/json");
  if (!r) {
    // Refused / reset before any answer: the node is gone (node.json stale).
    if (r.error().code() == ErrorCode::kUnavailable) {
      if (from_node_json_) return Error::Unavailable("{}", NoNodeMessage(data_dir_));
      return Error::Unavailable("no tenzro node answers at {}: {}", url(), r.error().message());
    }
    return r.error();
  }
  if (r->status == 401) {
    Error e = net::ErrorFromHttp(r->status, r->body);
    return Error::PermissionDenied("{} (pass --token or set TENZRO_TOKEN, or use the matching --data-dir)",
                                   e.message());
  }
  return net::JsonFromHttp(r->status, r->body);
}

Result<nlohmann::json> NodeClient::Get(std::string_view path) { return Call("GET", path, {}); }

Result<nlohmann::json> NodeClient::Post(std::string_view path, const nlohmann::json& body) {
  return Call("POST", path, body.dump());
}

Result<nlohmann::json> NodeClient::WaitJob(const std::string& id, std::chrono::milliseconds timeout,
                                           const std::function<void(const nlohmann::json&)>& on_progress) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    TENZRO_TRY(nlohmann::json job, Get("/v1/jobs/" + id));
    if (on_progress) on_progress(job);
    std::string state = job.value("state", "");
    if (state == "done") return job;
    if (state == "failed") {
      Error e = net::ErrorFromHttp(500, nlohmann::json{{"error", job.value("error", nlohmann::json::object())}}.dump());
      return e.WithContext(fmt::format("job {} ({})", id, job.value("kind", "")));
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return Error::DeadlineExceeded("job {} still {} after {} ms", id, state, timeout.count());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

Result<NodeClient> ConnectToNode(const Globals& g) {
  std::string data_dir = DataDir(g);
  std::string url = g.node_url;
  bool from_node_json = url.empty();
  if (from_node_json) {
    std::string path = data_dir + "/node.json";
    auto text = ReadTextFile(path, 1 << 20);
    if (!text) {
      if (text.error().code() == ErrorCode::kNotFound) return Error::Unavailable("{}", NoNodeMessage(data_dir));
      return text.error();
    }
    nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("admin") || !j["admin"].is_string())
      return Error::Corruption("{}: not a node description (missing \"admin\"); remove it if no node is running",
                               path);
    url = j["admin"];
  }
  TENZRO_TRY(net::Endpoint ep, net::ParseEndpoint(url));
  std::string token = g.token;
  if (token.empty()) {
    auto t = ReadTextFile(data_dir + "/admin.token", 4096);
    if (t) {
      token = *t;
      while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) token.pop_back();
    }
  }
  net::ClientOptions opts;
  opts.connect_timeout = std::chrono::seconds(5);
  opts.timeout = std::chrono::seconds(120);
  net::HttpClient http(ep, opts);
  http.SetBearerToken(token);
  return NodeClient(std::move(http), data_dir, from_node_json);
}

}  // namespace tenzro::cli
