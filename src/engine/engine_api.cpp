// The Engine's public methods: thin locks around Engine::Impl.
#include <future>

#include <fmt/format.h>

#include "engine/engine_impl.hpp"

namespace plumb::engine {

Result<std::unique_ptr<Engine>> Engine::create(std::unique_ptr<LaneModel> model,
                                               std::optional<text::Tokenizer> tokenizer,
                                               const EngineOptions& options) {
  if (!model) return error_at("engine", "parameter", "model", "is missing", "a lane model", "null");
  PLUMB_TRY(check_engine_options(options));
  auto impl = std::make_unique<Impl>(std::move(model), std::move(tokenizer), options);
  Impl* raw = impl.get();
  std::unique_ptr<Engine> engine(new Engine(std::move(impl)));
  if (options.background) raw->worker = std::thread([raw] { raw->run_worker(); });
  return engine;
}

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Engine::~Engine() {
  shutdown(false);
}

Admission Engine::submit(Request request, Sink sink) {
  Impl& impl = *impl_;
  Admission admission;
  std::lock_guard lock(impl.mutex);
  ++impl.metrics.requests_submitted;
  if (impl.stopping) {
    admission.refusal = Refusal{Refusal::Kind::shutting_down,
                                error_at("engine", "request", "submit", "arrived during shutdown").message};
  } else if (auto refused = impl.check(request)) {
    admission.refusal = std::move(refused);
  } else if (impl.waiting.size() >= impl.options.max_waiting) {
    admission.refusal = Refusal{Refusal::Kind::queue_full,
                                error_at("engine", "queue", "waiting", "is full",
                                         fmt::format("fewer than {} waiting", impl.options.max_waiting),
                                         std::to_string(impl.waiting.size()))
                                    .message};
  }
  if (admission.refusal) {
    ++impl.metrics.requests_refused;
    return admission;
  }
  auto stream = impl.make_stream(std::move(request), std::move(sink));
  admission.id = stream->id = impl.next_id++;
  impl.active_ids.insert(admission.id);
  impl.waiting.push_back(std::move(stream));
  impl.wake.notify_all();
  return admission;
}

bool Engine::cancel(uint64_t id) {
  std::lock_guard lock(impl_->mutex);
  if (!impl_->active_ids.contains(id)) return false;
  impl_->cancels.insert(id);
  impl_->wake.notify_all();
  return true;
}

Result<Reply> Engine::generate(Request request, std::function<void(const Delta&)> on_delta) {
  auto promise = std::make_shared<std::promise<Reply>>();
  std::future<Reply> done = promise->get_future();
  Sink sink{std::move(on_delta), [promise](const Reply& reply) { promise->set_value(reply); }};
  const Admission admission = submit(std::move(request), std::move(sink));
  if (!admission.admitted()) return Error{admission.refusal->message};
  while (!impl_->options.background && done.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    auto stepped = impl_->step();
    if (!stepped.ok()) return stepped.error();
  }
  Reply reply = done.get();
  if (reply.finish == FinishReason::error) return Error{reply.error};
  return reply;
}

Result<bool> Engine::step() {
  if (impl_->options.background)
    return error_at("engine", "call", "step", "is for engines without a worker thread", "background = false",
                    "background = true");
  return impl_->step();
}

Status Engine::run_until_idle() {
  while (true) {
    auto stepped = step();
    if (!stepped.ok()) return stepped.error();
    if (*stepped) continue;
    std::lock_guard lock(impl_->mutex);
    if (impl_->waiting.empty()) return {};
    return error_at("engine", "queue", "waiting", "holds requests that cannot be admitted", "none",
                    std::to_string(impl_->waiting.size()));
  }
}

void Engine::shutdown(bool drain) {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stopping = true;
    if (!drain) impl_->cancel_all = true;
    impl_->wake.notify_all();
  }
  if (impl_->worker.joinable()) {
    // Called from a sink on the worker itself, the flags alone end it.
    if (impl_->worker.get_id() != std::this_thread::get_id()) impl_->worker.join();
  } else if (!impl_->options.background) {
    (void)run_until_idle();
  }
}

Metrics Engine::metrics() const {
  std::lock_guard lock(impl_->mutex);
  Metrics snapshot = impl_->metrics;
  snapshot.waiting_requests = static_cast<int64_t>(impl_->waiting.size());
  snapshot.kv_reserved_bytes = impl_->kv_reserved;
  return snapshot;
}

const EngineOptions& Engine::options() const {
  return impl_->options;
}
const LaneModel& Engine::model() const {
  return *impl_->model;
}
int64_t Engine::context() const {
  return impl_->context;
}

void Engine::clear_prompt_cache() {
  std::lock_guard lock(impl_->mutex);
  impl_->clear_cache_requested = true;
}

}  // namespace plumb::engine
