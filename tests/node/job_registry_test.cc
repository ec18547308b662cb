#include "node/job_registry.h"

#include <gtest/gtest.h>

#include <thread>

#include "core/file.h"
#include "testutil/testutil.h"

namespace tenzro::node {
namespace {

using std::chrono::seconds;
using tenzro::testing::TempDir;

std::unique_ptr<JobRegistry> Open(const std::string& dir) {
  auto r = JobRegistry::Open(dir, 2);
  EXPECT_TRUE(r) << r.error().ToString();
  return std::move(*r);
}

nlohmann::json ReadRecord(const std::string& path) {
  auto text = ReadTextFile(path);
  EXPECT_TRUE(text) << path;
  return nlohmann::json::parse(*text);
}

TEST(JobRegistryTest, DoneAndFailedJobsArePersisted) {
  TempDir tmp;
  std::string dir = tmp.Join("jobs");
  auto reg = Open(dir);
  ASSERT_TRUE(reg->Recover());
  auto ok = reg->Submit("test.ok", {{"n", 3}}, [](JobContext& ctx) -> Result<nlohmann::json> {
    ctx.SetProgress(3, 3, "all three");
    return nlohmann::json{{"sum", ctx.params()["n"].get<int>() * 2}};
  });
  ASSERT_TRUE(ok);
  auto bad = reg->Submit("test.bad", nlohmann::json::object(),
                         [](JobContext&) -> Result<nlohmann::json> { return Error::Corruption("slice 7 hash mismatch"); });
  ASSERT_TRUE(bad);
  EXPECT_NE(*ok, *bad);
  EXPECT_EQ(ok->size(), 16u);

  auto done = reg->Wait(*ok, seconds(10));
  ASSERT_TRUE(done);
  EXPECT_EQ(done->state, JobState::kDone);
  EXPECT_EQ(done->result["sum"], 6);
  EXPECT_EQ(done->progress_done, 3u);
  EXPECT_EQ(done->progress_message, "all three");
  auto failed = reg->Wait(*bad, seconds(10));
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->state, JobState::kFailed);
  ASSERT_TRUE(failed->error.has_value());
  EXPECT_EQ(failed->error->code(), ErrorCode::kCorruption);

  nlohmann::json rec = ReadRecord(dir + "/" + *ok + ".json");
  EXPECT_EQ(rec["state"], "done");
  EXPECT_EQ(rec["result"]["sum"], 6);
  EXPECT_EQ(ReadRecord(dir + "/" + *bad + ".json")["error"]["code"], "corruption");
  EXPECT_EQ(reg->List().size(), 2u);
  EXPECT_EQ(reg->Get("0000000000000000").error().code(), ErrorCode::kNotFound);

  // A new registry over the same directory lists them as they were.
  reg.reset();
  auto again = Open(dir);
  ASSERT_TRUE(again->Recover());
  auto j1 = again->Get(*ok);
  ASSERT_TRUE(j1);
  EXPECT_EQ(j1->state, JobState::kDone);
  EXPECT_EQ(j1->result["sum"], 6);
  EXPECT_EQ(j1->params["n"], 3);
  auto j2 = again->Get(*bad);
  ASSERT_TRUE(j2);
  EXPECT_EQ(j2->state, JobState::kFailed);
  EXPECT_EQ(j2->error->message(), "slice 7 hash mismatch");
}

// Writes a record as a crashed node would have left it.
void WriteInterrupted(const std::string& dir, const std::string& id, const std::string& kind, const std::string& state) {
  JobInfo info;
  info.id = id;
  info.kind = kind;
  info.state = state == "running" ? JobState::kRunning : JobState::kQueued;
  info.params = {{"x", 1}};
  info.created_ms = info.updated_ms = 1000;
  ASSERT_TRUE(MakeDirs(dir));
  ASSERT_TRUE(WriteFileAtomic(dir + "/" + id + ".json", std::string_view(info.ToJson().dump())));
}

TEST(JobRegistryTest, InterruptedJobsFailOnRestartUnlessResumable) {
  TempDir tmp;
  std::string dir = tmp.Join("jobs");
  WriteInterrupted(dir, "00000000000000a1", "test.plain", "running");
  WriteInterrupted(dir, "00000000000000a2", "test.plain", "queued");
  WriteInterrupted(dir, "00000000000000a3", "test.resumable", "running");
  ASSERT_TRUE(WriteFileAtomic(dir + "/00000000000000ff.json", std::string_view("{not json")));
  ASSERT_TRUE(WriteFileAtomic(dir + "/notes.txt", std::string_view("ignored")));

  auto reg = Open(dir);
  int resumed_params = 0;
  reg->SetResumeHook("test.resumable", [&](const JobInfo& info) -> Result<JobFn> {
    resumed_params = info.params["x"];
    return JobFn([](JobContext&) -> Result<nlohmann::json> { return nlohmann::json{{"resumed", true}}; });
  });
  ASSERT_TRUE(reg->Recover());
  for (const char* id : {"00000000000000a1", "00000000000000a2"}) {
    auto j = reg->Get(id);
    ASSERT_TRUE(j) << id;
    EXPECT_EQ(j->state, JobState::kFailed) << id;
    ASSERT_TRUE(j->error);
    EXPECT_EQ(j->error->message(), kRestartMessage);
    EXPECT_EQ(ReadRecord(dir + "/" + std::string(id) + ".json")["state"], "failed");
  }
  auto r = reg->Wait("00000000000000a3", seconds(10));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, JobState::kDone);
  EXPECT_EQ(r->result["resumed"], true);
  EXPECT_EQ(resumed_params, 1);
  EXPECT_EQ(reg->List().size(), 3u);  // the corrupt record is skipped
}

TEST(JobRegistryTest, ThrowingJobFailsAndShutdownCancels) {
  TempDir tmp;
  auto reg = Open(tmp.Join("jobs"));
  ASSERT_TRUE(reg->Recover());
  auto t = reg->Submit("test.throw", nullptr, [](JobContext&) -> Result<nlohmann::json> {
    throw std::runtime_error("oops");
  });
  ASSERT_TRUE(t);
  auto j = reg->Wait(*t, seconds(10));
  ASSERT_TRUE(j);
  EXPECT_EQ(j->state, JobState::kFailed);
  EXPECT_NE(j->error->message().find("oops"), std::string::npos);

  std::atomic<bool> started{false};
  auto slow = reg->Submit("test.slow", nullptr, [&](JobContext& ctx) -> Result<nlohmann::json> {
    started = true;
    for (int i = 0; i < 1000 && !ctx.cancelled(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (ctx.cancelled()) return Error::Unavailable("cancelled");
    return nlohmann::json();
  });
  ASSERT_TRUE(slow);
  ASSERT_TRUE(tenzro::testing::WaitFor([&] { return started.load(); }, seconds(10)));
  reg->Shutdown();
  auto s = reg->Get(*slow);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->state, JobState::kFailed);
  EXPECT_FALSE(reg->Submit("test.late", nullptr, [](JobContext&) -> Result<nlohmann::json> { return nullptr; }));
}

TEST(JobInfoTest, FromJsonNamesBadFields) {
  auto r = JobInfo::FromJson(nlohmann::json{{"id", "xyz"}}, "f.json");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kCorruption);
  EXPECT_NE(r.error().message().find("'id'"), std::string::npos);
  auto s = JobInfo::FromJson(nlohmann::json{{"id", "00000000000000a1"}, {"kind", "k"}, {"state", "weird"}}, "f.json");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message().find("'state'"), std::string::npos);
  EXPECT_FALSE(JobInfo::FromJson(nlohmann::json::array(), "f.json"));
}

}  // namespace
}  // namespace tenzro::node
