#include "swarm/declaration.h"

#include <cmath>

#include "core/bytes.h"
#include "identity/envelope.h"

namespace tenzro::swarm {

using nlohmann::json;

namespace {

constexpr int kMaxIndex = 1 << 20;        // layer / expert bound
constexpr size_t kMaxShortString = 256;   // model, formats, hashes, addresses

// Exact size of the record that EncodeRecord produces for `body_text`.
size_t RecordBytes(const std::string& body_text) { return identity::EnvelopeBytes(body_text); }

bool PrintableAscii(std::string_view s) {
  for (char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

Result<void> CheckString(std::string_view s, std::string_view field, bool allow_empty) {
  if (!allow_empty && s.empty()) return Error::Corruption("declaration: field {} is empty", field);
  if (s.size() > kMaxShortString) return Error::Corruption("declaration: field {} longer than {}", field, kMaxShortString);
  if (!PrintableAscii(s)) return Error::Corruption("declaration: field {} is not printable ASCII", field);
  return Ok();
}

const json* Member(const json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

Result<std::string> GetString(const json& j, const char* key, std::string_view ctx, bool allow_empty = false) {
  const json* v = Member(j, key);
  if (!v || !v->is_string()) return Error::Corruption("declaration: {}{} missing or not a string", ctx, key);
  std::string s = v->get<std::string>();
  TENZRO_CHECK_OK(CheckString(s, std::string(ctx) + key, allow_empty));
  return s;
}

Result<uint64_t> GetU64(const json& j, const char* key, std::string_view ctx, uint64_t max = UINT64_MAX) {
  const json* v = Member(j, key);
  if (!v || !v->is_number_integer() || (v->is_number_integer() && !v->is_number_unsigned() && v->get<int64_t>() < 0)) {
    return Error::Corruption("declaration: {}{} missing or not a non-negative integer", ctx, key);
  }
  uint64_t x = v->get<uint64_t>();
  if (x > max) return Error::Corruption("declaration: {}{} = {} out of range (max {})", ctx, key, x, max);
  return x;
}

Result<const json*> GetArray(const json& j, const char* key, std::string_view ctx) {
  const json* v = Member(j, key);
  if (!v || !v->is_array()) return Error::Corruption("declaration: {}{} missing or not an array", ctx, key);
  return v;
}

json EndpointJson(const Endpoint& e) { return json{{"addr", e.address}, {"kind", e.kind}}; }
json ExpertJson(const HeldExpert& e) {
  return json{{"blob", e.blob_hash}, {"down", e.down_format}, {"expert", e.expert}, {"gate", e.gate_format},
              {"layer", e.layer},    {"tier", TierName(e.tier)}, {"tps", e.served_tps}, {"up", e.up_format}};
}
json GateJson(const HeldGate& g) { return json{{"blob", g.blob_hash}, {"layer", g.layer}}; }
json OfferJson(const OfferedBlob& o) {
  json j{{"blob", o.blob_hash}, {"layer", o.layer}};
  if (o.expert >= 0) j["expert"] = o.expert;
  return j;
}

}  // namespace

std::string_view HolderStateName(HolderState s) {
  switch (s) {
    case HolderState::kJoining: return "joining";
    case HolderState::kServing: return "serving";
    case HolderState::kLeaving: return "leaving";
  }
  return "?";
}

std::string_view TierName(Tier t) { return t == Tier::kCold ? "cold" : "warm"; }

json DeclarationToJson(const Declaration& d) {
  json endpoints = json::array(), experts = json::array(), gates = json::array();
  for (const auto& e : d.endpoints) endpoints.push_back(EndpointJson(e));
  for (const auto& e : d.experts) experts.push_back(ExpertJson(e));
  for (const auto& g : d.gates) gates.push_back(GateJson(g));
  json j{{"endpoints", std::move(endpoints)},
              {"experts", std::move(experts)},
              {"free_bytes", d.free_bytes},
              {"gates", std::move(gates)},
              {"memory_budget", d.memory_budget},
              {"model", d.model},
              {"node_id", d.node_id},
              {"part", d.part},
              {"parts", d.parts},
              {"seq", d.seq},
              {"state", HolderStateName(d.state)},
              {"ts_ms", d.timestamp_ms},
              {"ttl_s", d.ttl_s}};
  if (!d.offers.empty()) {
    json offers = json::array();
    for (const auto& o : d.offers) offers.push_back(OfferJson(o));
    j["offers"] = std::move(offers);
  }
  return j;
}

Result<Declaration> DeclarationFromJson(const json& j) {
  if (!j.is_object()) return Error::Corruption("declaration: body is not a JSON object");
  Declaration d;
  TENZRO_TRY(d.node_id, GetString(j, "node_id", ""));
  if (!identity::IsValidNodeId(d.node_id))
    return Error::Corruption("declaration: node_id is not 64 lower-case hex digits");
  TENZRO_TRY(d.model, GetString(j, "model", ""));
  TENZRO_TRY(d.memory_budget, GetU64(j, "memory_budget", ""));
  TENZRO_TRY(d.free_bytes, GetU64(j, "free_bytes", ""));
  TENZRO_TRY(d.seq, GetU64(j, "seq", ""));
  TENZRO_TRY(uint64_t ts, GetU64(j, "ts_ms", "", uint64_t{INT64_MAX} / 2));
  d.timestamp_ms = static_cast<int64_t>(ts);
  TENZRO_TRY(uint64_t ttl, GetU64(j, "ttl_s", "", 7 * 24 * 3600));
  if (ttl == 0) return Error::Corruption("declaration: ttl_s is 0");
  d.ttl_s = static_cast<uint32_t>(ttl);
  TENZRO_TRY(uint64_t parts, GetU64(j, "parts", "", 1 << 16));
  TENZRO_TRY(uint64_t part, GetU64(j, "part", "", 1 << 16));
  if (parts == 0 || part >= parts) return Error::Corruption("declaration: part {} not below parts {}", part, parts);
  d.part = static_cast<uint32_t>(part);
  d.parts = static_cast<uint32_t>(parts);
  TENZRO_TRY(std::string state, GetString(j, "state", ""));
  if (state == "joining") d.state = HolderState::kJoining;
  else if (state == "serving") d.state = HolderState::kServing;
  else if (state == "leaving") d.state = HolderState::kLeaving;
  else return Error::Corruption("declaration: unknown state \"{}\"", state);

  TENZRO_TRY(const json* endpoints, GetArray(j, "endpoints", ""));
  for (size_t i = 0; i < endpoints->size(); ++i) {
    const json& e = (*endpoints)[i];
    std::string ctx = fmt::format("endpoints[{}].", i);
    if (!e.is_object()) return Error::Corruption("declaration: {} is not an object", ctx);
    Endpoint ep;
    TENZRO_TRY(ep.kind, GetString(e, "kind", ctx));
    TENZRO_TRY(ep.address, GetString(e, "addr", ctx));
    d.endpoints.push_back(std::move(ep));
  }
  TENZRO_TRY(const json* experts, GetArray(j, "experts", ""));
  d.experts.reserve(experts->size());
  for (size_t i = 0; i < experts->size(); ++i) {
    const json& e = (*experts)[i];
    std::string ctx = fmt::format("experts[{}].", i);
    if (!e.is_object()) return Error::Corruption("declaration: {} is not an object", ctx);
    HeldExpert x;
    TENZRO_TRY(uint64_t layer, GetU64(e, "layer", ctx, kMaxIndex));
    TENZRO_TRY(uint64_t expert, GetU64(e, "expert", ctx, kMaxIndex));
    x.layer = static_cast<int>(layer);
    x.expert = static_cast<int>(expert);
    TENZRO_TRY(x.gate_format, GetString(e, "gate", ctx));
    TENZRO_TRY(x.up_format, GetString(e, "up", ctx));
    TENZRO_TRY(x.down_format, GetString(e, "down", ctx));
    TENZRO_TRY(x.blob_hash, GetString(e, "blob", ctx, /*allow_empty=*/true));
    TENZRO_TRY(std::string tier, GetString(e, "tier", ctx));
    if (tier == "warm") x.tier = Tier::kWarm;
    else if (tier == "cold") x.tier = Tier::kCold;
    else return Error::Corruption("declaration: {}tier unknown \"{}\"", ctx, tier);
    const json* tps = Member(e, "tps");
    if (!tps || !tps->is_number() || !std::isfinite(tps->get<double>()) || tps->get<double>() < 0) {
      return Error::Corruption("declaration: {}tps missing or not a finite non-negative number", ctx);
    }
    x.served_tps = tps->get<double>();
    d.experts.push_back(std::move(x));
  }
  TENZRO_TRY(const json* gates, GetArray(j, "gates", ""));
  for (size_t i = 0; i < gates->size(); ++i) {
    const json& g = (*gates)[i];
    std::string ctx = fmt::format("gates[{}].", i);
    if (!g.is_object()) return Error::Corruption("declaration: {} is not an object", ctx);
    HeldGate hg;
    TENZRO_TRY(uint64_t layer, GetU64(g, "layer", ctx, kMaxIndex));
    hg.layer = static_cast<int>(layer);
    TENZRO_TRY(hg.blob_hash, GetString(g, "blob", ctx, /*allow_empty=*/true));
    d.gates.push_back(std::move(hg));
  }
  if (Member(j, "offers")) {  // optional
    TENZRO_TRY(const json* offers, GetArray(j, "offers", ""));
    for (size_t i = 0; i < offers->size(); ++i) {
      const json& o = (*offers)[i];
      std::string ctx = fmt::format("offers[{}].", i);
      if (!o.is_object()) return Error::Corruption("declaration: {} is not an object", ctx);
      OfferedBlob ob;
      TENZRO_TRY(uint64_t layer, GetU64(o, "layer", ctx, kMaxIndex));
      ob.layer = static_cast<int>(layer);
      if (Member(o, "expert")) {
        TENZRO_TRY(uint64_t expert, GetU64(o, "expert", ctx, kMaxIndex));
        ob.expert = static_cast<int>(expert);
      }
      TENZRO_TRY(ob.blob_hash, GetString(o, "blob", ctx));
      d.offers.push_back(std::move(ob));
    }
  }
  return d;
}

namespace {

// Validates `d` as a reader would (round trip through the JSON validator).
Result<std::string> CanonicalBody(const Declaration& d) {
  // Strings are checked before dump(), which throws on invalid UTF-8.
  std::vector<std::pair<std::string_view, std::string_view>> strings = {{"node_id", d.node_id}, {"model", d.model}};
  for (const auto& e : d.endpoints) {
    strings.push_back({"endpoint.kind", e.kind});
    strings.push_back({"endpoint.addr", e.address});
  }
  for (const auto& e : d.experts) {
    for (auto s : {&e.gate_format, &e.up_format, &e.down_format, &e.blob_hash}) strings.push_back({"expert", *s});
    if (e.layer < 0 || e.expert < 0) return Error::InvalidArgument("declaration: negative layer/expert");
  }
  for (const auto& g : d.gates) {
    strings.push_back({"gate.blob", g.blob_hash});
    if (g.layer < 0) return Error::InvalidArgument("declaration: negative gate layer");
  }
  for (const auto& o : d.offers) {
    strings.push_back({"offer.blob", o.blob_hash});
    if (o.layer < 0 || o.expert < -1) return Error::InvalidArgument("declaration: negative offer layer/expert");
  }
  for (const auto& [field, s] : strings) {
    if (s.size() > kMaxShortString || !PrintableAscii(s)) {
      return Error::InvalidArgument("declaration: {} too long or not printable ASCII", field);
    }
  }
  json body = DeclarationToJson(d);
  auto check = DeclarationFromJson(body);
  if (!check) return Error(ErrorCode::kInvalidArgument, check.error().message());
  return body.dump();
}

}  // namespace

Result<std::string> EncodeRecord(const Declaration& d, const identity::Identity& id) {
  if (d.node_id != id.node_id()) {
    return Error::InvalidArgument("declaration: node_id {} is not the signing identity {}", d.node_id, id.node_id());
  }
  TENZRO_TRY(std::string body, CanonicalBody(d));
  if (RecordBytes(body) > kMaxRecordBytes) {
    return Error::ResourceExhausted("declaration: record of {} bytes exceeds {} (split it into parts)",
                                    RecordBytes(body), kMaxRecordBytes);
  }
  return identity::SealEnvelope(kDeclarationDomain, body, id);
}

Result<Declaration> DecodeRecord(std::string_view record) {
  TENZRO_TRY(json body, identity::OpenEnvelope(kDeclarationDomain, record, kMaxRecordBytes, "declaration record"));
  return DeclarationFromJson(body);
}

Result<std::vector<Declaration>> Split(const Declaration& d, size_t max_record_bytes) {
  max_record_bytes = std::min(max_record_bytes, kMaxRecordBytes);
  Declaration base = d;
  base.experts.clear();
  base.gates.clear();
  base.offers.clear();
  base.part = (1 << 16) - 1;  // widest part numbers, so the estimate is an upper bound
  base.parts = 1 << 16;
  TENZRO_TRY(std::string base_body, CanonicalBody(base));
  const size_t base_bytes = RecordBytes(base_body);
  // Each entry adds its escaped text plus a comma.
  auto entry_bytes = [](const json& e) { return json(e.dump()).dump().size() - 2 + 1; };

  std::vector<Declaration> parts;
  Declaration cur = base;
  size_t cur_bytes = base_bytes;
  auto flush = [&]() {
    parts.push_back(std::move(cur));
    cur = base;
    cur_bytes = base_bytes;
  };
  for (const auto& e : d.experts) {
    size_t n = entry_bytes(ExpertJson(e));
    if (base_bytes + n > max_record_bytes) return Error::ResourceExhausted("declaration: one expert entry exceeds the record limit");
    if (cur_bytes + n > max_record_bytes) flush();
    cur.experts.push_back(e);
    cur_bytes += n;
  }
  for (const auto& g : d.gates) {
    size_t n = entry_bytes(GateJson(g));
    if (base_bytes + n > max_record_bytes) return Error::ResourceExhausted("declaration: one gate entry exceeds the record limit");
    if (cur_bytes + n > max_record_bytes) flush();
    cur.gates.push_back(g);
    cur_bytes += n;
  }
  for (const auto& o : d.offers) {
    size_t n = entry_bytes(OfferJson(o)) + 12;  // + the "offers" member of the first offer in a part
    if (base_bytes + n > max_record_bytes) return Error::ResourceExhausted("declaration: one offer entry exceeds the record limit");
    if (cur_bytes + n > max_record_bytes) flush();
    cur.offers.push_back(o);
    cur_bytes += n;
  }
  if (parts.empty() || !cur.experts.empty() || !cur.gates.empty() || !cur.offers.empty()) flush();
  if (parts.size() > (1u << 16)) return Error::ResourceExhausted("declaration: more than 65536 parts");
  for (size_t i = 0; i < parts.size(); ++i) {
    parts[i].part = static_cast<uint32_t>(i);
    parts[i].parts = static_cast<uint32_t>(parts.size());
  }
  return parts;
}

}  // namespace tenzro::swarm
