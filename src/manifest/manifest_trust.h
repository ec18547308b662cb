// tenzro manifest: which model manifests this node trusts, and the checks
// made against them.
//
// Trust is configured by the operator: manifest blob hashes
// (`--trust-manifest HASH`, config `trust_manifest`) and publisher keys
// (`trust_publisher`: node ids whose signed manifests are trusted, whatever
// their hash). As soon as anything is configured the node is in **manifest
// mode**: a model is served and used only under a trusted manifest, and every
// expert, gate and spine blob must be listed in one of that model's trusted
// manifests (a model with none is refused: kPermissionDenied). With nothing
// configured the node is in open mode: every check passes (today's
// single-operator swarms; docs/security.md says what that risks).
//
// Configured hashes are loaded lazily: the first check after start (and
// again at most every `retry` while one is missing) asks `fetch` for the bytes
// of each manifest not yet loaded (the node: its own blob store, else the
// swarm's providers, verified against the hash), so a node that starts before
// its manifest is reachable trusts it once it is.
//
// Thread-safety: every method may be called from any thread; `fetch` is
// called without the lock held, from the checking thread.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "blob/blake3.h"
#include "core/bytes.h"
#include "core/result.h"
#include "manifest/manifest.h"

namespace tenzro::manifest {

struct TrustOptions {
  std::vector<blob::Blake3Hash> manifests;  // trusted manifest blobs
  std::vector<std::string> publishers;      // trusted signers (node ids)
  // The bytes of a manifest blob, verified against its hash. Null: only
  // manifests handed to Adopt are known.
  std::function<Result<Bytes>(const blob::Blake3Hash&)> fetch;
  std::chrono::milliseconds retry{10000};
  std::function<std::chrono::steady_clock::time_point()> now = [] { return std::chrono::steady_clock::now(); };
};

class TrustStore {
 public:
  explicit TrustStore(TrustOptions options);

  // True in manifest mode (anything configured).
  bool enabled() const { return !options_.manifests.empty() || !options_.publishers.empty(); }

  // Adopts the manifest in `bytes` (which must hash to `hash`) when its hash
  // is configured or its signer is a trusted publisher. kPermissionDenied
  // otherwise or for a bad signature; kCorruption for malformed bytes or a
  // hash mismatch.
  Result<std::shared_ptr<const Manifest>> Adopt(const blob::Blake3Hash& hash, ByteSpan bytes);

  // The trusted manifests of `model` (after trying to load pending ones).
  std::vector<std::shared_ptr<const Manifest>> For(std::string_view model);

  // Checks (Ok in open mode). kPermissionDenied naming the model, the entry,
  // the blob and the manifests when the blob is not listed or the model has
  // no trusted manifest.
  Result<void> CheckExpert(std::string_view model, int layer, int expert, std::string_view blob);
  Result<void> CheckGate(std::string_view model, int layer, std::string_view blob);
  Result<void> CheckSpine(std::string_view model, std::string_view blob);

  // Whether a peer's declared blob is acceptable (open mode: always). Used to
  // screen declarations; never fetches (the screen runs on hot paths).
  bool AllowsExpert(std::string_view model, int layer, int expert, std::string_view blob) const;
  bool AllowsGate(std::string_view model, int layer, std::string_view blob) const;

  // The shape a trusted manifest of `model` carries, if any (never fetches).
  std::optional<catalog::ModelShape> Shape(std::string_view model) const;
  // Every model with a trusted manifest loaded.
  std::vector<std::string> Models() const;

  // {"mode": "open"|"manifest", "manifests": [{hash, model, publisher, experts, gates, spines}],
  //  "pending": [hash...], "publishers": [...], "last_error": "..."}.
  nlohmann::json Status() const;

 private:
  void LoadPending();
  Result<void> Missing(std::string_view model, std::string_view what) const;

  TrustOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, std::vector<std::pair<std::string, std::shared_ptr<const Manifest>>>, std::less<>>
      by_model_;                          // model -> (hash, manifest); guarded
  std::vector<blob::Blake3Hash> pending_;  // configured, not loaded; guarded
  std::chrono::steady_clock::time_point next_try_{};  // guarded
  std::string last_error_;                             // guarded
  std::mutex load_mu_;                                 // one loader at a time
};

}  // namespace tenzro::manifest
