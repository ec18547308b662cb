// tenzro identity: a node's Ed25519 key pair and its node id.
//
// Every node owns one Ed25519 key pair. The secret is the 32-byte Ed25519
// seed, stored raw in <data_dir>/node.key (mode 0600, written atomically);
// this is exactly iroh's SecretKey format, so the QUIC transport reuses it.
// The public key is the node id, written as 64 lower-case hex digits.
//
// Thread-safety: an Identity is immutable after creation; Sign and Verify
// may be called from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/bytes.h"
#include "core/result.h"

namespace tenzro::identity {

inline constexpr size_t kSeedBytes = 32;
inline constexpr size_t kPublicKeyBytes = 32;
inline constexpr size_t kSignatureBytes = 64;
inline constexpr const char* kNodeKeyFile = "node.key";

using Signature = std::array<uint8_t, kSignatureBytes>;

class Identity {
 public:
  // Derives the key pair from a 32-byte seed (deterministic).
  static Identity FromSeed(const std::array<uint8_t, kSeedBytes>& seed);
  // A fresh random identity (not persisted).
  static Identity Generate();

  // 64 lower-case hex digits of the public key.
  const std::string& node_id() const { return node_id_; }
  const std::array<uint8_t, kPublicKeyBytes>& public_key() const { return pk_; }
  const std::array<uint8_t, kSeedBytes>& seed() const { return seed_; }

  // Detached Ed25519 signature over `message`.
  Signature Sign(ByteSpan message) const;

 private:
  Identity() = default;
  std::array<uint8_t, kSeedBytes> seed_{};
  std::array<uint8_t, kPublicKeyBytes> pk_{};
  std::array<uint8_t, 64> sk_{};  // libsodium's expanded secret key (seed || pk)
  std::string node_id_;
};

// Loads <data_dir>/node.key, or creates it (and data_dir) with a fresh
// random seed when absent. kCorruption naming the file when it exists but is
// not exactly 32 bytes; kIo when it cannot be read or written.
Result<Identity> LoadOrCreateIdentity(const std::string& data_dir);

// True when `node_id` is 64 lower-case hex digits.
bool IsValidNodeId(std::string_view node_id);

// True iff `sig` is a valid Ed25519 signature of `message` by the key whose
// hex is `node_id`. False (never an error) for a malformed id or signature.
bool Verify(std::string_view node_id, ByteSpan message, ByteSpan sig);

// Calls sodium_init() once; safe from any thread. Returns false if libsodium
// could not initialise (then nothing here works).
bool EnsureSodium();

}  // namespace tenzro::identity
