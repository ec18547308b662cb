// `tenzro blob ...`: the local content-addressed blob store in DATA_DIR/blobs
// (docs/formats/blob-store.md).
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "blob/blob_store.h"
#include "blob/blob_uri.h"
#include "cli/command.h"
#include "core/file.h"

namespace tenzro::cli {
namespace {

Result<std::unique_ptr<blob::BlobStore>> OpenStore(const Globals& g) {
  return blob::BlobStore::Open(DataDir(g) + "/blobs");
}

void RegisterBlob(CLI::App& root, Globals& g) {
  CLI::App* grp = Group(root, "blob");

  {
    auto* cmd = grp->add_subcommand("put", "Store a file; prints its tenzro://blob/ URI and size");
    auto file = std::make_shared<std::string>();
    auto json = std::make_shared<bool>(false);
    cmd->add_option("FILE", *file, "File to store")->required();
    cmd->add_flag("--json", *json, "Print {\"uri\",\"hash\",\"size\"} as JSON");
    cmd->footer("Example: tenzro blob put model.gguf --json");
    SetAction(cmd, g, [&g, file, json]() -> Result<void> {
      TENZRO_TRY(auto store, OpenStore(g));
      TENZRO_TRY(blob::BlobInfo info, store->PutFile(*file));
      std::string uri = blob::FormatBlobUri(info.hash);
      if (*json) {
        nlohmann::json j = {{"uri", uri}, {"hash", info.hash.ToHex()}, {"size", info.size}};
        fmt::print("{}\n", j.dump());
      } else {
        fmt::print("{} {}\n", uri, info.size);
      }
      return Ok();
    });
  }
  {
    auto* cmd = grp->add_subcommand("ls", "List stored blobs (URI and size)");
    auto json = std::make_shared<bool>(false);
    cmd->add_flag("--json", *json, "Print a JSON array of {\"uri\",\"hash\",\"size\"}");
    cmd->footer("Example: tenzro blob ls --json");
    SetAction(cmd, g, [&g, json]() -> Result<void> {
      TENZRO_TRY(auto store, OpenStore(g));
      TENZRO_TRY(auto list, store->List());
      if (*json) {
        nlohmann::json arr = nlohmann::json::array();
        for (const auto& b : list)
          arr.push_back({{"uri", blob::FormatBlobUri(b.hash)}, {"hash", b.hash.ToHex()}, {"size", b.size}});
        fmt::print("{}\n", arr.dump());
      } else {
        for (const auto& b : list) fmt::print("{} {}\n", blob::FormatBlobUri(b.hash), b.size);
      }
      return Ok();
    });
  }
  {
    auto* cmd = grp->add_subcommand("rm", "Remove a blob from the local store");
    auto what = std::make_shared<std::string>();
    cmd->add_option("BLOB", *what, "tenzro://blob/<hash> URI or 64-hex hash")->required();
    cmd->footer("Example: tenzro blob rm tenzro://blob/af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262");
    SetAction(cmd, g, [&g, what]() -> Result<void> {
      TENZRO_TRY(blob::Blake3Hash hash, blob::ParseHashOrUri(*what));
      TENZRO_TRY(auto store, OpenStore(g));
      return store->Remove(hash);
    });
  }
  {
    auto* cmd = grp->add_subcommand("verify", "Re-hash blobs and check their outboards (all when none given)");
    auto what = std::make_shared<std::vector<std::string>>();
    cmd->add_option("BLOB", *what, "URIs or hashes (default: every stored blob)");
    cmd->footer("Example: tenzro blob verify            # exits 4 if any blob is corrupt");
    SetAction(cmd, g, [&g, what]() -> Result<void> {
      TENZRO_TRY(auto store, OpenStore(g));
      std::vector<blob::Blake3Hash> hashes;
      if (what->empty()) {
        TENZRO_TRY(auto list, store->List());
        for (const auto& b : list) hashes.push_back(b.hash);
      } else {
        for (const auto& w : *what) {
          TENZRO_TRY(blob::Blake3Hash h, blob::ParseHashOrUri(w));
          hashes.push_back(h);
        }
      }
      std::optional<Error> first;
      int bad = 0;
      for (const auto& h : hashes) {
        auto r = store->Verify(h);
        if (r) {
          fmt::print("ok {}\n", blob::FormatBlobUri(h));
        } else {
          fmt::print("FAILED {}: {}\n", blob::FormatBlobUri(h), r.error().ToString());
          if (!first) first = r.error();
          ++bad;
        }
      }
      if (first) {
        if (bad == 1) return *first;
        return Error(first->code(), fmt::format("{} of {} blobs failed verification; first: {}", bad,
                                                hashes.size(), first->message()));
      }
      return Ok();
    });
  }
  {
    auto* cmd = grp->add_subcommand("cat", "Write a stored blob to stdout or a file");
    auto what = std::make_shared<std::string>();
    auto out = std::make_shared<std::string>();
    cmd->add_option("BLOB", *what, "tenzro://blob/<hash> URI or 64-hex hash")->required();
    cmd->add_option("-o,--output", *out, "Write to this file (atomically) instead of stdout");
    cmd->footer("Example: tenzro blob cat tenzro://blob/<hash> -o copy.bin");
    SetAction(cmd, g, [&g, what, out]() -> Result<void> {
      TENZRO_TRY(blob::Blake3Hash hash, blob::ParseHashOrUri(*what));
      TENZRO_TRY(auto store, OpenStore(g));
      TENZRO_TRY(blob::Blob b, store->Get(hash));
      if (!out->empty()) return WriteFileAtomic(*out, b.bytes());
      ByteSpan bytes = b.bytes();
      if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size())
        return Error::Io("writing {} bytes to stdout failed", bytes.size());
      std::fflush(stdout);
      return Ok();
    });
  }
}

}  // namespace

TENZRO_CLI_REGISTER(RegisterBlob);

}  // namespace tenzro::cli
