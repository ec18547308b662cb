#include "identity/identity.h"

#include <sodium.h>

#include <cstring>

#include "core/file.h"

namespace tenzro::identity {

bool EnsureSodium() {
  static const bool ok = sodium_init() >= 0;
  return ok;
}

Identity Identity::FromSeed(const std::array<uint8_t, kSeedBytes>& seed) {
  EnsureSodium();
  Identity id;
  id.seed_ = seed;
  crypto_sign_seed_keypair(id.pk_.data(), id.sk_.data(), id.seed_.data());
  id.node_id_ = ToHex(ByteSpan(id.pk_.data(), id.pk_.size()));
  return id;
}

Identity Identity::Generate() {
  EnsureSodium();
  std::array<uint8_t, kSeedBytes> seed;
  randombytes_buf(seed.data(), seed.size());
  Identity id = FromSeed(seed);
  sodium_memzero(seed.data(), seed.size());
  return id;
}

Signature Identity::Sign(ByteSpan message) const {
  Signature sig{};
  crypto_sign_detached(sig.data(), nullptr, message.data(), message.size(), sk_.data());
  return sig;
}

Result<Identity> LoadOrCreateIdentity(const std::string& data_dir) {
  if (!EnsureSodium()) return Error::Internal("libsodium failed to initialise");
  const std::string path = data_dir + "/" + kNodeKeyFile;
  if (PathExists(path)) {
    TENZRO_TRY(Bytes data, ReadFile(path, 4096));
    if (data.size() != kSeedBytes) {
      return Error::Corruption("{}: node key must be exactly {} bytes (an Ed25519 seed), found {}", path,
                               kSeedBytes, data.size());
    }
    std::array<uint8_t, kSeedBytes> seed;
    std::memcpy(seed.data(), data.data(), kSeedBytes);
    sodium_memzero(data.data(), data.size());
    return Identity::FromSeed(seed);
  }
  TENZRO_CHECK_OK(MakeDirs(data_dir));
  Identity id = Identity::Generate();
  TENZRO_CHECK_OK(WriteFileAtomic(path, ByteSpan(id.seed().data(), id.seed().size()), 0600));
  return id;
}

bool IsValidNodeId(std::string_view node_id) {
  if (node_id.size() != 2 * kPublicKeyBytes) return false;
  for (char c : node_id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool Verify(std::string_view node_id, ByteSpan message, ByteSpan sig) {
  if (!EnsureSodium() || !IsValidNodeId(node_id) || sig.size() != kSignatureBytes) return false;
  std::array<uint8_t, kPublicKeyBytes> pk;
  if (!FromHex(node_id, pk)) return false;
  return crypto_sign_verify_detached(sig.data(), message.data(), message.size(), pk.data()) == 0;
}

}  // namespace tenzro::identity
