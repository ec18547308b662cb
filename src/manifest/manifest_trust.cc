#include "manifest/manifest_trust.h"

#include <algorithm>

#include <fmt/format.h>

namespace tenzro::manifest {

using nlohmann::json;

TrustStore::TrustStore(TrustOptions options) : options_(std::move(options)) { pending_ = options_.manifests; }

Result<std::shared_ptr<const Manifest>> TrustStore::Adopt(const blob::Blake3Hash& hash, ByteSpan bytes) {
  if (blob::Blake3(bytes) != hash)
    return Error::Corruption("manifest {}: the bytes do not hash to it", hash.ToHex());
  const bool by_hash = std::find(options_.manifests.begin(), options_.manifests.end(), hash) != options_.manifests.end();
  TENZRO_TRY(Manifest m, OpenManifest(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size())));
  const bool by_key =
      std::find(options_.publishers.begin(), options_.publishers.end(), m.publisher) != options_.publishers.end();
  if (!by_hash && !by_key)
    return Error::PermissionDenied(
        "manifest {} of model '{}' (signed by {}) is not trusted: neither its hash nor its publisher is configured "
        "(--trust-manifest, trust_publisher)",
        hash.ToHex(), m.model, m.publisher);
  auto shared = std::make_shared<const Manifest>(std::move(m));
  std::lock_guard<std::mutex> lock(mu_);
  auto& list = by_model_[shared->model];
  const std::string hex = hash.ToHex();
  if (std::none_of(list.begin(), list.end(), [&](const auto& p) { return p.first == hex; }))
    list.emplace_back(hex, shared);
  std::erase(pending_, hash);
  return shared;
}

void TrustStore::LoadPending() {
  std::vector<blob::Blake3Hash> todo;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (pending_.empty() || !options_.fetch || options_.now() < next_try_) return;
    todo = pending_;
  }
  std::lock_guard<std::mutex> one(load_mu_);
  std::string err;
  for (const auto& h : todo) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (std::find(pending_.begin(), pending_.end(), h) == pending_.end()) continue;  // another loader got it
    }
    auto bytes = options_.fetch(h);
    Result<std::shared_ptr<const Manifest>> r =
        bytes ? Adopt(h, ByteSpan(*bytes)) : Result<std::shared_ptr<const Manifest>>(bytes.error());
    if (!r) err = fmt::format("manifest {}: {}", h.ToHex(), r.error().ToString());
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!pending_.empty()) next_try_ = options_.now() + options_.retry;
  if (!err.empty()) last_error_ = err;
}

std::vector<std::shared_ptr<const Manifest>> TrustStore::For(std::string_view model) {
  LoadPending();
  std::vector<std::shared_ptr<const Manifest>> out;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_model_.find(model);
  if (it != by_model_.end())
    for (const auto& [h, m] : it->second) out.push_back(m);
  return out;
}

Result<void> TrustStore::Missing(std::string_view model, std::string_view what) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_model_.find(model);
  if (it == by_model_.end()) {
    std::string why = pending_.empty() ? std::string()
                                       : fmt::format(" ({} configured manifest(s) not loaded yet{}{})", pending_.size(),
                                                     last_error_.empty() ? "" : ": ", last_error_);
    return Error::PermissionDenied(
        "model '{}' has no trusted manifest on this node{}; it serves only models under a manifest it trusts "
        "(--trust-manifest HASH, trust_publisher)",
        model, why);
  }
  std::string hashes;
  for (const auto& [h, m] : it->second) hashes += (hashes.empty() ? "" : ", ") + h.substr(0, 16);
  return Error::PermissionDenied("{} is not in the trusted manifest of model '{}' (manifest {})", what, model, hashes);
}

Result<void> TrustStore::CheckExpert(std::string_view model, int layer, int expert, std::string_view blob) {
  if (!enabled()) return Ok();
  for (const auto& m : For(model))
    if (m->ListsExpert(layer, expert, blob)) return Ok();
  return Missing(model, fmt::format("blob {} for layer {} expert {}", blob, layer, expert));
}

Result<void> TrustStore::CheckGate(std::string_view model, int layer, std::string_view blob) {
  if (!enabled()) return Ok();
  for (const auto& m : For(model))
    if (m->ListsGate(layer, blob)) return Ok();
  return Missing(model, fmt::format("blob {} for the gate of layer {}", blob, layer));
}

Result<void> TrustStore::CheckSpine(std::string_view model, std::string_view blob) {
  if (!enabled()) return Ok();
  for (const auto& m : For(model))
    if (m->ListsSpine(blob)) return Ok();
  return Missing(model, fmt::format("spine blob {}", blob));
}

bool TrustStore::AllowsExpert(std::string_view model, int layer, int expert, std::string_view blob) const {
  if (!enabled()) return true;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_model_.find(model);
  if (it == by_model_.end()) return false;
  return std::any_of(it->second.begin(), it->second.end(),
                     [&](const auto& p) { return p.second->ListsExpert(layer, expert, blob); });
}

bool TrustStore::AllowsGate(std::string_view model, int layer, std::string_view blob) const {
  if (!enabled()) return true;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_model_.find(model);
  if (it == by_model_.end()) return false;
  return std::any_of(it->second.begin(), it->second.end(),
                     [&](const auto& p) { return p.second->ListsGate(layer, blob); });
}

std::optional<catalog::ModelShape> TrustStore::Shape(std::string_view model) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_model_.find(model);
  if (it == by_model_.end()) return std::nullopt;
  for (const auto& [h, m] : it->second)
    if (m->shape) return m->shape;
  return std::nullopt;
}

std::vector<std::string> TrustStore::Models() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [model, list] : by_model_) out.push_back(model);
  return out;
}

json TrustStore::Status() const {
  std::lock_guard<std::mutex> lock(mu_);
  json out = {{"mode", enabled() ? "manifest" : "open"},
              {"manifests", json::array()},
              {"pending", json::array()},
              {"publishers", options_.publishers}};
  for (const auto& [model, list] : by_model_)
    for (const auto& [h, m] : list)
      out["manifests"].push_back({{"hash", h},
                                  {"model", model},
                                  {"publisher", m->publisher},
                                  {"experts", m->experts.size()},
                                  {"gates", m->gates.size()},
                                  {"spines", m->spines.size()},
                                  {"shape", m->shape.has_value()}});
  for (const auto& h : pending_) out["pending"].push_back(h.ToHex());
  if (!last_error_.empty()) out["last_error"] = last_error_;
  return out;
}

}  // namespace tenzro::manifest
