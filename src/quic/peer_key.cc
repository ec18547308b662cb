#include "quic/peer_key.h"

#include <algorithm>
#include <cstring>

namespace tenzro::quic {

std::array<uint8_t, kSpkiBytes> EncodeSpki(const PublicKey& key) {
  std::array<uint8_t, kSpkiBytes> out{};
  std::memcpy(out.data(), kEd25519SpkiPrefix, sizeof kEd25519SpkiPrefix);
  std::memcpy(out.data() + sizeof kEd25519SpkiPrefix, key.data(), key.size());
  return out;
}

Result<PublicKey> DecodeSpki(ByteSpan spki) {
  if (spki.size() != kSpkiBytes)
    return Error::PermissionDenied("peer key is {} bytes, an Ed25519 raw public key is {}", spki.size(), kSpkiBytes);
  if (!std::equal(std::begin(kEd25519SpkiPrefix), std::end(kEd25519SpkiPrefix), spki.begin()))
    return Error::PermissionDenied("peer key is not an Ed25519 SubjectPublicKeyInfo");
  PublicKey k;
  std::memcpy(k.data(), spki.data() + sizeof kEd25519SpkiPrefix, k.size());
  return k;
}

Result<PublicKey> ParseNodeId(std::string_view node_id) {
  PublicKey k;
  bool lower = std::all_of(node_id.begin(), node_id.end(),
                           [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
  if (node_id.size() != 64 || !lower || !FromHex(node_id, k))
    return Error::InvalidArgument("node id '{}' is not 64 lower-case hex digits", node_id.substr(0, 80));
  return k;
}

std::string NodeIdHex(const PublicKey& key) { return ToHex(ByteSpan(key.data(), key.size())); }

std::string IrohServerName(const PublicKey& key) {
  // RFC 4648 base32 with the "extended hex" alphabet, lower case, unpadded
  // (data-encoding's BASE32_DNSSEC).
  static constexpr char kAlphabet[] = "0123456789abcdefghijklmnopqrstuv";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (uint8_t b : key) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out.push_back(kAlphabet[(acc >> (bits - 5)) & 31]);
      bits -= 5;
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(acc << (5 - bits)) & 31]);
  return out + ".iroh.invalid";
}

}  // namespace tenzro::quic
