#include "server/server.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "server/server_state.hpp"

namespace plumb::server {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kJson = "application/json";

// Routes as metric labels: a client's path is not a label unless it names a route.
std::string route_label(const std::string& path) {
  static const char* const kRoutes[] = {
      "/v1/models", "/v1/chat/completions", "/v1/completions", "/v1/responses",
      "/tokenize",  "/detokenize",          "/health",         "/metrics"};
  for (const char* route : kRoutes)
    if (path == route) return route;
  if (path.starts_with("/v1/models/")) return "/v1/models/{id}";
  return "other";
}

// Errors httplib raises itself (no route, body too large, unreadable request) in OpenAI's shape.
ApiError transport_error(const Server::State& state, const httplib::Request& req, int status) {
  if (status == 413)
    return ApiError{413, "invalid_request_error", "request_too_large", "",
                    fmt::format("request: body is too large; expected at most {} bytes, got more",
                                state.options.max_body_bytes)};
  if (status == 404)
    return ApiError{404, "invalid_request_error", "not_found", "",
                    fmt::format("request: route '{} {}' does not exist; expected one of the OpenAI routes",
                                req.method, req.path.substr(0, 200))};
  return ApiError{status, "invalid_request_error", "bad_request", "",
                  fmt::format("request: HTTP request could not be handled; status {}", status)};
}

httplib::Server::HandlerResponse authorize(Server::State& state, const httplib::Request& req,
                                           httplib::Response& res) {
  if (!state.keys.required() || req.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
  if (state.keys.accepts(req.get_header_value("Authorization")))
    return httplib::Server::HandlerResponse::Unhandled;
  send_error(res,
             ApiError{401, "invalid_request_error", "invalid_api_key", "",
                      "request: header 'Authorization' does not carry a valid key; expected 'Bearer <key>' "
                      "with a key given to --api-key, got another"});
  return httplib::Server::HandlerResponse::Handled;
}

void configure(Server::State& state) {
  httplib::Server& http = state.http;
  const auto threads = static_cast<size_t>(std::max(1, state.options.http_threads));
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http.set_payload_max_length(state.options.max_body_bytes);
  http.set_read_timeout(state.options.read_timeout_seconds, 0);
  http.set_write_timeout(state.options.write_timeout_seconds, 0);
  http.set_keep_alive_max_count(1000);
  // An idle connection holds a thread: it is closed as soon as a stalled request would be.
  http.set_keep_alive_timeout(std::min<time_t>(5, state.options.read_timeout_seconds));
  http.set_tcp_nodelay(true);
  http.set_socket_options([&state](socket_t socket) {
    httplib::default_socket_options(socket);
    state.listen_socket = static_cast<int>(socket);
  });
  http.set_pre_routing_handler(
      [&state](const httplib::Request& req, httplib::Response& res) { return authorize(state, req, res); });
  http.set_error_handler(
      httplib::Server::HandlerWithResponse([&state](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        send_error(res, transport_error(state, req, res.status));
        return httplib::Server::HandlerResponse::Handled;
      }));
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr error) {
    std::string what = "unknown exception";
    try {
      if (error) std::rethrow_exception(error);
    } catch (const std::exception& caught) {
      what = caught.what();
    } catch (...) {
    }
    send_error(res, internal_error("server: handler failed: " + what));
  });
  http.set_logger([&state](const httplib::Request& req, const httplib::Response& res) {
    state.metrics.count(route_label(req.path), res.status);
  });
  add_generation_routes(state);
  add_info_routes(state);
}

}  // namespace

void send_error(httplib::Response& res, const ApiError& error) {
  res.status = error.status;
  res.set_content(error_json(error).dump(-1, ' ', false, json::error_handler_t::replace), std::string(kJson));
}

void send_json(httplib::Response& res, const json& body) {
  res.status = 200;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), std::string(kJson));
}

Result<std::unique_ptr<Server>> Server::create(ServedModel model, ServerOptions options) {
  if (!model.engine) return error_at("server", "model", model.name, "has no engine", "an engine", "none");
  auto state = std::make_unique<State>(std::move(model), std::move(options));
  for (int32_t id : state->model.engine->model().eos_tokens()) state->end_tokens.push_back(id);
  configure(*state);
  return std::unique_ptr<Server>(new Server(std::move(state)));
}

Server::Server(std::unique_ptr<State> state) : state_(std::move(state)) {}

Server::~Server() {
  drain_and_stop();
}

Result<int> Server::bind() {
  const ServerOptions& options = state_->options;
  int port = options.port;
  if (port == 0) {
    port = state_->http.bind_to_any_port(options.host);
    if (port <= 0)
      return error_at("server.bind", "address", options.host, "cannot be bound", "a local address",
                      "a bind failure");
  } else if (!state_->http.bind_to_port(options.host, port)) {
    return error_at("server.bind", "address", fmt::format("{}:{}", options.host, port), "cannot be bound",
                    "a free port on a local address",
                    "a bind failure (in use, or not an address of this machine)");
  }
  // cpp-httplib listens with a backlog of 5, so a burst of new connections overflows the queue and some are
  // reset; listening again on the bound socket raises the backlog to the system's limit.
  if (state_->listen_socket >= 0 && ::listen(state_->listen_socket, SOMAXCONN) != 0)
    return error_at("server.bind", "socket", fmt::format("{}:{}", options.host, port),
                    "cannot raise its listen backlog", fmt::format("listen(fd, {}) == 0", SOMAXCONN),
                    std::strerror(errno));
  return port;
}

const ServedModel& Server::served() const {
  return state_->model;
}

void Server::serve() {
  state_->http.listen_after_bind();
}

void Server::drain_and_stop() {
  State& state = *state_;
  std::lock_guard lock(state.stop_mutex);
  if (state.stopped) return;
  state.draining = true;
  const auto wait_for_idle = [&state](double seconds) {
    const auto until = Clock::now() + std::chrono::duration<double>(seconds);
    while (state.in_flight > 0 && Clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  };
  wait_for_idle(state.options.drain_seconds);
  // What did not finish in time is cancelled; its streams get an error event before the sockets close.
  state.model.engine->shutdown(/*drain=*/false);
  wait_for_idle(5.0);
  state.http.stop();
  state.stopped = true;
}

}  // namespace plumb::server
