#include <gtest/gtest.h>

#include "identity/identity.h"
#include "quic/peer_key.h"

namespace tenzro::quic {
namespace {

TEST(PeerKey, SpkiRoundTripAndRejects) {
  identity::Identity id = identity::Identity::Generate();
  auto spki = EncodeSpki(id.public_key());
  EXPECT_EQ(spki[0], 0x30);
  EXPECT_EQ(spki[1], 0x2a);
  auto back = DecodeSpki(ByteSpan(spki.data(), spki.size()));
  ASSERT_TRUE(back);
  EXPECT_EQ(NodeIdHex(*back), id.node_id());
  auto bad = spki;
  bad[7] ^= 1;  // another algorithm OID
  EXPECT_EQ(DecodeSpki(ByteSpan(bad.data(), bad.size())).error().code(), ErrorCode::kPermissionDenied);
  EXPECT_FALSE(DecodeSpki(ByteSpan(spki.data(), 43)));
}

TEST(PeerKey, NodeIds) {
  identity::Identity id = identity::Identity::Generate();
  auto k = ParseNodeId(id.node_id());
  ASSERT_TRUE(k);
  EXPECT_EQ(*k, id.public_key());
  EXPECT_FALSE(ParseNodeId(id.node_id().substr(1)));
  std::string upper = id.node_id();
  upper[0] = 'A';
  EXPECT_FALSE(ParseNodeId(upper));
}

// iroh's own snapshot (iroh/src/tls/name.rs): the key of the all-zero seed.
TEST(PeerKey, IrohServerNameMatchesIroh) {
  identity::Identity zero = identity::Identity::FromSeed({});
  EXPECT_EQ(IrohServerName(zero.public_key()), "7dl2ff6emqi2qol3l382krodedij45bn3nh479hqo14a32qpr8kg.iroh.invalid");
}

}  // namespace
}  // namespace tenzro::quic
