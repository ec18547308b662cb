#include "quic/tls.h"

#include <gnutls/abstract.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

namespace tenzro::quic {
namespace {

// TLS 1.3 only, raw public keys only (both directions), Ed25519 signatures,
// the AEADs QUIC allows, no middlebox compatibility mode.
constexpr const char* kPriority =
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:"
    "-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1:-SIGN-ALL:+SIGN-EDDSA-ED25519:"
    "-CTYPE-ALL:+CTYPE-CLI-RAWPK:+CTYPE-SRV-RAWPK:%DISABLE_TLS13_COMPAT_MODE";

Error TlsError(const char* what, int rv) { return Error::Internal("{}: {}", what, gnutls_strerror(rv)); }

// Called by GnuTLS when the peer's certificate arrives (both roles).
int VerifyPeer(gnutls_session_t session) {
  auto* ref = static_cast<TlsSessionRef*>(gnutls_session_get_ptr(session));
  if (ref == nullptr) return GNUTLS_E_CERTIFICATE_ERROR;
  if (gnutls_certificate_type_get2(session, GNUTLS_CTYPE_PEERS) != GNUTLS_CRT_RAWPK) {
    ref->verify_error = "peer did not present a raw public key";
    return GNUTLS_E_CERTIFICATE_ERROR;
  }
  unsigned n = 0;
  const gnutls_datum_t* certs = gnutls_certificate_get_peers(session, &n);
  if (certs == nullptr || n != 1) {
    ref->verify_error = "peer presented no key";
    return GNUTLS_E_CERTIFICATE_ERROR;
  }
  auto key = DecodeSpki(ByteSpan(certs[0].data, certs[0].size));
  if (!key) {
    ref->verify_error = key.error().message();
    return GNUTLS_E_CERTIFICATE_ERROR;
  }
  if (ref->expected && *ref->expected != *key) {
    ref->verify_error = fmt::format("peer is node {}, not the node {} that was dialed", NodeIdHex(*key),
                                    NodeIdHex(*ref->expected));
    return GNUTLS_E_CERTIFICATE_ERROR;
  }
  ref->peer = *key;
  return 0;
}

}  // namespace

Result<std::shared_ptr<TlsContext>> TlsContext::Create(const identity::Identity& identity) {
  std::shared_ptr<TlsContext> ctx(new TlsContext());
  int rv = gnutls_certificate_allocate_credentials(&ctx->cred_);
  if (rv != 0) return TlsError("gnutls_certificate_allocate_credentials", rv);

  gnutls_datum_t pub{const_cast<uint8_t*>(identity.public_key().data()),
                     static_cast<unsigned>(identity.public_key().size())};
  gnutls_datum_t seed{const_cast<uint8_t*>(identity.seed().data()), static_cast<unsigned>(identity.seed().size())};
  gnutls_privkey_t priv = nullptr;
  gnutls_pubkey_t pubkey = nullptr;
  auto* pcert = static_cast<gnutls_pcert_st*>(gnutls_calloc(1, sizeof(gnutls_pcert_st)));
  if (pcert == nullptr) return Error::Internal("out of memory for the TLS certificate");
  auto fail = [&](const char* what, int code) {
    if (priv) gnutls_privkey_deinit(priv);
    if (pubkey) gnutls_pubkey_deinit(pubkey);
    gnutls_free(pcert);
    return TlsError(what, code);
  };
  if ((rv = gnutls_privkey_init(&priv)) != 0) return fail("gnutls_privkey_init", rv);
  if ((rv = gnutls_privkey_import_ecc_raw(priv, GNUTLS_ECC_CURVE_ED25519, &pub, nullptr, &seed)) != 0)
    return fail("gnutls_privkey_import_ecc_raw", rv);
  if ((rv = gnutls_pubkey_init(&pubkey)) != 0) return fail("gnutls_pubkey_init", rv);
  if ((rv = gnutls_pubkey_import_ecc_raw(pubkey, GNUTLS_ECC_CURVE_ED25519, &pub, nullptr)) != 0)
    return fail("gnutls_pubkey_import_ecc_raw", rv);
  // The pcert takes the pubkey; the credentials then take pcert and privkey.
  if ((rv = gnutls_pcert_import_rawpk(pcert, pubkey, 0)) != 0) return fail("gnutls_pcert_import_rawpk", rv);
  pubkey = nullptr;
  if ((rv = gnutls_certificate_set_key(ctx->cred_, nullptr, 0, pcert, 1, priv)) < 0) {
    gnutls_pcert_deinit(pcert);
    gnutls_free(pcert);
    gnutls_privkey_deinit(priv);
    return TlsError("gnutls_certificate_set_key", rv);
  }
  // The credentials copied the pcert struct (they own its contents now); the
  // container itself is ours (LeakSanitizer: 32 bytes per context).
  gnutls_free(pcert);
  gnutls_certificate_set_verify_function(ctx->cred_, VerifyPeer);
  const char* err_pos = nullptr;
  if ((rv = gnutls_priority_init2(&ctx->priority_, kPriority, &err_pos, 0)) != 0)
    return Error::Internal("gnutls priority string rejected at '{}': {}", err_pos ? err_pos : "?", gnutls_strerror(rv));
  return ctx;
}

TlsContext::~TlsContext() {
  if (priority_) gnutls_priority_deinit(priority_);
  if (cred_) gnutls_certificate_free_credentials(cred_);
}

Result<gnutls_session_t> TlsContext::NewSession(bool server, const std::vector<std::string>& alpns,
                                                TlsSessionRef* ref, const std::string& server_name) const {
  gnutls_session_t s = nullptr;
  unsigned flags = (server ? GNUTLS_SERVER : GNUTLS_CLIENT) | GNUTLS_ENABLE_RAWPK | GNUTLS_NO_END_OF_EARLY_DATA |
                   GNUTLS_NO_TICKETS;
  int rv = gnutls_init(&s, flags);
  if (rv != 0) return TlsError("gnutls_init", rv);
  auto fail = [&](const char* what, int code) {
    gnutls_deinit(s);
    return TlsError(what, code);
  };
  if (server ? ngtcp2_crypto_gnutls_configure_server_session(s) != 0
             : ngtcp2_crypto_gnutls_configure_client_session(s) != 0)
    return fail("ngtcp2_crypto_gnutls_configure_session", GNUTLS_E_INTERNAL_ERROR);
  if ((rv = gnutls_priority_set(s, priority_)) != 0) return fail("gnutls_priority_set", rv);
  if ((rv = gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, cred_)) != 0) return fail("gnutls_credentials_set", rv);
  if (server) gnutls_certificate_server_set_request(s, GNUTLS_CERT_REQUIRE);
  std::vector<gnutls_datum_t> protos;
  for (const std::string& a : alpns)
    protos.push_back({reinterpret_cast<unsigned char*>(const_cast<char*>(a.data())), static_cast<unsigned>(a.size())});
  if (protos.empty()) return fail("no ALPN to offer", GNUTLS_E_NO_APPLICATION_PROTOCOL);
  rv = gnutls_alpn_set_protocols(s, protos.data(), static_cast<unsigned>(protos.size()),
                                 GNUTLS_ALPN_MANDATORY | (server ? GNUTLS_ALPN_SERVER_PRECEDENCE : 0));
  if (rv != 0) return fail("gnutls_alpn_set_protocols", rv);
  if (!server && !server_name.empty()) {
    rv = gnutls_server_name_set(s, GNUTLS_NAME_DNS, server_name.data(), server_name.size());
    if (rv != 0) return fail("gnutls_server_name_set", rv);
  }
  gnutls_session_set_ptr(s, ref);
  return s;
}

std::string SelectedAlpn(gnutls_session_t session) {
  gnutls_datum_t p{};
  if (gnutls_alpn_get_selected_protocol(session, &p) != 0) return "";
  return std::string(reinterpret_cast<const char*>(p.data), p.size);
}

}  // namespace tenzro::quic
