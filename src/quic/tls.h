// tenzro quic: TLS 1.3 for QUIC with raw public keys (GnuTLS), iroh-style.
//
// Both sides present their Ed25519 node key as an RFC 7250 raw public key
// (peer_key.h) and both are required to: the server asks for the client's key
// (GNUTLS_CERT_REQUIRE), the client checks, inside the certificate verify
// callback, that the server's key is the node id it dialed (GnuTLS itself
// trusts any raw key). The TLS handshake proves possession of the private key
// (CertificateVerify), so a verified key is the peer's node id. ALPN is
// mandatory; no session tickets, no 0-RTT. See docs/formats/quic.md.
//
// TlsContext owns the credentials of one node identity; each connection gets
// a session from NewSession. A session's user pointer is a TlsSessionRef,
// whose first member is the ngtcp2_crypto_conn_ref ngtcp2 expects there.
// Thread-safety: a TlsContext is immutable after Create and may be shared;
// sessions belong to one connection (its loop thread).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include "core/result.h"
#include "identity/identity.h"
#include "quic/peer_key.h"

namespace tenzro::quic {

// Per-connection TLS state reachable from GnuTLS callbacks.
struct TlsSessionRef {
  ngtcp2_crypto_conn_ref conn_ref{};     // must stay first (ngtcp2 casts the session pointer to it)
  std::optional<PublicKey> expected;     // client: the node id dialed
  std::optional<PublicKey> peer;         // set once the peer's key was accepted
  std::string verify_error;              // why the peer's key was refused
};

class TlsContext {
 public:
  // kInternal if GnuTLS refuses the key (it never should for a valid seed).
  static Result<std::shared_ptr<TlsContext>> Create(const identity::Identity& identity);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // A new session configured for ngtcp2: `server` chooses the role; `alpns`
  // are offered (client: usually one) or accepted (server: every protocol
  // served). `ref` must outlive the session. The client sends `server_name`
  // as SNI when not empty. The caller owns the session (gnutls_deinit).
  Result<gnutls_session_t> NewSession(bool server, const std::vector<std::string>& alpns, TlsSessionRef* ref,
                                      const std::string& server_name) const;

 private:
  TlsContext() = default;
  gnutls_certificate_credentials_t cred_ = nullptr;
  gnutls_priority_t priority_ = nullptr;
};

// The ALPN the handshake settled on ("" if none).
std::string SelectedAlpn(gnutls_session_t session);

}  // namespace tenzro::quic
