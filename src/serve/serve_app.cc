#include "serve/serve_app.h"

#include <algorithm>

#include "model/arch.h"
#include "tokenizer/chat_format.h"
#include "tokenizer/load.h"

namespace tenzro::serve {

ServeApp::ServeApp(ServeOptions options) : options_(std::move(options)) {
  status_ = "loading model '" + options_.model_id + "' from " + options_.checkpoint;
}

ServeApp::~ServeApp() { scheduler_.reset(); }

std::string ServeApp::status() const {
  std::lock_guard lk(mu_);
  return status_;
}

Result<void> ServeApp::Load() {
  auto run = [&]() -> Result<void> {
    TENZRO_TRY(tok_, tokenizer::LoadTokenizer(options_.checkpoint));
    std::unique_ptr<model::MoeExecutor> moe;
    if (options_.make_executor) {
      TENZRO_TRY(spine_, format::Checkpoint::Open(options_.checkpoint));
      const model::ArchDef* def = model::FindArch(spine_->architecture());
      if (!def) return Error::Unsupported("{}: architecture '{}' is not supported", options_.checkpoint, spine_->architecture());
      TENZRO_TRY(model::HParams hp, def->read_hparams(*spine_));
      TENZRO_TRY(moe, options_.make_executor(hp, *spine_));
    }
    TENZRO_TRY(engine_, model::Engine::Open(options_.checkpoint, options_.engine, std::move(moe)));
    if (engine_->hparams().n_vocab < tok_->vocab_size())
      return Error::InvalidArgument("{}: tokenizer has {} tokens but the model's embedding only {}",
                                    options_.checkpoint, tok_->vocab_size(), engine_->hparams().n_vocab);
    const int model_ctx = engine_->hparams().n_ctx_train > 0 ? engine_->hparams().n_ctx_train : options_.max_context;
    context_ = std::min(options_.max_context, model_ctx);
    scheduler_ = std::make_unique<Scheduler>(engine_.get(), options_.scheduler);
    scheduler_->SetStepObserver([this](const StepInfo& s) {
      metrics_.ObserveStep(s);
      live_.ObserveStep(LiveStats::Clock::now(), s);
    });
    scheduler_->Start();
    return Ok();
  };
  Result<void> r = run();
  std::lock_guard lk(mu_);
  if (!r) {
    status_ = "failed to load model '" + options_.model_id + "': " + r.error().ToString();
    return r;
  }
  status_ = "ok";
  ready_ = true;
  return Ok();
}

}  // namespace tenzro::serve
