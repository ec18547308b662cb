#include "identity/envelope.h"

#include "core/bytes.h"

namespace tenzro::identity {

using nlohmann::json;

namespace {
constexpr std::string_view kEnv0 = "{\"body\":";
constexpr std::string_view kEnv1 = ",\"sig\":\"";
constexpr std::string_view kEnv2 = "\",\"v\":1}";

const json* Member(const json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

ByteSpan AsBytes(const std::string& s) { return ByteSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size()); }
}  // namespace

size_t EnvelopeBytes(const std::string& body_text) {
  return kEnv0.size() + json(body_text).dump().size() + kEnv1.size() + 2 * kSignatureBytes + kEnv2.size();
}

std::string SealEnvelope(std::string_view domain, const std::string& body_text, const identity::Identity& id) {
  std::string message(domain);
  message += body_text;
  Signature sig = id.Sign(AsBytes(message));
  std::string out(kEnv0);
  out += json(body_text).dump();
  out += kEnv1;
  out += ToHex(sig);
  out += kEnv2;
  return out;
}

Result<json> OpenEnvelope(std::string_view domain, std::string_view record, size_t max_bytes, std::string_view what) {
  if (record.size() > max_bytes) {
    return Error::Corruption("{}: {} bytes exceeds the {} byte limit", what, record.size(), max_bytes);
  }
  json env = json::parse(record.begin(), record.end(), nullptr, /*allow_exceptions=*/false);
  if (env.is_discarded() || !env.is_object()) return Error::Corruption("{}: not a JSON object", what);
  const json* v = Member(env, "v");
  if (!v || !v->is_number_integer()) return Error::Corruption("{}: v missing or not an integer", what);
  if (*v != kEnvelopeVersion) return Error::Unsupported("{}: version {} (this build reads 1)", what, v->dump());
  const json* body_v = Member(env, "body");
  const json* sig_v = Member(env, "sig");
  if (!body_v || !body_v->is_string()) return Error::Corruption("{}: body missing or not a string", what);
  if (!sig_v || !sig_v->is_string()) return Error::Corruption("{}: sig missing or not a string", what);
  const std::string& body_text = body_v->get_ref<const std::string&>();
  Signature sig;
  if (!FromHex(sig_v->get_ref<const std::string&>(), sig)) {
    return Error::Corruption("{}: sig is not {} hex digits", what, 2 * kSignatureBytes);
  }
  json body = json::parse(body_text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.is_object()) return Error::Corruption("{}: body is not a JSON object", what);
  const json* node_id = Member(body, "node_id");
  if (!node_id || !node_id->is_string() || !IsValidNodeId(node_id->get_ref<const std::string&>())) {
    return Error::Corruption("{}: node_id missing or not 64 lower-case hex digits", what);
  }
  std::string message(domain);
  message += body_text;
  if (!Verify(node_id->get_ref<const std::string&>(), AsBytes(message), sig)) {
    return Error::PermissionDenied("{}: signature does not verify for node_id {}", what,
                                   node_id->get_ref<const std::string&>());
  }
  return body;
}

}  // namespace tenzro::identity
