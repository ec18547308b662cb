// tenzro quic: node keys as they appear on the wire (docs/formats/quic.md).
//
// A node's TLS "certificate" is its Ed25519 public key as an RFC 7250 raw
// public key: the 44-byte DER SubjectPublicKeyInfo
//   30 2a 30 05 06 03 2b 65 70 03 21 00 || key(32)
// and its node id is that key (64 lower-case hex, identity/identity.h). iroh
// dialers also name the server in SNI as "<base32-dnssec(key)>.iroh.invalid".
// Pure functions; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/bytes.h"
#include "core/result.h"

namespace tenzro::quic {

using PublicKey = std::array<uint8_t, 32>;

inline constexpr size_t kSpkiBytes = 44;
inline constexpr uint8_t kEd25519SpkiPrefix[12] = {0x30, 0x2a, 0x30, 0x05, 0x06, 0x03,
                                                    0x2b, 0x65, 0x70, 0x03, 0x21, 0x00};

// The 44-byte SubjectPublicKeyInfo of `key`.
std::array<uint8_t, kSpkiBytes> EncodeSpki(const PublicKey& key);
// The key inside an Ed25519 SPKI; kPermissionDenied for anything else (another
// algorithm, a certificate, a wrong length): the peer cannot be identified.
Result<PublicKey> DecodeSpki(ByteSpan spki);

// 64 lower-case hex -> key; kInvalidArgument naming the id when malformed.
Result<PublicKey> ParseNodeId(std::string_view node_id);
std::string NodeIdHex(const PublicKey& key);

// "<52 chars of base32-dnssec>.iroh.invalid" (iroh's TLS server name).
std::string IrohServerName(const PublicKey& key);

}  // namespace tenzro::quic
