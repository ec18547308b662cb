#include "node/manifest_service.h"

#include <algorithm>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include "blob/blob_uri.h"
#include "catalog/catalog.h"
#include "identity/identity.h"
#include "manifest/manifest_build.h"
#include "net/json_http.h"
#include "node/moe_services.h"
#include "node/node.h"

namespace tenzro::node {

using nlohmann::json;

Result<std::shared_ptr<manifest::TrustStore>> MakeNodeTrust(
    Node& node, std::shared_ptr<blob::BlobStore> store,
    decltype(holder::ExpertRuntimeOptions::fetch_blob) fetch_blob) {
  manifest::TrustOptions o;
  for (const auto& h : node.config().trust_manifest) {
    TENZRO_TRY(blob::Blake3Hash hash, blob::Blake3Hash::FromHex(h));
    o.manifests.push_back(hash);
  }
  o.publishers = node.config().trust_publisher;
  o.fetch = [store, fetch_blob](const blob::Blake3Hash& hash) -> Result<Bytes> {
    if (!store->Has(hash)) {
      if (!fetch_blob) return Error::NotFound("manifest {} is not in this node's store", hash.ToHex());
      TENZRO_TRY(transfer::SourcesFetch got, fetch_blob(hash, {}));
    }
    TENZRO_TRY(blob::Blob b, store->Get(hash));
    if (b.size > manifest::kMaxManifestBytes)
      return Error::Corruption("manifest {}: {} bytes is over the {} byte limit", hash.ToHex(), b.size,
                               manifest::kMaxManifestBytes);
    ByteSpan bytes = b.bytes();
    return Bytes(bytes.begin(), bytes.end());
  };
  auto trust = std::make_shared<manifest::TrustStore>(std::move(o));
  if (trust->enabled())
    spdlog::info("manifest mode: {} trusted manifest(s), {} trusted publisher(s); models without one are refused",
                 node.config().trust_manifest.size(), node.config().trust_publisher.size());
  return trust;
}

std::function<void(swarm::Declaration&)> ManifestScreen(std::shared_ptr<manifest::TrustStore> trust) {
  if (!trust || !trust->enabled()) return nullptr;
  return [trust](swarm::Declaration& d) {
    std::erase_if(d.experts, [&](const swarm::HeldExpert& e) {
      return !trust->AllowsExpert(d.model, e.layer, e.expert, e.blob_hash);
    });
    std::erase_if(d.gates, [&](const swarm::HeldGate& g) { return !trust->AllowsGate(d.model, g.layer, g.blob_hash); });
    std::erase_if(d.offers, [&](const swarm::OfferedBlob& o) {
      return o.expert >= 0 ? !trust->AllowsExpert(d.model, o.layer, o.expert, o.blob_hash)
                           : !trust->AllowsGate(d.model, o.layer, o.blob_hash);
    });
  };
}

Result<json> PublishManifest(Node& node, blob::BlobStore& store, swarm::SwarmAgent* agent, const std::string& model,
                             const json* extra) {
  TENZRO_TRY(std::string id, catalog::NormalizeModelId(model));
  std::vector<json> results;
  for (const JobInfo& j : node.jobs().List())
    if (j.state == JobState::kDone && (j.kind == kPrepareJobKind || j.kind == kPrepareDenseJobKind) &&
        j.result.is_object())
      results.push_back(j.result);
  if (extra) results.push_back(*extra);
  std::optional<catalog::ModelShape> shape;
  if (auto rs = catalog::ResolveShape(id, std::nullopt, node.data_dir()); rs) shape = rs->shape;
  TENZRO_TRY(manifest::Manifest m, manifest::ManifestFromPrepareResults(id, results, std::move(shape)));
  if (m.experts.empty() && m.gates.empty() && m.spines.empty())
    return Error::NotFound(
        "this node has prepared nothing of model '{}' (tenzro moe prepare-experts / prepare-dense first)", id);
  TENZRO_TRY(identity::Identity key, identity::LoadOrCreateIdentity(node.data_dir()));
  const std::string bytes = manifest::SealManifest(m, key);
  TENZRO_TRY(blob::BlobInfo info,
             store.Put(ByteSpan(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())));
  const std::string hash = info.hash.ToHex();
  if (agent)
    if (auto r = agent->AnnounceProvider(hash); !r)
      spdlog::warn("swarm: could not announce manifest {}: {}", hash, r.error().ToString());
  spdlog::info("manifest of '{}': {} ({} experts, {} gates, {} spines)", id, hash, m.experts.size(), m.gates.size(),
               m.spines.size());
  return json{{"model", id},
              {"hash", hash},
              {"uri", blob::FormatBlobUri(info.hash)},
              {"bytes", info.size},
              {"publisher", key.node_id()},
              {"experts", m.experts.size()},
              {"gates", m.gates.size()},
              {"spines", m.spines.size()},
              {"shape", m.shape.has_value()}};
}

namespace {

// Retries the configured manifests not loaded yet every 2 s (on the worker
// pool) until none is pending or the node stops.
struct Loader : std::enable_shared_from_this<Loader> {
  Loader(Node& n, std::weak_ptr<manifest::TrustStore> t) : node(n), trust(std::move(t)), timer(n.io()) {}
  void Arm(std::chrono::milliseconds after) {
    timer.expires_after(after);
    timer.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec || self->stopped) return;
      self->node.pool().Submit([self] {
        auto t = self->trust.lock();
        if (!t || self->stopped) return;
        t->For("");  // loads what is pending (rate-limited by the store)
        if (t->Status()["pending"].empty()) return;
        boost::asio::post(self->node.io(), [self] {
          if (!self->stopped) self->Arm(std::chrono::milliseconds(2000));
        });
      });
    });
  }
  Node& node;
  std::weak_ptr<manifest::TrustStore> trust;
  boost::asio::steady_timer timer;
  std::atomic<bool> stopped{false};
};

}  // namespace

Result<void> AddManifestService(Node& node, std::shared_ptr<blob::BlobStore> store,
                                std::shared_ptr<manifest::TrustStore> trust, std::shared_ptr<swarm::SwarmAgent> agent) {
  Node* n = &node;
  node.admin_router().AddOnPool("POST", "/v1/moe/publish-manifest", &node.pool(),
                                [n, store, agent](const net::Request& http) {
                                  auto body = net::ParseJsonBody(http.body);
                                  if (!body) return net::ErrorResponse(body.error());
                                  if (!body->contains("model") || !(*body)["model"].is_string())
                                    return net::ErrorResponse(
                                        Error::InvalidArgument("request: missing string field 'model'"));
                                  auto r = PublishManifest(*n, *store, agent.get(), (*body)["model"].get<std::string>());
                                  if (!r) return net::ErrorResponse(r.error());
                                  return net::JsonResponse(*r);
                                });
  node.admin_router().Add("GET", "/v1/moe/manifest",
                          [trust](const net::Request&) { return net::JsonResponse(trust->Status()); });
  if (!node.config().trust_manifest.empty()) {
    auto loader = std::make_shared<Loader>(node, trust);
    node.OnStop([loader] {
      loader->stopped = true;
      loader->timer.cancel();
    });
    loader->Arm(std::chrono::milliseconds(0));
  }
  return Ok();
}

}  // namespace tenzro::node
