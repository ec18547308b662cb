#include "dispatch/executor.h"

#include <memory>
#include <mutex>

#include "net/json_http.h"

namespace tenzro::dispatch {

Result<ExecResponse> LocalExecutor::Exec(const HolderTarget&, const ExecRequest& req,
                                         std::chrono::milliseconds timeout) {
  TENZRO_CHECK_OK(CheckExecRequest(req, options_.limits));
  ExecServeOptions o = options_;
  if (req.deadline_ms == 0) o.default_deadline = timeout;
  return RunExec(req, runner_, o);
}

std::unique_ptr<net::HttpClient> HttpExecutor::Take(const net::Endpoint& ep, std::chrono::milliseconds timeout) {
  const std::string key = fmt::format("{}|{}", ep.Url(), timeout.count());
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = idle_.find(key);
    if (it != idle_.end() && !it->second.empty()) {
      auto c = std::move(it->second.back());
      it->second.pop_back();
      return c;
    }
  }
  net::ClientOptions o;
  o.connect_timeout = std::min(connect_timeout_, timeout);
  o.timeout = timeout;
  o.max_response_bytes = ExecLimits{}.max_frame_bytes;
  return std::make_unique<net::HttpClient>(ep, o);
}

void HttpExecutor::Give(const std::string& key, std::unique_ptr<net::HttpClient> c) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& v = idle_[key];
  if (v.size() < max_idle_) v.push_back(std::move(c));
}

Result<ExecResponse> HttpExecutor::Exec(const HolderTarget& target, const ExecRequest& req,
                                        std::chrono::milliseconds timeout) {
  CancelToken never;
  return ExecCancellable(target, req, timeout, never);
}

Result<ExecResponse> HttpExecutor::ExecCancellable(const HolderTarget& target, const ExecRequest& req,
                                                   std::chrono::milliseconds timeout, CancelToken& cancel) {
  TENZRO_TRY(net::Endpoint ep, net::ParseEndpoint(target.endpoint));
  const Bytes body = EncodeExecRequest(req);
  auto client = Take(ep, timeout);
  // The cancel callback may run on another thread at any time: it aborts the
  // client only while this call still owns it.
  struct Owner {
    std::mutex mu;
    net::HttpClient* client = nullptr;
  };
  auto owner = std::make_shared<Owner>();
  owner->client = client.get();
  cancel.OnCancel([owner] {
    std::lock_guard<std::mutex> lock(owner->mu);
    if (owner->client) owner->client->Abort();
  });
  auto r = client->Send("POST", "/v1/moe/exec",
                        std::string_view(reinterpret_cast<const char*>(body.data()), body.size()), kExecContentType);
  {
    std::lock_guard<std::mutex> lock(owner->mu);
    owner->client = nullptr;
  }
  if (cancel.cancelled())  // aborted, or about to be: not for reuse
    return Error::Unavailable("call to holder {} ({}) cancelled", target.node_id.substr(0, 12), ep.Url());
  if (!r) return r.error().WithContext(fmt::format("holder {} ({})", target.node_id.substr(0, 12), ep.Url()));
  if (r->content_type != kExecContentType) {
    return net::ErrorFromHttp(r->status, r->body)
        .WithContext(fmt::format("holder {} ({})", target.node_id.substr(0, 12), ep.Url()));
  }
  Give(fmt::format("{}|{}", ep.Url(), timeout.count()), std::move(client));
  return DecodeExecResponse(ByteSpan(reinterpret_cast<const uint8_t*>(r->body.data()), r->body.size()));
}

}  // namespace tenzro::dispatch
