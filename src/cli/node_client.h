// tenzro CLI: how client commands find and call a running node.
//
// ConnectToNode uses --node/--token (TENZRO_NODE/TENZRO_TOKEN) when given,
// else DATA_DIR/node.json (the admin URL) and DATA_DIR/admin.token. When no
// node runs there (no node.json, or the connection is refused) the error is
// kUnavailable and says how to start one:
//   no tenzro node is running for data dir X: start one with `tenzro node run --data-dir X`
// The node's JSON errors come back as Error values with the same code
// (net/json_http.h), so `tenzro` exits with the same code the node reported.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/result.h"
#include "net/client.h"

namespace tenzro::cli {

class NodeClient {
 public:
  NodeClient(net::HttpClient http, std::string data_dir, bool from_node_json);

  // GET/POST an admin route; the parsed JSON body of a 2xx answer, else the
  // node's error.
  Result<nlohmann::json> Get(std::string_view path);
  Result<nlohmann::json> Post(std::string_view path, const nlohmann::json& body = nlohmann::json::object());

  // Polls GET /v1/jobs/<id> every 100 ms until the job is done (returns the
  // job object) or failed (returns the job's error), or `timeout` elapses
  // (kDeadlineExceeded). `on_progress` sees each polled job object.
  Result<nlohmann::json> WaitJob(const std::string& id, std::chrono::milliseconds timeout,
                                 const std::function<void(const nlohmann::json&)>& on_progress = {});

  // The admin URL ("http://127.0.0.1:PORT").
  std::string url() const { return http_.server().Url(); }
  // For streaming calls (HttpClient::SendStreaming); the token is already set.
  net::HttpClient& http() { return http_; }

 private:
  Result<nlohmann::json> Call(std::string_view method, std::string_view path, std::string_view body);
  net::HttpClient http_;
  std::string data_dir_;
  bool from_node_json_;
};

// The message for "no node here", shared by every command.
std::string NoNodeMessage(const std::string& data_dir);

Result<NodeClient> ConnectToNode(const Globals& g);

}  // namespace tenzro::cli
