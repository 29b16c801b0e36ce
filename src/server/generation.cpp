#include "server/generation.hpp"

#include "server/peer.hpp"

namespace plumb::server {

namespace {

using std::chrono::milliseconds;
constexpr milliseconds kPoll{200};

// The error a reply that did not finish carries to its client.
ApiError unfinished_error(const engine::Reply& reply) {
  if (reply.finish == engine::FinishReason::error)
    return internal_error("engine: request '" + std::to_string(reply.id) + "' failed: " + reply.error);
  return unavailable("engine: request '" + std::to_string(reply.id) +
                     "' was cancelled before it finished; expected a complete reply, got a server shutdown");
}

bool unfinished(const engine::Reply& reply) {
  return reply.finish == engine::FinishReason::cancelled || reply.finish == engine::FinishReason::error;
}

bool write_events(httplib::DataSink& sink, Job& job, const std::vector<Event>& events) {
  std::string text;
  for (const Event& event : events) text += sse_text(event);
  if (text.empty()) return true;
  job.last_write = std::chrono::steady_clock::now();
  return sink.write(text.data(), text.size());
}

// Writes the end of the stream: the last pieces and closing events, or an error event.
bool write_end(httplib::DataSink& sink, Job& job, const engine::Reply& reply) {
  job.ended = true;
  auto rest = job.text.finish();
  if (!rest.ok() || unfinished(reply)) {
    const ApiError error = rest.ok() ? unfinished_error(reply) : internal_error(rest.error().message);
    if (!write_events(sink, job, {job.format->error_event(error)})) return false;
    sink.done();
    return true;
  }
  std::vector<Event> events = job.format->piece(*rest);
  for (Event& event : job.format->close(reply)) events.push_back(std::move(event));
  if (!write_events(sink, job, events)) return false;
  if (job.format->done_marker()) {
    static constexpr std::string_view kDone = "data: [DONE]\n\n";
    if (!sink.write(kDone.data(), kDone.size())) return false;
  }
  sink.done();
  return true;
}

// One call from the HTTP thread: opens the stream, or writes what the engine committed since the last call.
bool pump(httplib::DataSink& sink, Job& job) {
  if (!job.opened) {
    job.opened = true;
    return write_events(sink, job, job.format->open());
  }
  // A client that went away is noticed even while its reply has no text to send (held-back bytes).
  if (!sink.is_writable()) return false;
  ReplyChannel::Batch batch = job.channel->take(kPoll);
  if (!batch.tokens.empty()) {
    auto piece = job.text.push(batch.tokens);
    if (!piece.ok()) {
      job.state.model.engine->cancel(job.id);
      job.ended = true;
      const bool written =
          write_events(sink, job, {job.format->error_event(internal_error(piece.error().message))});
      sink.done();
      return written;
    }
    if (!write_events(sink, job, job.format->piece(*piece))) return false;
  }
  if (batch.done) return write_end(sink, job, *batch.done);
  // A comment after a silence keeps proxies open and shows a client that left.
  const auto silence = std::chrono::steady_clock::now() - job.last_write;
  if (silence > std::chrono::duration<double>(job.state.options.keep_alive_seconds)) {
    static constexpr std::string_view kComment = ": keep-alive\n\n";
    job.last_write = std::chrono::steady_clock::now();
    return sink.write(kComment.data(), kComment.size());
  }
  return true;
}

}  // namespace

void respond_streamed(httplib::Response& res, std::shared_ptr<Job> job) {
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [job](size_t, httplib::DataSink& sink) {
        const bool written = pump(sink, *job);
        if (!written) {
          // The client went away: the engine frees the stream's state at its next round.
          job->state.model.engine->cancel(job->id);
          job->state.metrics.count_disconnect();
        }
        return written;
      },
      [job](bool) {
        if (!job->ended) job->state.model.engine->cancel(job->id);
      });
}

void respond_whole(const httplib::Request& req, httplib::Response& res, Job& job) {
  const PeerWatch peer(req);
  std::optional<engine::Reply> reply;
  bool cancelled = false;
  while (!reply) {
    reply = job.channel->take(kPoll).done;
    // A client that went away frees its stream now rather than when the whole reply is done.
    if (!reply && !cancelled && peer.gone()) {
      cancelled = job.state.model.engine->cancel(job.id);
      job.state.metrics.count_disconnect();
    }
  }
  if (unfinished(*reply)) return send_error(res, unfinished_error(*reply));
  auto piece = job.text.push(reply->tokens);
  if (!piece.ok()) return send_error(res, internal_error(piece.error().message));
  (void)job.format->piece(*piece);
  auto rest = job.text.finish();
  if (!rest.ok()) return send_error(res, internal_error(rest.error().message));
  (void)job.format->piece(*rest);
  send_json(res, job.format->whole(*reply));
}

}  // namespace plumb::server
