#pragma once
// The server's shared state, seen by every route (internal to src/server).
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <httplib.h>

#include "server/auth.hpp"
#include "server/metrics.hpp"
#include "server/server.hpp"

namespace plumb::server {

struct Server::State {
  ServedModel model;
  ServerOptions options;
  ApiKeys keys;
  HttpMetrics metrics;
  std::vector<int32_t> end_tokens;  // the model's eos ids: they end a reply and have no text
  httplib::Server http;
  std::atomic<int> listen_socket{-1};  // the bound socket, seen by the socket-options hook (for its backlog)
  std::atomic<int64_t> in_flight{0};   // generation requests being answered
  std::atomic<bool> draining{false};
  std::mutex stop_mutex;
  bool stopped = false;

  State(ServedModel served, ServerOptions server_options)
      : model(std::move(served)), options(std::move(server_options)), keys(options.api_keys) {}
};

// Counts a generation request as in flight for as long as it lives.
class InFlight {
 public:
  explicit InFlight(std::atomic<int64_t>& count) : count_(count) { ++count_; }
  ~InFlight() { --count_; }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

 private:
  std::atomic<int64_t>& count_;
};

// Writes an OpenAI error body with its status.
void send_error(httplib::Response& res, const ApiError& error);
// Writes a JSON body with status 200.
void send_json(httplib::Response& res, const json& body);

void add_generation_routes(Server::State& state);
void add_info_routes(Server::State& state);

}  // namespace plumb::server
