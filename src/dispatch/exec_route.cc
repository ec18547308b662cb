#include "dispatch/exec_route.h"

#include "net/json_http.h"

namespace tenzro::dispatch {

void AddExecRoute(net::Router& router, ThreadPool* pool, std::shared_ptr<ExpertRunner> runner,
                  ExecServeOptions options) {
  router.AddOnPool("POST", std::string(kExecPath), pool, [runner, options](const net::Request& http) {
    std::optional<ErrorCode> status;
    const Bytes answer = ServeExec(ByteSpan(reinterpret_cast<const uint8_t*>(http.body.data()), http.body.size()),
                                   *runner, options, &status);
    net::Response r;
    r.status = status ? net::HttpStatusFor(*status) : 200;
    r.content_type = std::string(kExecContentType);
    r.body.assign(reinterpret_cast<const char*>(answer.data()), answer.size());
    return r;
  });
}

}  // namespace tenzro::dispatch
