#include "node/moe_services.h"

#include <mutex>

#include <spdlog/spdlog.h>

#include "catalog/catalog.h"
#include "net/json_http.h"
#include "node/manifest_service.h"
#include "node/node_metrics.h"
#include "transfer/http_blobs.h"
#include "node/node.h"
#include "swarm/agent.h"
#include "prepare/prepare_job.h"
#include "prepare/spine.h"

namespace tenzro::node {
namespace {

using nlohmann::json;

// `published` sees the result of a successful job and may add to it (the
// swarm announces the new blobs at once rather than at its next refresh; the
// model's manifest is re-published and named in the result).
JobFn PrepareJob(std::shared_ptr<blob::BlobStore> store, prepare::PrepareRequest req,
                 std::function<void(json&)> published) {
  return [store, req, published](JobContext& ctx) -> Result<json> {
    TENZRO_TRY(json result, prepare::RunPrepare(req, *store, [&ctx](int done, int total, const std::string& msg) {
      ctx.SetProgress(static_cast<uint64_t>(done), static_cast<uint64_t>(total), msg);
    }));
    if (published) published(result);
    return result;
  };
}

JobFn PrepareDenseJob(std::shared_ptr<blob::BlobStore> store, prepare::SpineRequest req,
                      std::function<void(json&)> published) {
  return [store, req, published](JobContext& ctx) -> Result<json> {
    TENZRO_TRY(json result, prepare::RunPrepareDense(req, *store, [&ctx](int done, int total, const std::string& msg) {
      ctx.SetProgress(static_cast<uint64_t>(done), static_cast<uint64_t>(total), msg);
    }));
    if (published) published(result);
    return result;
  };
}

// Announces every blob of a prepare result (experts, gate, or a spine's
// top-level hash) as provided by this node.
void AnnouncePrepared(swarm::SwarmAgent& agent, const json& result) {
  std::vector<std::string> hashes;
  if (result.contains("hash") && result["hash"].is_string()) hashes.push_back(result["hash"].get<std::string>());
  if (result.contains("experts") && result["experts"].is_array())
    for (const json& e : result["experts"])
      if (e.is_object() && e.contains("hash") && e["hash"].is_string()) hashes.push_back(e["hash"].get<std::string>());
  if (result.contains("gate") && result["gate"].is_object() && result["gate"].contains("hash") &&
      result["gate"]["hash"].is_string())
    hashes.push_back(result["gate"]["hash"].get<std::string>());
  for (const auto& h : hashes) {
    if (auto r = agent.AnnounceProvider(h); !r)
      spdlog::warn("swarm: could not announce prepared blob {}: {}", h, r.error().ToString());
  }
}

// Normalizes the model id and fills the checkpoint from the catalog when the
// request did not name one.
template <typename Req>
Result<void> ResolveCheckpoint(const std::string& data_dir, Req* req) {
  TENZRO_TRY(std::string id, catalog::NormalizeModelId(req->model_id));
  req->model_id = id;
  if (!req->checkpoint.empty()) return Ok();
  TENZRO_TRY(catalog::Catalog cat, catalog::Catalog::Load(data_dir));
  const catalog::CatalogEntry* e = cat.Lookup(id);
  if (e == nullptr)
    return Error::NotFound(
        "model '{}' has no checkpoint in the catalog of {}: add one with `tenzro moe catalog-add --model {} "
        "--checkpoint PATH` (or pass --checkpoint)",
        id, data_dir, id);
  req->checkpoint = e->checkpoint;
  return Ok();
}

}  // namespace

Result<std::shared_ptr<blob::BlobStore>> OpenNodeBlobStore(const std::string& data_dir) {
  TENZRO_TRY(auto store, blob::BlobStore::Open(data_dir + "/blobs"));
  return std::shared_ptr<blob::BlobStore>(std::move(store));
}

Result<void> AddBlobService(Node& node, std::shared_ptr<blob::BlobStore> store) {
  transfer::AddBlobRoutes(node.public_router(), store,
                          [](uint64_t n) { ProcessMetrics().AddBytes("http", "blob", n, 0); });
  node.admin_router().Add("GET", "/v1/blobs", [store](const net::Request&) {
    auto list = store->List();
    if (!list) return net::ErrorResponse(list.error());
    json out = json::array();
    for (const auto& b : *list) out.push_back({{"hash", b.hash.ToHex()}, {"size", b.size}});
    return net::JsonResponse({{"blobs", out}});
  });
  return Ok();
}

Result<void> AddPrepareService(Node& node, std::shared_ptr<blob::BlobStore> store,
                               std::shared_ptr<swarm::SwarmAgent> agent) {
  std::string data_dir = node.data_dir();
  JobRegistry* jobs = &node.jobs();
  Node* n = &node;
  std::function<void(json&)> published = [agent, store, n](json& result) {
    if (agent) AnnouncePrepared(*agent, result);
    auto m = PublishManifest(*n, *store, agent.get(), result.value("model_id", ""), &result);
    if (m) result["manifest"] = {{"hash", (*m)["hash"]}, {"uri", (*m)["uri"]}};
    else spdlog::warn("prepare: could not publish the model's manifest: {}", m.error().ToString());
  };
  node.admin_router().Add("POST", "/v1/moe/prepare", [store, data_dir, jobs, published](const net::Request& http) {
    auto body = net::ParseJsonBody(http.body);
    if (!body) return net::ErrorResponse(body.error());
    auto req = prepare::PrepareRequest::FromJson(*body);
    if (!req) return net::ErrorResponse(req.error());
    if (auto ok = ResolveCheckpoint(data_dir, &*req); !ok) return net::ErrorResponse(ok.error());
    auto plan = req->Plan();
    if (!plan) return net::ErrorResponse(plan.error());
    auto id = jobs->Submit(kPrepareJobKind, req->ToJson(), PrepareJob(store, *req, published));
    if (!id) return net::ErrorResponse(id.error());
    return net::JsonResponse({{"job_id", *id},
                              {"state", "queued"},
                              {"kind", kPrepareJobKind},
                              {"model_id", req->model_id},
                              {"layer", req->layer},
                              {"experts", req->experts},
                              {"gate", req->gate},
                              {"quant", json::parse(plan->ToJson())},
                              {"checkpoint", req->checkpoint}});
  });
  node.jobs().SetResumeHook(kPrepareJobKind, [store, published](const JobInfo& info) -> Result<JobFn> {
    TENZRO_TRY(prepare::PrepareRequest req, prepare::PrepareRequest::FromJson(info.params));
    return PrepareJob(store, req, published);
  });

  node.admin_router().Add("POST", "/v1/moe/prepare-dense", [store, data_dir, jobs, published](const net::Request& http) {
    auto body = net::ParseJsonBody(http.body);
    if (!body) return net::ErrorResponse(body.error());
    auto req = prepare::SpineRequest::FromJson(*body);
    if (!req) return net::ErrorResponse(req.error());
    if (auto ok = ResolveCheckpoint(data_dir, &*req); !ok) return net::ErrorResponse(ok.error());
    auto id = jobs->Submit(kPrepareDenseJobKind, req->ToJson(), PrepareDenseJob(store, *req, published));
    if (!id) return net::ErrorResponse(id.error());
    return net::JsonResponse({{"job_id", *id},
                              {"state", "queued"},
                              {"kind", kPrepareDenseJobKind},
                              {"model_id", req->model_id},
                              {"quant", req->quant.empty() ? "none" : req->quant},
                              {"checkpoint", req->checkpoint}});
  });
  node.jobs().SetResumeHook(kPrepareDenseJobKind, [store, published](const JobInfo& info) -> Result<JobFn> {
    TENZRO_TRY(prepare::SpineRequest req, prepare::SpineRequest::FromJson(info.params));
    return PrepareDenseJob(store, req, published);
  });
  return Ok();
}

}  // namespace tenzro::node
