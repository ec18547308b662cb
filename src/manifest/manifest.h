// tenzro manifest: the signed list of a model's blobs.
//
// A model manifest binds an expert's content to the model: for every
// (layer, expert, formats) it names the BLAKE3 hash of the expert's mini-GGUF
// blob, plus the hashes of the layers' gate blobs and of the model's spine
// blobs, and optionally the model's shape. The preparer signs it with its node
// key; the manifest itself is a blob whose hash an operator trusts
// (manifest/manifest_trust.h). Wire format: docs/formats/manifest.md —
// identity/envelope.h's envelope around a canonical JSON body, domain
// "tenzro-manifest-v1".
//
// Entries are kept sorted and unique ((layer, expert, blob) for experts,
// (layer, blob) for gates, blob for spines), so the same content gives the
// same bytes and lookups are binary searches.
//
// Pure encoding/decoding: no I/O, no clock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "catalog/model_shape.h"
#include "core/result.h"
#include "identity/identity.h"

namespace tenzro::manifest {

inline constexpr int kManifestVersion = 1;
// Domain separation: the signed message is this prefix (with its NUL) || body.
inline constexpr std::string_view kManifestDomain{"tenzro-manifest-v1\0", 19};
// A manifest of the Qwen3.5-397B shape in three formats is ~10 MB.
inline constexpr size_t kMaxManifestBytes = 32u << 20;
inline constexpr size_t kMaxEntries = 1u << 20;  // experts + gates + spines
inline constexpr int kMaxIndex = 1 << 16;        // layer / expert bound

struct ExpertBlob {
  int layer = 0;
  int expert = 0;
  std::string formats;  // "q4_K/q4_K/q6_K" (gate/up/down), as the runtime reports it
  std::string blob;     // 64 lower-case hex digits
  uint64_t bytes = 0;
  bool operator==(const ExpertBlob&) const = default;
};

struct GateBlob {
  int layer = 0;
  std::string blob;
  uint64_t bytes = 0;
  bool operator==(const GateBlob&) const = default;
};

struct SpineBlob {
  std::string blob;
  uint64_t bytes = 0;
  std::string quant;  // "none" or the preset it was requantized with
  bool operator==(const SpineBlob&) const = default;
};

struct Manifest {
  std::string model;      // normalised model id
  std::string publisher;  // node id of the signer (set by Seal, checked by Open)
  std::optional<catalog::ModelShape> shape;
  std::vector<ExpertBlob> experts;
  std::vector<GateBlob> gates;
  std::vector<SpineBlob> spines;

  // Sorts and de-duplicates the entries (Seal and Open do this).
  void Normalize();
  // Lookups; REQUIRE: Normalize() ran (true for a sealed or opened manifest).
  bool ListsExpert(int layer, int expert, std::string_view blob) const;
  bool ListsGate(int layer, std::string_view blob) const;
  bool ListsSpine(std::string_view blob) const;
  // The formats listed for (layer, expert), e.g. for error messages.
  std::vector<const ExpertBlob*> ExpertEntries(int layer, int expert) const;
};

// The canonical JSON body (docs/formats/manifest.md) of `m` signed by `m.publisher`.
std::string ManifestBody(const Manifest& m);

// Normalizes, sets publisher to `id`'s node id and signs. The result is the
// manifest blob's bytes.
std::string SealManifest(Manifest m, const identity::Identity& id);

// Parses and verifies untrusted manifest bytes: size, envelope, signature by
// the body's node_id, every field (hex hashes, index ranges, the shape when
// present and every entry within it). kCorruption (malformed, over a limit),
// kUnsupported (unknown version), kPermissionDenied (signature).
Result<Manifest> OpenManifest(std::string_view bytes);

// The body's fields alone, unsigned (OpenManifest after the signature; the
// fuzz target). Same errors as OpenManifest but kPermissionDenied.
Result<Manifest> ManifestFromBody(const nlohmann::json& body);

}  // namespace tenzro::manifest
