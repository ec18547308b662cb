// Writes the binary seed inputs of expert_loader_fuzz, bao_fuzz,
// iroh_request_fuzz and manifest_fuzz into <dir>/<target>/ (the committed corpora under
// tests/fuzz/corpus were made with `fuzz_seeds tests/fuzz/corpus`). Small,
// valid inputs built with the project's own encoders, so the fuzzers start
// from the accepted paths. JSON seeds are written by hand.
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "blob/bao_tree.h"
#include "blob/encoder.h"
#include "format/expert_gguf.h"
#include "quant/types.h"
#include "blob/iroh_request.h"
#include "identity/identity.h"
#include "manifest/manifest.h"
#include "quic/iroh_blobs.h"
#include "bao_fuzz.h"

using namespace tenzro;
namespace fs = std::filesystem;

namespace {

fs::path g_dir;

void Write(const std::string& target, const std::string& name, ByteSpan bytes) {
  fs::create_directories(g_dir / target);
  std::ofstream f(g_dir / target / name, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) {
    std::fprintf(stderr, "cannot write %s/%s\n", target.c_str(), name.c_str());
    std::exit(1);
  }
}

// `rows` rows of `row_len` values quantized to `type` (deterministic values).
Bytes Rows(quant::GgmlType type, int64_t row_len, int64_t rows, int seed) {
  std::vector<float> v(row_len * rows);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.05f * std::sin(0.37f * static_cast<float>(i) + seed);
  Bytes out(*quant::RowBytes(type, row_len) * rows);
  if (!quant::QuantizeRows(type, v.data(), out.data(), rows, row_len)) std::exit(1);
  return out;
}

void ExpertSeeds() {
  using quant::GgmlType;
  struct Shape {
    const char* name;
    GgmlType gate_up, down;
    int64_t n_embd, n_ff;
  };
  for (const Shape& s : {Shape{"expert_f32", GgmlType::F32, GgmlType::F32, 16, 32},
                         Shape{"expert_f16_q8_0", GgmlType::F16, GgmlType::Q8_0, 32, 64},
                         Shape{"expert_q4_k_q8_0", GgmlType::Q4_K, GgmlType::Q8_0, 256, 32}}) {
    Bytes g = Rows(s.gate_up, s.n_embd, s.n_ff, 1), u = Rows(s.gate_up, s.n_embd, s.n_ff, 2),
          d = Rows(s.down, s.n_ff, s.n_embd, 3);
    format::ExpertTensors t;
    t.proj[0] = {s.gate_up, s.n_embd, s.n_ff, ByteSpan(g)};
    t.proj[1] = {s.gate_up, s.n_embd, s.n_ff, ByteSpan(u)};
    t.proj[2] = {s.down, s.n_ff, s.n_embd, ByteSpan(d)};
    auto img = format::EncodeExpertGguf({"qwen35moe", "fuzz-model", 1, 3, "custom"}, t);
    if (!img) std::exit(1);
    Write("expert_loader_fuzz", std::string(s.name) + ".gguf", ByteSpan(*img));
  }
  // A gate: F32 router over 4 experts, selection bias, gated F32 shared expert.
  const int64_t n_embd = 16, n_exp = 4, n_ff = 16;
  Bytes r = Rows(GgmlType::F32, n_embd, n_exp, 4), b = Rows(GgmlType::F32, n_exp, 1, 5),
        sg = Rows(GgmlType::F32, n_embd, 1, 6), g = Rows(GgmlType::F32, n_embd, n_ff, 7),
        u = Rows(GgmlType::F32, n_embd, n_ff, 8), d = Rows(GgmlType::F32, n_ff, n_embd, 9);
  format::GateTensors gt;
  gt.router = {GgmlType::F32, n_embd, n_exp, ByteSpan(r)};
  gt.bias = format::Matrix{GgmlType::F32, n_exp, 1, ByteSpan(b)};
  format::ExpertTensors sh;
  sh.proj[0] = {GgmlType::F32, n_embd, n_ff, ByteSpan(g)};
  sh.proj[1] = {GgmlType::F32, n_embd, n_ff, ByteSpan(u)};
  sh.proj[2] = {GgmlType::F32, n_ff, n_embd, ByteSpan(d)};
  gt.shared = sh;
  gt.shared_gate = format::Matrix{GgmlType::F32, n_embd, 1, ByteSpan(sg)};
  gt.n_expert_used = 2;
  auto img = format::EncodeGateGguf({"qwen35moe", "fuzz-model", 1, 0, "f32"}, gt);
  if (!img) std::exit(1);
  Write("expert_loader_fuzz", "gate_shared.gguf", ByteSpan(*img));
  format::GateTensors bare;
  bare.router = gt.router;
  img = format::EncodeGateGguf({"qwen35moe", "fuzz-model", 0, 0, "f32"}, bare);
  if (!img) std::exit(1);
  Write("expert_loader_fuzz", "gate_router_only.gguf", ByteSpan(*img));
}

void BaoSeeds() {
  const Bytes blob_bytes = fuzz::BaoBlob();
  Bytes outboard;
  const blob::Blake3Hash root = blob::ComputeOutboard(ByteSpan(blob_bytes), &outboard);
  Bytes empty_outboard;
  const blob::Blake3Hash empty_root = blob::ComputeOutboard(ByteSpan(), &empty_outboard);
  const uint8_t pieces[] = {7, 2, 5, 0, 3, 6, 1, 4};
  for (int i = 0; i < fuzz::kBaoRanges; ++i) {
    auto s = blob::EncodeStream(ByteSpan(blob_bytes), ByteSpan(outboard), root, fuzz::BaoRanges(i));
    if (!s) std::exit(1);
    Bytes in = {static_cast<uint8_t>(1 | (i << 2)), pieces[i]};
    in.insert(in.end(), s->begin(), s->end());
    Write("bao_fuzz", "blob_ranges" + std::to_string(i), ByteSpan(in));
  }
  for (int i : {0, 1}) {
    auto s = blob::EncodeStream(ByteSpan(), ByteSpan(empty_outboard), empty_root, fuzz::BaoRanges(i));
    if (!s) std::exit(1);
    Bytes in = {static_cast<uint8_t>(0 | (i << 2)), 0};
    in.insert(in.end(), s->begin(), s->end());
    Write("bao_fuzz", "empty_ranges" + std::to_string(i), ByteSpan(in));
  }
}

void IrohSeeds() {
  blob::Blake3Hash h;
  for (size_t i = 0; i < h.bytes.size(); ++i) h.bytes[i] = static_cast<uint8_t>(i * 7 + 1);
  const blob::ChunkRanges sets[] = {blob::ChunkRanges::All(), blob::ChunkRanges::LastChunk(),
                                    blob::ChunkRanges::Range(3, 9), blob::ChunkRanges::Range(0, 1).Union(
                                                                        blob::ChunkRanges::From(1000000))};
  int n = 0;
  for (const auto& r : sets) {
    Bytes req = blob::EncodeGetRequest(h, r);
    Write("iroh_request_fuzz", "get" + std::to_string(n++), ByteSpan(req));
  }
  for (const char* text : {"0..4,10..12,100..", "all", ""}) {
    std::string_view t(text);
    Write("iroh_request_fuzz", "text" + std::to_string(n++),
          ByteSpan(reinterpret_cast<const uint8_t*>(t.data()), t.size()));
  }
}

}  // namespace

// A manifest signed by a fixed key (seed 7,7,...), and its body alone.
void ManifestSeeds() {
  std::array<uint8_t, identity::kSeedBytes> seed;
  seed.fill(7);
  identity::Identity id = identity::Identity::FromSeed(seed);
  manifest::Manifest m;
  m.model = "tiny-qwen35moe";
  m.experts = {{0, 1, "q4_K/q4_K/q6_K", std::string(64, 'a'), 221792}, {1, 7, "q8_0/q8_0/q8_0", std::string(64, 'b'), 9}};
  m.gates = {{0, std::string(64, 'c'), 231168}};
  m.spines = {{std::string(64, 'd'), 1 << 20, "none"}};
  std::string sealed = manifest::SealManifest(m, id);
  Write("manifest_fuzz", "manifest.json", ByteSpan(reinterpret_cast<const uint8_t*>(sealed.data()), sealed.size()));
  m.publisher = id.node_id();
  std::string body = manifest::ManifestBody(m);
  Write("manifest_fuzz", "body.json", ByteSpan(reinterpret_cast<const uint8_t*>(body.data()), body.size()));
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_seeds <corpus dir>\n");
    return 2;
  }
  g_dir = argv[1];
  ExpertSeeds();
  BaoSeeds();
  IrohSeeds();
  ManifestSeeds();
  return 0;
}
