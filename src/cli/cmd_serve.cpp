// `plumb serve MODEL [--host --port --parallel N --api-key K --context N --backend cpu|cuda ...]`: the
// OpenAI-compatible server. SIGTERM or SIGINT drains in-flight requests, then the command exits 0.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "cli/command.hpp"
#include "server/load.hpp"
#include "server/metrics.hpp"
#include "server/server.hpp"

namespace plumb::cli {

namespace {

struct ServeOptions {
  server::LoadOptions load;
  server::ServerOptions http;
  std::string drafts = "copies";
};

std::string mib(int64_t bytes) {
  return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20));
}

// One line: what is served, where, and the memory it holds.
void report_start(const ServeOptions& options, const server::Server& server, int64_t weight_bytes, int port) {
  const server::ServedModel& served = server.served();
  const engine::Engine& engine = *served.engine;
  const engine::Metrics metrics = engine.metrics();
  std::printf(
      "plumb serve: model %s (%s, %s backend) context %lld parallel %d drafts %s weights %s kv budget %s "
      "resident %s listening on http://%s:%d%s\n",
      served.name.c_str(), std::string(engine.model().family()).c_str(),
      std::string(engine.model().backend_name()).c_str(), static_cast<long long>(engine.context()),
      options.load.engine.parallel, options.drafts.c_str(), mib(weight_bytes).c_str(),
      mib(metrics.kv_budget_bytes).c_str(), mib(server::resident_bytes()).c_str(), options.http.host.c_str(),
      port, options.http.api_keys.empty() ? "" : " (api keys required)");
  if (!served.prompt.has_template())
    std::printf("plumb serve: note: chat routes are off: %s\n", served.prompt.template_problem().c_str());
  std::fflush(stdout);
}

int serve(ServeOptions& options) {
  auto drafts = engine::parse_draft_mode(options.drafts);
  if (!drafts.ok()) return report_bad_input("serve", drafts.error().message);
  options.load.engine.drafts = *drafts;
  // Signals are taken by one thread with sigwait; every other thread (engine, HTTP) inherits the block.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  auto loaded = server::load_served_model(options.load);
  if (!loaded.ok()) return report_bad_input("serve", loaded.error().message);
  auto server = server::Server::create(std::move(loaded->served), options.http);
  if (!server.ok()) return report_bad_input("serve", server.error().message);
  auto port = (*server)->bind();
  if (!port.ok()) return report_bad_input("serve", port.error().message);
  report_start(options, **server, loaded->weight_bytes, *port);
  server::Server& running = **server;
  std::thread watcher([&running, signals] {
    int received = 0;
    sigwait(&signals, &received);
    std::fprintf(stderr, "plumb serve: signal %d: draining in-flight requests\n", received);
    running.drain_and_stop();
  });
  running.serve();
  // serve() also returns when listening fails; the watcher is then woken to finish.
  pthread_kill(watcher.native_handle(), SIGTERM);
  watcher.join();
  std::fprintf(stderr, "plumb serve: stopped\n");
  return kExitOk;
}

const RegisterCommand kServe{{
    "serve",
    "The OpenAI-compatible HTTP server",
    [](CLI::App& command) -> CommandRun {
      auto options = std::make_shared<ServeOptions>();
      server::LoadOptions& load = options->load;
      server::ServerOptions& http = options->http;
      command.add_option("model", load.model, "Model directory or org/name[@revision] in the HF cache")
          ->required();
      command.add_option("--host", http.host, "Address to listen on")->capture_default_str();
      command.add_option("--port", http.port, "Port to listen on (0: any free port)")->capture_default_str();
      command.add_option("--api-key", http.api_keys,
                         "Accepted bearer key (repeatable; none: no authentication)");
      command.add_option("--served-model-name", load.served_name,
                         "The model's name in the API (default: MODEL)");
      command.add_option("--backend", load.backend, "cpu or cuda")->capture_default_str();
      command.add_option("--threads", load.threads, "CPU backend threads (0: one per hardware thread)")
          ->capture_default_str();
      command.add_option("--parallel", load.engine.parallel, "Most streams running at once")
          ->capture_default_str();
      command.add_option("--context", load.engine.context, "Most positions per stream (0: the model's)")
          ->capture_default_str();
      command.add_option("--drafts", options->drafts, "none or copies")->capture_default_str();
      command.add_option("--prompt-cache-gib", load.engine.prompt_cache_gib, "Prompt-cache budget (0: off)")
          ->capture_default_str();
      command
          .add_option("--kv-budget-gib", load.engine.kv_budget_gib,
                      "KV bytes for live streams; 0: 90% of the free device memory after the weights, less 2 "
                      "GiB and the prompt cache (8 GiB where the backend does not report its memory)")
          ->capture_default_str();
      command.add_option("--max-body-bytes", http.max_body_bytes, "Largest request body")
          ->capture_default_str();
      command.add_option("--http-threads", http.http_threads, "Connections served at once")
          ->capture_default_str();
      command.add_option("--read-timeout", http.read_timeout_seconds, "Seconds a client may stall sending")
          ->capture_default_str();
      command.add_option("--write-timeout", http.write_timeout_seconds, "Seconds a client may stall reading")
          ->capture_default_str();
      command
          .add_option("--drain-seconds", http.drain_seconds,
                      "On SIGTERM, how long in-flight requests may run")
          ->capture_default_str();
      return [options] { return serve(*options); };
    },
}};

}  // namespace

}  // namespace plumb::cli
