#include "node/job_registry.h"

#include <dirent.h>
#include <sodium.h>

#include <algorithm>

#include <spdlog/spdlog.h>

#include "core/bytes.h"
#include "core/file.h"

namespace tenzro::node {

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string NewJobId() {
  uint8_t b[8];
  randombytes_buf(b, sizeof b);
  return ToHex(ByteSpan(b, sizeof b));
}

bool IsJobId(std::string_view s) {
  return s.size() == 16 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

std::string_view JobStateName(JobState s) {
  switch (s) {
    case JobState::kQueued: return "queued";
    case JobState::kRunning: return "running";
    case JobState::kDone: return "done";
    case JobState::kFailed: return "failed";
  }
  return "unknown";
}

nlohmann::json JobInfo::ToJson() const {
  nlohmann::json j = {
      {"version", 1},
      {"id", id},
      {"kind", kind},
      {"state", std::string(JobStateName(state))},
      {"progress", {{"done", progress_done}, {"total", progress_total}, {"message", progress_message}}},
      {"created_at_ms", created_ms},
      {"updated_at_ms", updated_ms},
      {"params", params},
      {"result", result},
      {"error", nullptr},
  };
  if (error) j["error"] = {{"code", std::string(ErrorCodeName(error->code()))}, {"message", error->message()}};
  return j;
}

Result<JobInfo> JobInfo::FromJson(const nlohmann::json& j, std::string_view origin) {
  auto bad = [&](std::string_view field) { return Error::Corruption("{}: job field '{}' is missing or malformed", origin, field); };
  if (!j.is_object()) return Error::Corruption("{}: job record is not a JSON object", origin);
  JobInfo info;
  try {
    if (!j.contains("id") || !j["id"].is_string() || !IsJobId(j["id"].get<std::string>())) return bad("id");
    info.id = j["id"];
    if (!j.contains("kind") || !j["kind"].is_string()) return bad("kind");
    info.kind = j["kind"];
    std::string state = j.value("state", "");
    if (state == "queued") info.state = JobState::kQueued;
    else if (state == "running") info.state = JobState::kRunning;
    else if (state == "done") info.state = JobState::kDone;
    else if (state == "failed") info.state = JobState::kFailed;
    else return bad("state");
    if (j.contains("progress")) {
      const auto& p = j["progress"];
      if (!p.is_object()) return bad("progress");
      info.progress_done = p.value("done", uint64_t{0});
      info.progress_total = p.value("total", uint64_t{0});
      info.progress_message = p.value("message", "");
    }
    info.created_ms = j.value("created_at_ms", int64_t{0});
    info.updated_ms = j.value("updated_at_ms", int64_t{0});
    info.params = j.value("params", nlohmann::json());
    info.result = j.value("result", nlohmann::json());
    if (j.contains("error") && j["error"].is_object()) {
      std::string code = j["error"].value("code", "internal");
      ErrorCode c = ErrorCode::kInternal;
      for (int i = 1; i <= static_cast<int>(ErrorCode::kInternal); ++i)
        if (ErrorCodeName(static_cast<ErrorCode>(i)) == code) c = static_cast<ErrorCode>(i);
      info.error = Error(c, j["error"].value("message", ""));
    }
  } catch (const nlohmann::json::exception& e) {
    return Error::Corruption("{}: malformed job record: {}", origin, e.what());
  }
  return info;
}

void JobContext::SetProgress(uint64_t done, uint64_t total, std::string message) {
  registry_->UpdateProgress(id_, done, total, std::move(message));
}

bool JobContext::cancelled() const { return registry_->cancelled_.load(); }

JobRegistry::JobRegistry(std::string dir, size_t threads) : dir_(std::move(dir)), pool_(threads, "job") {}

JobRegistry::~JobRegistry() { Shutdown(); }

Result<std::unique_ptr<JobRegistry>> JobRegistry::Open(std::string dir, size_t threads) {
  if (sodium_init() < 0) return Error::Internal("libsodium failed to initialise");
  TENZRO_CHECK_OK(MakeDirs(dir, 0700));
  return std::unique_ptr<JobRegistry>(new JobRegistry(std::move(dir), threads));
}

void JobRegistry::SetResumeHook(std::string kind, ResumeHook hook) {
  std::lock_guard<std::mutex> lock(mu_);
  hooks_[std::move(kind)] = std::move(hook);
}

Result<void> JobRegistry::Persist(const std::string& id) {
  std::lock_guard<std::mutex> io(io_mu_);
  std::string text;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return Error::NotFound("job {} not found", id);
    it->second.persisted_ms = NowMs();
    text = it->second.info.ToJson().dump(2) + "\n";
  }
  return WriteFileAtomic(dir_ + "/" + id + ".json", std::string_view(text));
}

Result<void> JobRegistry::Recover() {
  DIR* d = ::opendir(dir_.c_str());
  if (!d) return Error::FromErrno(errno, "open job directory " + dir_);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.size() == 21 && name.ends_with(".json") && IsJobId(name.substr(0, 16))) names.push_back(name);
  }
  ::closedir(d);
  std::vector<std::pair<std::string, JobFn>> resumed;
  std::vector<std::string> rewrite;
  for (const std::string& name : names) {
    std::string path = dir_ + "/" + name;
    auto text = ReadTextFile(path, 16 << 20);
    if (!text) {
      spdlog::warn("jobs: skipping {}: {}", path, text.error().ToString());
      continue;
    }
    nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
    auto info = JobInfo::FromJson(j, path);
    if (j.is_discarded() || !info) {
      spdlog::warn("jobs: skipping {}: {}", path, j.is_discarded() ? "not valid JSON" : info.error().ToString());
      continue;
    }
    if (!info->finished()) {
      ResumeHook hook;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (auto h = hooks_.find(info->kind); h != hooks_.end()) hook = h->second;
      }
      Result<JobFn> fn = hook ? hook(*info) : Result<JobFn>(Error::Unavailable("{}", kRestartMessage));
      info->updated_ms = NowMs();
      if (fn && *fn) {
        info->state = JobState::kQueued;
        info->progress_message = "resumed after node restart";
        resumed.emplace_back(info->id, std::move(*fn));
        spdlog::info("jobs: resuming {} job {}", info->kind, info->id);
      } else {
        info->state = JobState::kFailed;
        info->error = fn ? Error::Unavailable("{}", kRestartMessage) : fn.error();
        spdlog::info("jobs: {} job {} failed: {}", info->kind, info->id, info->error->message());
      }
      rewrite.push_back(info->id);
    }
    std::string id = info->id;  // copied: the move below empties info->id
    std::lock_guard<std::mutex> lock(mu_);
    jobs_[id] = Entry{std::move(*info), 0};
  }
  for (const std::string& id : rewrite) {
    if (auto r = Persist(id); !r) spdlog::warn("jobs: cannot rewrite {}: {}", id, r.error().ToString());
  }
  for (auto& [id, fn] : resumed) Schedule(id, std::move(fn));
  return Ok();
}

Result<std::string> JobRegistry::Submit(std::string kind, nlohmann::json params, JobFn fn) {
  if (cancelled_) return Error::Unavailable("node is shutting down; job {} not started", kind);
  JobInfo info;
  info.id = NewJobId();
  info.kind = std::move(kind);
  info.params = std::move(params);
  info.created_ms = info.updated_ms = NowMs();
  std::string id = info.id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_[id] = Entry{std::move(info), 0};
  }
  if (auto r = Persist(id); !r) {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.erase(id);
    return r.error().WithContext("record job");
  }
  Schedule(id, std::move(fn));
  return id;
}

void JobRegistry::Schedule(const std::string& id, JobFn fn) {
  pool_.Submit([this, id, fn = std::move(fn)]() mutable { RunJob(id, fn); });
}

void JobRegistry::RunJob(const std::string& id, JobFn& fn) {
  nlohmann::json params;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Entry& e = jobs_.at(id);
    e.info.state = JobState::kRunning;
    e.info.updated_ms = NowMs();
    params = e.info.params;
  }
  changed_.notify_all();
  if (auto r = Persist(id); !r) spdlog::warn("jobs: {}: {}", id, r.error().ToString());
  JobContext ctx(this, id, std::move(params));
  Result<nlohmann::json> result = Error::Internal("job did not run");
  try {
    result = fn(ctx);
  } catch (const std::exception& e) {
    result = Error::Internal("job threw: {}", e.what());
  }
  // The final record is written before it becomes visible in memory, so a
  // caller that sees the job finished (Get/Wait) also finds it on disk; io_mu_
  // keeps a concurrent progress write from overwriting it with stale state.
  {
    std::lock_guard<std::mutex> io(io_mu_);
    JobInfo final_info;
    {
      std::lock_guard<std::mutex> lock(mu_);
      final_info = jobs_.at(id).info;
    }
    final_info.updated_ms = NowMs();
    if (result) {
      final_info.state = JobState::kDone;
      final_info.result = std::move(*result);
    } else {
      final_info.state = JobState::kFailed;
      final_info.error = result.error();
    }
    spdlog::info("jobs: {} job {} {}{}", final_info.kind, id, JobStateName(final_info.state),
                 result ? "" : ": " + result.error().ToString());
    std::string text = final_info.ToJson().dump(2) + "\n";
    if (auto r = WriteFileAtomic(dir_ + "/" + id + ".json", std::string_view(text)); !r)
      spdlog::warn("jobs: {}: {}", id, r.error().ToString());
    std::lock_guard<std::mutex> lock(mu_);
    Entry& e = jobs_.at(id);
    e.info = std::move(final_info);
    e.persisted_ms = e.info.updated_ms;
  }
  changed_.notify_all();
}

void JobRegistry::UpdateProgress(const std::string& id, uint64_t done, uint64_t total, std::string message) {
  bool persist = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return;
    JobInfo& info = it->second.info;
    if (info.finished()) return;
    info.progress_done = done;
    info.progress_total = total;
    if (!message.empty()) info.progress_message = std::move(message);
    info.updated_ms = NowMs();
    persist = info.updated_ms - it->second.persisted_ms >= 1000;
  }
  if (persist) (void)Persist(id);
}

Result<JobInfo> JobRegistry::Get(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return Error::NotFound("no job with id '{}'", id);
  return it->second.info;
}

std::vector<JobInfo> JobRegistry::List() const {
  std::vector<JobInfo> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, e] : jobs_) out.push_back(e.info);
  }
  std::stable_sort(out.begin(), out.end(), [](const JobInfo& a, const JobInfo& b) { return a.created_ms < b.created_ms; });
  return out;
}

Result<JobInfo> JobRegistry::Wait(const std::string& id, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  auto finished = [&] {
    auto it = jobs_.find(id);
    return it == jobs_.end() || it->second.info.finished();
  };
  changed_.wait_for(lock, timeout, finished);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return Error::NotFound("no job with id '{}'", id);
  return it->second.info;
}

void JobRegistry::Shutdown() {
  cancelled_ = true;
  pool_.Shutdown();
}

}  // namespace tenzro::node
