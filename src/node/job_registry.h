// tenzro node: background jobs that survive in DATA_DIR/jobs/.
//
// A job is a function run on the registry's own worker pool (never the event
// loop) with a JobContext for progress reports. Its record (id, kind, state,
// progress, timestamps, params, result, error) is kept in memory and written
// atomically to DIR/<id>.json on every state change (progress at most once a
// second), so `GET /v1/jobs/<id>` and a restarted node see the same thing.
// Record format: docs/formats/admin-api.md ("Job object").
//
// Restart semantics (Recover): a job found queued or running was interrupted.
// If its kind registered a resume hook, the hook may return a function to run
// it again (state back to queued); otherwise it is marked failed with
// "node restarted while the job was running". Done/failed jobs are listed as
// they were.
//
// Thread-safety: all methods are thread-safe. Register resume hooks before
// Recover().
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "core/thread_pool.h"

namespace tenzro::node {

enum class JobState : uint8_t { kQueued, kRunning, kDone, kFailed };
// "queued", "running", "done", "failed".
std::string_view JobStateName(JobState s);

inline constexpr std::string_view kRestartMessage = "node restarted while the job was running";

struct JobInfo {
  std::string id;  // 16 lower-case hex characters
  std::string kind;
  JobState state = JobState::kQueued;
  uint64_t progress_done = 0;
  uint64_t progress_total = 0;
  std::string progress_message;
  int64_t created_ms = 0;  // unix time, milliseconds
  int64_t updated_ms = 0;
  nlohmann::json params;   // as submitted
  nlohmann::json result;   // null until done
  std::optional<Error> error;  // set when failed

  bool finished() const { return state == JobState::kDone || state == JobState::kFailed; }
  nlohmann::json ToJson() const;
  // kCorruption naming `origin` and the field for a malformed record.
  static Result<JobInfo> FromJson(const nlohmann::json& j, std::string_view origin);
};

class JobRegistry;

// Handed to a running job. Owned by the registry; valid during the call.
class JobContext {
 public:
  const std::string& id() const { return id_; }
  const nlohmann::json& params() const { return params_; }
  // Records progress (thread-safe, cheap: persisted at most once a second).
  void SetProgress(uint64_t done, uint64_t total, std::string message = {});
  // True once the node is shutting down: a long job should return soon (its
  // error is recorded as usual).
  bool cancelled() const;

 private:
  friend class JobRegistry;
  JobContext(JobRegistry* r, std::string id, nlohmann::json params)
      : registry_(r), id_(std::move(id)), params_(std::move(params)) {}
  JobRegistry* registry_;
  std::string id_;
  nlohmann::json params_;
};

// The work of a job: its JSON result, or the error that failed it.
using JobFn = std::function<Result<nlohmann::json>(JobContext&)>;
// Given an interrupted job's record, returns the function that resumes it, or
// an error (the job is then marked failed with that error's message).
using ResumeHook = std::function<Result<JobFn>(const JobInfo&)>;

class JobRegistry {
 public:
  // Creates `dir` if needed and starts `threads` job workers. Does not read
  // existing records: call Recover() (after registering resume hooks).
  static Result<std::unique_ptr<JobRegistry>> Open(std::string dir, size_t threads);
  // Shutdown().
  ~JobRegistry();

  void SetResumeHook(std::string kind, ResumeHook hook);

  // Loads DIR/*.json and applies the restart semantics above. Unreadable
  // records are skipped with a warning. Call once.
  Result<void> Recover();

  // Records a queued job (written to disk before returning) and schedules
  // `fn`. Returns the job id. kUnavailable after Shutdown(); kIo if the
  // record cannot be written.
  Result<std::string> Submit(std::string kind, nlohmann::json params, JobFn fn);

  // kNotFound for an unknown id.
  Result<JobInfo> Get(const std::string& id) const;
  // Every job, oldest first.
  std::vector<JobInfo> List() const;
  // Blocks until the job finished or `timeout` elapsed; returns its record
  // either way (check finished()). kNotFound for an unknown id.
  Result<JobInfo> Wait(const std::string& id, std::chrono::milliseconds timeout) const;

  // Marks every context cancelled, drops jobs that have not started (they
  // stay queued on disk, see Recover) and waits for running ones. Idempotent.
  void Shutdown();

  const std::string& dir() const { return dir_; }

 private:
  friend class JobContext;
  JobRegistry(std::string dir, size_t threads);
  void Schedule(const std::string& id, JobFn fn);
  void RunJob(const std::string& id, JobFn& fn);
  // Writes the current record of `id` (latest state wins).
  Result<void> Persist(const std::string& id);
  void UpdateProgress(const std::string& id, uint64_t done, uint64_t total, std::string message);

  struct Entry {
    JobInfo info;
    int64_t persisted_ms = 0;
  };

  std::string dir_;
  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  std::map<std::string, Entry> jobs_;             // guarded by mu_
  std::map<std::string, ResumeHook> hooks_;       // guarded by mu_
  std::mutex io_mu_;                              // serialises record writes
  std::atomic<bool> cancelled_{false};
  ThreadPool pool_;
};

}  // namespace tenzro::node
