// Multi-process: `tenzro moe prepare-dense` runs as a persisted job on a real
// node and publishes the spine blob of the tiny fixture; a repeat publishes
// the same hash; bad requests fail with the documented exit codes.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "blob/blob_store.h"
#include "blob/blob_uri.h"
#include "format/checkpoint.h"
#include "testutil/node_process.h"

namespace tenzro::node {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using tenzro::testing::DataPath;
using tenzro::testing::RunningNode;
using tenzro::testing::RunTenzro;
using tenzro::testing::StartNode;
using tenzro::testing::TempDir;

TEST(PrepareDenseProcess, PublishesTheSpineAsAJob) {
  TempDir tmp;
  RunningNode a = StartNode(tmp.Join("a"));
  ASSERT_TRUE(a.proc->running());
  auto add = RunTenzro({"--data-dir", a.dir, "moe", "catalog-add", "--model", "tiny-qwen35moe", "--checkpoint",
                        DataPath("model/tiny-qwen35moe-tok-BF16.gguf")});
  ASSERT_EQ(add.exit_code, 0) << add.err;

  auto run = RunTenzro({"--data-dir", a.dir, "moe", "prepare-dense", "--model-id", "tiny-qwen35moe", "--wait", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  json job = json::parse(run.out, nullptr, false);
  ASSERT_EQ(job.value("state", ""), "done") << run.out;
  EXPECT_EQ(job.value("kind", ""), "moe.prepare-dense");
  const json& r = job["result"];
  EXPECT_EQ(r["dropped_tensors"], 6);
  EXPECT_EQ(r["quant"], "none");
  const std::string uri = r["uri"];
  auto hash = blob::ParseHashOrUri(uri);
  ASSERT_TRUE(hash) << uri;

  // The blob is in the node's store and opens as a checkpoint.
  auto store = blob::BlobStore::Open(a.dir + "/blobs");
  ASSERT_TRUE(store);
  ASSERT_TRUE((*store)->Has(*hash));
  EXPECT_TRUE((*store)->Verify(*hash));
  const std::string link = tmp.Join("spine.gguf");  // Checkpoint::Open goes by the extension
  std::filesystem::create_symlink((*store)->DataPath(*hash), link);
  auto ckpt = format::Checkpoint::Open(link);
  ASSERT_TRUE(ckpt) << ckpt.error().ToString();
  EXPECT_EQ((*ckpt)->GetInt("tenzro.spine"), 1);

  // Human output: the URI and the sizes; the same hash again (deterministic).
  auto again = RunTenzro({"--data-dir", a.dir, "moe", "prepare-dense", "--model-id", "tiny-qwen35moe", "--wait"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find(uri), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("routed experts"), std::string::npos) << again.out;

  // Errors: unknown model (3), bad quant (2).
  auto unknown = RunTenzro({"--data-dir", a.dir, "moe", "prepare-dense", "--model-id", "nope"});
  EXPECT_EQ(unknown.exit_code, 3) << unknown.err;
  auto badq = RunTenzro({"--data-dir", a.dir, "moe", "prepare-dense", "--model-id", "tiny-qwen35moe", "--quant",
                         "q4_k_m"});
  EXPECT_EQ(badq.exit_code, 2) << badq.err;

  a.proc->Signal(SIGTERM);
  EXPECT_EQ(a.proc->Wait(seconds(20)), 0) << a.proc->Log();
}

}  // namespace
}  // namespace tenzro::node
