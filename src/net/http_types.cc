#include "net/http_types.h"

#include <atomic>
#include <strings.h>

#include "net/url.h"

namespace tenzro::net {

std::optional<std::string_view> Request::Header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (k.size() == name.size() && strncasecmp(k.data(), name.data(), k.size()) == 0) return v;
  return std::nullopt;
}

std::optional<std::string> Request::QueryParam(std::string_view key) const {
  std::string_view q = query;
  while (!q.empty()) {
    size_t amp = q.find('&');
    std::string_view part = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
    size_t eq = part.find('=');
    std::string_view k = part.substr(0, eq);
    std::string_view v = eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1);
    auto dk = PercentDecode(k);
    if (!dk || *dk != key) continue;
    auto dv = PercentDecode(v);
    if (!dv) return std::nullopt;
    return *std::move(dv);
  }
  return std::nullopt;
}

Response Response::Text(int status, std::string body) {
  Response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

Response Response::Stream(std::string content_type, BodyProducer producer,
                          std::optional<uint64_t> content_length) {
  Response r;
  r.content_type = std::move(content_type);
  r.producer = std::move(producer);
  r.content_length = content_length;
  return r;
}

struct Responder::State {
  Deliver deliver;
  std::atomic<bool> sent{false};
  ~State() {
    if (!sent.exchange(true) && deliver)
    {
      Response r = Response::Text(
          500, R"({"error":{"code":"internal","message":"handler dropped the request without a response"}})");
      r.content_type = "application/json";
      deliver(std::move(r));
    }
  }
};

Responder::Responder(Deliver deliver) : state_(std::make_shared<State>()) {
  state_->deliver = std::move(deliver);
}

void Responder::Send(Response r) const {
  if (state_->sent.exchange(true)) return;
  state_->deliver(std::move(r));
}

bool Responder::sent() const { return state_->sent.load(); }

}  // namespace tenzro::net
