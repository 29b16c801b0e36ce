#pragma once
// The OpenAI-compatible HTTP server (DESIGN.md §6) over one served model:
//   GET  /v1/models, /health, /metrics
//   POST /v1/chat/completions, /v1/completions, /v1/responses (streamed as server-sent events, or whole)
//   POST /tokenize, /detokenize
//
//   auto server = Server::create(std::move(model), options);   // Result<std::unique_ptr<Server>>
//   auto port = (*server)->bind();                               // Result<int>; port 0 picks a free one
//   (*server)->serve();                                          // returns after drain_and_stop()
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "engine/engine.hpp"
#include "server/chat_prompt.hpp"
#include "text/tokenizer/tokenizer.hpp"

namespace plumb::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;                          // 0: any free port
  std::vector<std::string> api_keys;        // empty: no authentication
  size_t max_body_bytes = size_t{8} << 20;  // larger bodies get 413
  int http_threads = 128;                   // connections served at once (each stream holds one)
  int read_timeout_seconds = 30;            // a client that stops sending is dropped after this
  int write_timeout_seconds = 30;           // a client that stops reading is dropped after this
  double drain_seconds = 30.0;              // SIGTERM: how long in-flight requests may finish
  double keep_alive_seconds = 5.0;          // streams send a comment after this much silence
};

// What the routes serve: the engine, and the tokenizer and prompt format of its checkpoint.
struct ServedModel {
  std::string name;  // as /v1/models lists it and requests name it
  text::Tokenizer tokenizer;
  ChatPrompt prompt;
  std::unique_ptr<engine::Engine> engine;
};

class Server {
 public:
  static Result<std::unique_ptr<Server>> create(ServedModel model, ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds the listening socket; returns the port.
  Result<int> bind();
  // Serves on the bound socket until drain_and_stop().
  void serve();
  // Refuses new generation requests, lets in-flight ones finish for up to drain_seconds, cancels the rest
  // (their streams get an error event), then stops serving. Idempotent; safe from any thread.
  void drain_and_stop();
  // What is served (for the startup report).
  const ServedModel& served() const;

  struct State;

 private:
  explicit Server(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace plumb::server
