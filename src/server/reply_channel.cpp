#include "server/reply_channel.hpp"

namespace plumb::server {

engine::Sink ReplyChannel::sink(const std::shared_ptr<ReplyChannel>& channel, bool stream) {
  engine::Sink sink;
  if (stream) sink.on_delta = [channel](const engine::Delta& delta) { channel->on_delta(delta); };
  sink.on_done = [channel](const engine::Reply& reply) { channel->on_done(reply); };
  return sink;
}

void ReplyChannel::on_delta(const engine::Delta& delta) {
  {
    std::lock_guard lock(mutex_);
    tokens_.insert(tokens_.end(), delta.tokens.begin(), delta.tokens.end());
  }
  arrived_.notify_one();
}

void ReplyChannel::on_done(const engine::Reply& reply) {
  {
    std::lock_guard lock(mutex_);
    done_ = reply;
  }
  arrived_.notify_one();
}

ReplyChannel::Batch ReplyChannel::take(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  arrived_.wait_for(lock, timeout, [&] { return !tokens_.empty() || (done_ && !done_taken_); });
  Batch batch;
  batch.tokens.swap(tokens_);
  // The reply is handed over only after every delta before it, so tokens and the end arrive in order.
  if (done_ && !done_taken_) {
    batch.done = std::move(done_);
    done_taken_ = true;
  }
  return batch;
}

bool ReplyChannel::finished() const {
  std::lock_guard lock(mutex_);
  return done_taken_;
}

}  // namespace plumb::server
