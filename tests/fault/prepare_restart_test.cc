// A node SIGKILLed in the middle of a prepare job, then restarted on the
// same data dir (docs/reliability.md): the persisted job is explicit about
// what happened (resumed to "done", or "failed" with the restart message),
// no partial blob is visible under a blob's name, every stored blob
// verifies, the node serves, and a new prepare completes.
#include <signal.h>

#include "fault/fault_util.h"
#include "node/job_registry.h"

namespace tenzro::fault {
namespace {

json Job(const RunningNode& n, const std::string& id) {
  Call c = AdminCall(n, "GET", "/v1/jobs/" + id);
  return c.ok() ? c.body : json();
}

// Stray files in a blob dir that are not leftovers of an interrupted writer.
// Leftovers are allowed after a SIGKILL: temp and staging files, and an
// outboard whose .data is missing (the store commits the outboard, then
// renames the data into place; a kill in between leaves the outboard alone).
// None is ever visible as a blob (List, Has and Get go by the .data name),
// and Open deletes them once stale. A .data under a hash name that does not
// verify is a problem.
std::string PartialBlobs(const std::string& blob_dir) {
  std::string problems;
  for (const std::string& p : {StoreProblems(blob_dir)}) {
    size_t start = 0;
    while (start < p.size()) {
      size_t end = p.find("; ", start);
      if (end == std::string::npos) end = p.size();
      const std::string item = p.substr(start, end - start);
      const std::string prefix = "stray file: ";
      bool orphan_outboard = false;
      if (item.rfind(prefix, 0) == 0 && item.size() > prefix.size() + 6 &&
          item.compare(item.size() - 6, 6, ".obao4") == 0) {
        const std::string hex = item.substr(prefix.size(), item.size() - prefix.size() - 6);
        orphan_outboard = !std::filesystem::exists(blob_dir + "/" + hex + ".data");
      }
      if (item.find(".tmp.") == std::string::npos && item.find("staging-") == std::string::npos && !orphan_outboard)
        problems += item + "; ";
      start = end + 2;
    }
  }
  return problems;
}

TEST(PrepareRestartTest, KilledMidJobThenRestarted) {
  TempDir tmp;
  const std::string dir = tmp.Join("a");
  RunningNode a = StartNode(dir);
  ASSERT_TRUE(a.running());
  // The BF16 checkpoint quantized to q4_k_m: the slowest prepare the fixture has.
  auto add = a.Cli({"moe", "catalog-add", "--model", kModel, "--checkpoint", DataPath("moe/tiny-qwen35moe-BF16.gguf")});
  ASSERT_EQ(add.exit_code, 0) << add.err;

  // Start a job and SIGKILL the node as soon as it is seen running with
  // experts still to do (a few tries: the job is short).
  std::string id;
  json seen;
  bool killed_mid_job = false;
  for (int attempt = 0; attempt < 6 && !killed_mid_job; ++attempt) {
    if (!a.running()) {
      a = StartNode(dir);
      ASSERT_TRUE(a.running());
    }
    auto started = a.Cli({"moe", "prepare-experts", "--model-id", kModel, "--layer", std::to_string(attempt % 2),
                          "--quant", "q4_k_m", "--gate"});
    ASSERT_EQ(started.exit_code, 0) << started.err;
    id = json::parse(started.out)["job_id"];
    WaitFor([&] {
      seen = Job(a, id);
      if (seen.value("state", "") == "running" && seen["progress"].value("done", 0) >= 1 &&
          seen["progress"].value("done", 0) < seen["progress"].value("total", 0)) {
        a.proc->Signal(SIGKILL);
        killed_mid_job = true;
        return true;
      }
      return seen.value("state", "") == "done" || seen.value("state", "") == "failed";
    }, seconds(30));
  }
  ASSERT_TRUE(killed_mid_job) << "never caught the job running: " << seen.dump();
  a.proc->Wait(seconds(10));
  std::printf("[fault] prepare job %s killed at progress %s\n", id.c_str(), seen["progress"].dump().c_str());
  // Before the restart: what is on disk is consistent (temp files of the
  // interrupted writer aside), and the job record says it was running.
  EXPECT_EQ(PartialBlobs(dir + "/blobs"), "");
  auto record = json::parse(*ReadTextFile(dir + "/jobs/" + id + ".json"), nullptr, false);
  EXPECT_EQ(record.value("state", ""), "running") << record.dump();

  // Restart on the same data dir.
  RunningNode b = StartNode(dir);
  ASSERT_TRUE(b.running());
  json after;
  ASSERT_TRUE(WaitFor([&] {
    after = Job(b, id);
    const std::string st = after.value("state", "");
    return st == "done" || st == "failed";
  }, seconds(60))) << after.dump();
  std::printf("[fault] after restart the job is %s: %s\n", after.value("state", "").c_str(),
              after["state"] == "failed" ? after["error"].dump().c_str() : "resumed and completed");
  if (after["state"] == "failed") {
    EXPECT_NE(after["error"].dump().find(std::string(node::kRestartMessage)), std::string::npos) << after.dump();
  } else {
    // Resumed: every blob it names exists and verifies.
    auto store = blob::BlobStore::Open(dir + "/blobs");
    ASSERT_TRUE(store);
    for (const json& e : after["result"]["experts"]) {
      auto h = blob::Blake3Hash::FromHex(e["hash"].get<std::string>());
      ASSERT_TRUE(h);
      EXPECT_TRUE((*store)->Verify(*h)) << e.dump();
    }
  }
  EXPECT_EQ(PartialBlobs(dir + "/blobs"), "");
  EXPECT_TRUE(Healthy(b));
  // A new prepare completes.
  json job = b.CliJson({"moe", "prepare-experts", "--model-id", kModel, "--layer", "1", "--experts", "0-3", "--quant",
                        "q4_k_m", "--wait", "--json"});
  EXPECT_EQ(job.value("state", ""), "done") << job.dump();
  EXPECT_EQ(PartialBlobs(dir + "/blobs"), "");
  EXPECT_EQ(b.Stop(), 0) << b.proc->Log();
}

}  // namespace
}  // namespace tenzro::fault
