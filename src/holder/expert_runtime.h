// tenzro holder: the expert runtime of one node — which experts and gates it
// holds, loading them from files or blobs, and the local MoE forward
// (docs/runtime.md). The HTTP routes over it are in node/runtime_service.h;
// blobs it lacks come through the injected `fetch_blob` (node/compose.cc
// points it at the transfer module's provider loop over the swarm's
// provider records).
//
// Experts live in a runtime::ExpertCache rooted at DATA_DIR/experts (Warm in
// memory within the node's memory budget, Cold as mini-GGUF files). Gates
// (router + shared expert) are small and always warm; each is also kept as
// DATA_DIR/experts/<model>/<layer>/gate.gguf so that a restarted node
// re-registers its gates and its cold experts (Open scans the directory).
//
// Loads check the file against the model's shape (catalog::ResolveShape with
// the node's data dir): a mismatch is kInvalidArgument naming expected vs got
// and leaves the runtime unchanged. A model unknown to the catalog and the
// built-in table is accepted with the shape the file gives (consistent with
// what is already loaded for it); the answer says so in "note". In manifest
// mode (options.trust) only blobs the model's trusted manifest lists load.
//
// Thread-safety: every method may be called from any thread. The gate map is
// guarded by its own mutex; the cache has its own locking; loads of the same
// expert race benignly (the last registration wins).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "blob/blob_store.h"
#include "catalog/model_shape.h"
#include "core/result.h"
#include "core/thread_pool.h"
#include "manifest/manifest_trust.h"
#include "runtime/cached_moe.h"
#include "runtime/expert_cache.h"
#include "runtime/moe_block.h"
#include "transfer/provider_fetch.h"

namespace tenzro::holder {

struct ExpertRuntimeOptions {
  std::string data_dir;
  uint64_t memory_budget = 0;                      // 0 = unlimited
  std::shared_ptr<blob::BlobStore> store;          // DATA_DIR/blobs
  ThreadPool* compute_pool = nullptr;              // kernels; may be null
  std::chrono::milliseconds pin_wait{30000};
  // Brings a blob this node lacks into `store`, verified. `named` are the
  // sources the load named (its `from`, else the URI's http=host:port);
  // empty: the function finds providers itself (a node: the swarm's provider
  // records, ranked by measured round trip). Null: a missing blob is
  // kNotFound. Errors: kNotFound when there is no source, else the last
  // source's failure (transfer/provider_fetch.h).
  std::function<Result<transfer::SourcesFetch>(const blob::Blake3Hash& hash,
                                               const std::vector<transfer::BlobSource>& named)>
      fetch_blob;
  // Called after a successful load (the swarm re-publishes the holdings).
  std::function<void()> on_change;
  // The node's trusted model manifests. In manifest mode every load is
  // checked against them: a blob URI before anything is fetched, a file by
  // the BLAKE3 of its (converted) mini-GGUF; a refusal is kPermissionDenied
  // and leaves the runtime unchanged. A model the catalog does not know takes
  // its shape from a trusted manifest that carries one. Null: open mode.
  std::shared_ptr<manifest::TrustStore> trust;
};

// Where a load reads from: an absolute path (safetensors or mini-GGUF) or a
// tenzro://blob/<hash> URI; `from` is the peer to fetch a missing blob from
// (else the URI's http=host:port parameter).
struct LoadSource {
  std::string file;
  std::string from;
};

struct ForwardResult {
  int layer = 0;
  std::vector<runtime::TokenRouting> routing;
  bool shared_expert = false;
};

class ExpertRuntime {
 public:
  // Opens the cache and re-registers DATA_DIR/experts (experts cold, gates
  // warm). Files that do not load are skipped and listed in restart_notes().
  static Result<std::unique_ptr<ExpertRuntime>> Open(ExpertRuntimeOptions options);

  // Answers the JSON documented in docs/runtime.md (load-expert / load-gate).
  // A blob these fetch from a peer and then refuse (not a valid expert or
  // gate file, or not the one asked for) is deleted from the store again.
  Result<nlohmann::json> LoadExpert(std::string_view model, int layer, int expert, const LoadSource& src);
  Result<nlohmann::json> LoadGate(std::string_view model, int layer, const LoadSource& src);

  // `tenzro moe status --json`.
  nlohmann::json Status() const;

  // The local MoE block of (model, layer) on x (n_tok x d_model floats) into
  // out. layer nullopt: the model's only gated layer. kNotFound without a
  // gate / with a routed expert not held; kInvalidArgument when d_model is
  // not the model's n_embd.
  Result<ForwardResult> Forward(std::string_view model, std::optional<int> layer, int64_t d_model, const float* x,
                                int n_tok, float* out);

  // What this node holds, for its swarm declarations: every expert (expert
  // >= 0) and gate (expert == -1) with its formats, tier and blob hash (the
  // BLAKE3 of its mini-GGUF, which is also in the node's blob store; entries
  // re-registered on restart are hashed once, here). Skips loading entries.
  struct Holding {
    std::string model;
    int layer = 0;
    int expert = -1;
    std::string formats;  // "q4_K/q4_K/q6_K" (gate/up/down) or the gate's
    bool warm = false;
    std::string blob_hash;
  };
  std::vector<Holding> Holdings();

  // The gate of a block, for a forward whose routed experts run elsewhere
  // (the distributed forward: dispatch::DispatchedExperts): resolves the
  // layer and checks d_model as Forward does.
  struct BlockGate {
    std::string model;  // normalised id
    int layer = 0;
    std::shared_ptr<const runtime::GateWeights> weights;
    runtime::RoutingConfig routing;
    runtime::MoeBlockGate view() const {
      return {&weights->router, routing, weights->shared ? &*weights->shared : nullptr};
    }
  };
  Result<BlockGate> FindBlockGate(std::string_view model, std::optional<int> layer, int64_t d_model) const;
  // runtime::RunMoeBlock of `gate` on x with its routed experts run by
  // `routed`, the gate and the shared expert on this runtime's compute pool.
  Result<void> RunBlock(const BlockGate& gate, const float* x, int n_tok, runtime::RoutedExpertRunner& routed,
                        float* out, runtime::MoeBlockRun& run);

  runtime::ExpertCache& cache() { return *cache_; }
  const std::vector<std::string>& restart_notes() const { return notes_; }

 private:
  struct Gate {
    std::shared_ptr<const runtime::GateWeights> weights;
    runtime::RoutingConfig routing;
    std::string routing_name;
    std::string path;
    std::string shape_source;
    std::string blob_hash;  // of gate.gguf; "" until known
  };
  struct Shape {
    std::optional<catalog::ModelShape> shape;  // nullopt: unknown model
    std::string source;                        // "catalog" | "builtin" | "file"
  };
  explicit ExpertRuntime(ExpertRuntimeOptions options) : options_(std::move(options)) {}
  Result<Shape> ResolveModel(const std::string& id) const;
  // The gate of (id, layer); layer nullopt: the model's only gated layer
  // (set on return). kNotFound / kInvalidArgument as Forward documents.
  Result<Gate> FindGate(const std::string& id, std::optional<int>& layer) const;
  // The store path of blob `uri`, fetched from a provider when absent (then
  // *fetched names it).
  Result<std::string> AcquireBlob(const std::string& uri, const std::string& from, nlohmann::json* out,
                                  std::optional<blob::Blake3Hash>* fetched);
  Result<nlohmann::json> LoadExpertFrom(const std::string& id, int layer, int expert, const LoadSource& src,
                                        std::optional<blob::Blake3Hash>* fetched);
  Result<nlohmann::json> LoadGateFrom(const std::string& id, int layer, const LoadSource& src,
                                      std::optional<blob::Blake3Hash>* fetched);
  // `r`, after deleting `fetched` from the store when `r` failed.
  Result<nlohmann::json> DropRefusedFetch(Result<nlohmann::json> r, const std::optional<blob::Blake3Hash>& fetched);
  Result<Gate> MakeGate(const std::string& id, std::shared_ptr<const runtime::GateWeights> g, const Shape& s) const;
  Result<void> ScanGates();

  ExpertRuntimeOptions options_;
  std::unique_ptr<runtime::ExpertCache> cache_;
  mutable std::mutex gates_mu_;
  std::map<std::pair<std::string, int>, Gate> gates_;  // guarded by gates_mu_
  std::map<runtime::ExpertKey, std::string> hashes_;   // expert blob hashes; guarded by gates_mu_
  std::vector<std::string> notes_;
};

}  // namespace tenzro::holder
