// tenzro blob get: fetch a blob from a peer, verified as it arrives, into the
// local store and optionally a file, through the transfer module's fetchers:
// HTTP from --from; else QUIC (iroh-blobs) when the URI names a provider
// (?node=<id>&addr=<ip:port>, docs/formats/quic.md); else HTTP from ?http=.
#include <chrono>

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "blob/blob_store.h"
#include "blob/blob_uri.h"
#include "cli/command.h"
#include "core/file.h"
#include "identity/identity.h"
#include "quic/quic_client.h"
#include "transfer/http_fetcher.h"
#include "transfer/quic_fetcher.h"

namespace tenzro::cli {
namespace {

struct GetArgs {
  std::string uri, from, out, ranges;
  bool json_out = false;
};

// The source a get reads from: --from (HTTP), else the QUIC provider the URI
// names (?node=&addr=), else the URI's http=; nullopt when none is named.
std::optional<transfer::BlobSource> SourceOf(const blob::BlobUri& uri, const GetArgs& a) {
  if (!a.from.empty()) return transfer::BlobSource{"http", a.from, ""};
  if (!uri.Param("node").empty() && !uri.Param("addr").empty())
    return transfer::BlobSource{"quic", uri.Param("addr"), uri.Param("node")};
  if (!uri.Param("http").empty()) return transfer::BlobSource{"http", uri.Param("http"), ""};
  return std::nullopt;
}

// The fetcher for `src`: HTTP, or QUIC over a throwaway identity (`client`
// keeps its endpoint).
Result<std::unique_ptr<transfer::BlobFetcher>> FetcherFor(const transfer::BlobSource& src,
                                                          std::unique_ptr<quic::QuicClient>& client) {
  if (src.kind == "http") return std::unique_ptr<transfer::BlobFetcher>(std::make_unique<transfer::HttpBlobFetcher>());
  TENZRO_TRY(client, quic::QuicClient::Start(identity::Identity::Generate()));
  return std::unique_ptr<transfer::BlobFetcher>(std::make_unique<transfer::QuicBlobFetcher>(client.get()));
}

Result<void> RunGet(Globals& g, const GetArgs& a) {
  TENZRO_TRY(blob::BlobUri uri, blob::ParseBlobUri(a.uri.rfind("tenzro://", 0) == 0 ? a.uri : "tenzro://blob/" + a.uri));
  TENZRO_TRY(auto store, blob::BlobStore::Open(DataDir(g) + "/blobs"));
  auto t0 = std::chrono::steady_clock::now();
  nlohmann::json report = {{"uri", blob::FormatBlobUri(uri.hash)}};
  const std::optional<transfer::BlobSource> src = SourceOf(uri, a);
  std::unique_ptr<quic::QuicClient> client;
  std::unique_ptr<transfer::BlobFetcher> fetcher;
  if (src) {
    TENZRO_TRY(fetcher, FetcherFor(*src, client));
    if (src->kind == "quic") {
      TENZRO_TRY(net::Endpoint addr, net::ParseEndpoint(src->address));
      report["peer"] = src->node_id.substr(0, 16) + "@" + addr.HostPort();
    } else {
      TENZRO_TRY(net::Endpoint peer, net::ParseEndpoint(src->address));
      report["peer"] = peer.HostPort();
    }
    report["transport"] = src->kind;
  }
  if (!a.ranges.empty() && a.ranges != "all") {
    if (!src) return Error::InvalidArgument("--ranges needs a peer: give --from URL");
    TENZRO_TRY(blob::ChunkRanges ranges, blob::ChunkRanges::Parse(a.ranges));
    std::unique_ptr<AtomicFileWriter> w;
    if (!a.out.empty()) {
      TENZRO_TRY(w, AtomicFileWriter::Create(a.out));
    }
    uint64_t got = 0;
    TENZRO_TRY(auto size, fetcher->FetchRanges(uri.hash, ranges, *src, [&](uint64_t, ByteSpan data) -> Result<void> {
      got += data.size();
      return w ? w->Append(data) : Ok();
    }));
    if (w) TENZRO_CHECK_OK(w->Commit());
    report["verified_bytes"] = got;
    report["ranges"] = ranges.ToString();
    if (size) report["size"] = *size;
  } else {
    blob::BlobInfo info;
    if (src) {
      TENZRO_TRY(info, fetcher->Fetch(*store, uri.hash, *src));
    } else {
      auto have = store->Get(uri.hash);
      if (!have)
        return Error::NotFound("blob {} is not in {} and no peer was given: use --from URL", uri.hash.ToHex(),
                               store->dir());
      info = {uri.hash, have->size};
    }
    report["size"] = info.size;
    if (!a.out.empty()) {
      TENZRO_TRY(blob::Blob b, store->Get(uri.hash));
      TENZRO_CHECK_OK(WriteFileAtomic(a.out, b.bytes()));
      report["output"] = a.out;
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  report["seconds"] = secs;
  if (a.json_out) {
    fmt::print("{}\n", report.dump(2));
  } else {
    uint64_t n = report.value("size", report.value("verified_bytes", 0ull));
    fmt::print("{}  {} bytes verified{}  {:.1f} ms\n", report["uri"].get<std::string>(), n,
               report.contains("peer") ? " from " + report["peer"].get<std::string>() : std::string(" (local)"),
               secs * 1e3);
  }
  return Ok();
}

void RegisterBlobGet(CLI::App& root, Globals& g) {
  CLI::App* blob = Group(root, "blob");
  auto a = std::make_shared<GetArgs>();
  CLI::App* c = blob->add_subcommand("get", "Fetch a blob from a peer (verified streaming) into the local store");
  c->add_option("uri", a->uri, "tenzro://blob/<hash>[?node=<id>&addr=<ip:port>] (or the bare hash)")->required();
  c->add_option("--from", a->from, "Peer URL (http://host:port of its public listener)");
  c->add_option("-o,--output", a->out, "Also write the blob (or the verified ranges) to this file");
  c->add_option("--ranges", a->ranges, "Chunk ranges (1 KiB chunks): all (default), last, 0..4,10..");
  c->add_flag("--json", a->json_out, "Print a JSON report");
  c->footer("Example: tenzro blob get tenzro://blob/<hash> --from http://127.0.0.1:7070 -o expert.gguf\n"
            "Over QUIC (iroh-blobs): tenzro blob get 'tenzro://blob/<hash>?node=<node id>&addr=127.0.0.1:4433'");
  SetAction(c, g, [&g, a] { return RunGet(g, *a); });
}

}  // namespace

TENZRO_CLI_REGISTER(RegisterBlobGet);

}  // namespace tenzro::cli
