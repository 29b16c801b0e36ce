// A server over the scripted lane (scripted_lane.hpp) and a checkpoint's tokenizer and chat template, for the
// client tests of tool calls: `test_scripted_server MODEL_DIR [--port N]`. It prints the same "listening on"
// line as plumb serve and drains on SIGTERM.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "scripted_lane.hpp"
#include "server/server.hpp"

namespace {

using namespace plumb;

Result<std::vector<int32_t>> script_ids(const text::Tokenizer& tokenizer, const std::string& text,
                                        int32_t end) {
  auto ids = tokenizer.encode(text, false);
  if (!ids.ok()) return ids.error();
  ids->push_back(end);
  return std::move(*ids);
}

int fail(const std::string& message) {
  std::fprintf(stderr, "test_scripted_server: %s\n", message.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return fail("usage: test_scripted_server MODEL_DIR [--port N]");
  server::ServerOptions options;
  options.port = 0;
  for (int i = 2; i + 1 < argc; i += 2)
    if (std::strcmp(argv[i], "--port") == 0) options.port = std::atoi(argv[i + 1]);
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  auto tokenizer = text::Tokenizer::load(argv[1]);
  if (!tokenizer.ok()) return fail(tokenizer.error().message);
  auto prompt = server::ChatPrompt::load(argv[1]);
  if (!prompt.ok()) return fail(prompt.error().message);
  server::testing::Script script;
  script.vocab = static_cast<int64_t>(tokenizer->vocab_size());
  auto tool = script_ids(
      *tokenizer, "I will check.<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,days:3}<tool_call|>", 50);
  auto text = script_ids(*tokenizer, "It is sunny in Paris.", 106);
  if (!tool.ok() || !text.ok()) return fail("the scripts do not encode");
  script.tool_script = std::move(*tool);
  script.text_script = std::move(*text);
  engine::EngineOptions engine_options;
  engine_options.kv_budget_gib = 0.25;
  auto engine =
      engine::Engine::create(server::testing::make_scripted_lane(script), *tokenizer, engine_options);
  if (!engine.ok()) return fail(engine.error().message);
  auto server = server::Server::create(
      {"scripted", std::move(*tokenizer), std::move(*prompt), std::move(*engine)}, options);
  if (!server.ok()) return fail(server.error().message);
  auto port = (*server)->bind();
  if (!port.ok()) return fail(port.error().message);
  std::printf("test_scripted_server: model scripted listening on http://%s:%d\n", options.host.c_str(),
              *port);
  std::fflush(stdout);
  server::Server& running = **server;
  std::thread watcher([&running, signals] {
    int received = 0;
    sigwait(&signals, &received);
    running.drain_and_stop();
  });
  running.serve();
  pthread_kill(watcher.native_handle(), SIGTERM);
  watcher.join();
  return 0;
}
