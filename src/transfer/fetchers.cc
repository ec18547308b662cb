// BlobSource and the HTTP and QUIC fetchers (transfer/http_fetcher.h,
// transfer/quic_fetcher.h).
#include <fmt/format.h>

#include "net/url.h"
#include "transfer/http_fetcher.h"
#include "transfer/quic_fetcher.h"

namespace tenzro::transfer {
namespace {

Result<net::Endpoint> HttpPeer(const BlobSource& from) {
  if (from.kind != "http") return Error::InvalidArgument("source {} is not an http source", from.ToString());
  return net::ParseEndpoint(from.address);
}

Result<quic::PeerAddr> QuicPeer(const BlobSource& from) {
  if (from.kind != "quic") return Error::InvalidArgument("source {} is not a quic source", from.ToString());
  if (from.node_id.empty())
    return Error::InvalidArgument("quic source {} names no node id (the key its endpoint must present)",
                                  from.address);
  TENZRO_TRY(net::Endpoint addr, net::ParseEndpoint(from.address));
  return quic::PeerAddr{from.node_id, addr};
}

}  // namespace

std::string BlobSource::ToString() const {
  if (node_id.empty()) return kind + ":" + address;
  return fmt::format("{}:{}@{}", kind, node_id.substr(0, 12), address);
}

Result<blob::BlobInfo> HttpBlobFetcher::Fetch(blob::BlobStore& store, const blob::Blake3Hash& hash,
                                              const BlobSource& from) {
  TENZRO_TRY(net::Endpoint peer, HttpPeer(from));
  return FetchBlobHttp(store, hash, peer, options_);
}

Result<std::optional<uint64_t>> HttpBlobFetcher::FetchRanges(const blob::Blake3Hash& hash,
                                                             const blob::ChunkRanges& ranges, const BlobSource& from,
                                                             const blob::DataSink& sink) {
  TENZRO_TRY(net::Endpoint peer, HttpPeer(from));
  return FetchRangesHttp(hash, ranges, peer, sink, options_);
}

Result<blob::BlobInfo> QuicBlobFetcher::Fetch(blob::BlobStore& store, const blob::Blake3Hash& hash,
                                              const BlobSource& from) {
  TENZRO_TRY(quic::PeerAddr peer, QuicPeer(from));
  return quic::FetchBlobQuic(*client_, peer, store, hash, options_);
}

Result<std::optional<uint64_t>> QuicBlobFetcher::FetchRanges(const blob::Blake3Hash& hash,
                                                             const blob::ChunkRanges& ranges, const BlobSource& from,
                                                             const blob::DataSink& sink) {
  TENZRO_TRY(quic::PeerAddr peer, QuicPeer(from));
  return quic::FetchRangesQuic(*client_, peer, hash, ranges, sink, options_);
}

}  // namespace tenzro::transfer
