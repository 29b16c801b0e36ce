#pragma once
// Runs one admitted engine request to its HTTP response: as server-sent events written while the engine
// commits tokens, or as one JSON body at the end (internal to src/server).
#include <chrono>
#include <cstdint>
#include <memory>

#include <httplib.h>

#include "server/formats.hpp"
#include "server/reply_channel.hpp"
#include "server/reply_text.hpp"
#include "server/server_state.hpp"

namespace plumb::server {

struct Job {
  Server::State& state;
  uint64_t id = 0;  // the engine's request id
  std::shared_ptr<ReplyChannel> channel;
  ReplyText text;
  std::unique_ptr<ReplyFormat> format;
  InFlight in_flight;
  bool opened = false;
  bool ended = false;
  std::chrono::steady_clock::time_point last_write = std::chrono::steady_clock::now();

  Job(Server::State& server, uint64_t request_id, std::shared_ptr<ReplyChannel> reply_channel,
      ReplyText reply_text, std::unique_ptr<ReplyFormat> reply_format)
      : state(server),
        id(request_id),
        channel(std::move(reply_channel)),
        text(std::move(reply_text)),
        format(std::move(reply_format)),
        in_flight(server.in_flight) {}
};

// Streams the job as text/event-stream; a client that goes away cancels the engine request.
void respond_streamed(httplib::Response& res, std::shared_ptr<Job> job);
// Waits for the whole reply and sends it as one JSON body; a client that goes away meanwhile cancels it.
void respond_whole(const httplib::Request& req, httplib::Response& res, Job& job);

}  // namespace plumb::server
