// tenzro cli: the demo's serving step — the bundled chat model (tiny
// Qwen3.5-MoE with its tokenizer, tests/data/model) served by node 0 with the
// OpenAI-compatible API while its routed experts live on the holders:
//   1. node 0 publishes the model's experts (bf16, the stored bytes), the live
//      holders load all of them; node 0's GET /health turns 200 once every
//      expert has a live holder;
//   2. the official OpenAI client (npm `openai`, installed once into
//      ~/.cache/tenzro) streams a chat completion from node 0, and the text
//      is checked against the same generation run all-local in-process;
//   3. one holder is SIGKILLed (its declaration still live) and a second
//      stream completes (failover) with the local text again.
// Node 0 must have been started with `--serve <model_id>` (experts on the
// swarm, the default).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "cli/node_client.h"
#include "core/result.h"
#include "net/url.h"

namespace tenzro::cli {

struct DemoServeSetup {
  std::string model_id;     // the id node 0 serves
  std::string checkpoint;   // its GGUF (the catalog's)
  int layers = 2;
  NodeClient* preparer = nullptr;      // node 0's admin API
  net::Endpoint api;                   // node 0's public listener
  std::vector<NodeClient*> holders;    // live holders' admin APIs
  std::vector<pid_t> holder_pids;      // same order; the last one is killed before the second stream
  std::string scripts_dir;             // the repository's scripts/ (demo-openai-chat.cjs)
};

// Prints each step; returns whether every check held. Errors: a node call
// that fails, a missing model file.
Result<bool> RunDemoServing(const DemoServeSetup& s);

}  // namespace tenzro::cli
