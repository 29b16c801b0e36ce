#include "engine_fixture.hpp"

#include <algorithm>

#include "cpu/cpu_backend.hpp"
#include "models/gemma4/recording_backend.hpp"
#ifdef PLUMB_EXACTNESS_CUDA
#include "cuda/cuda_backend.hpp"
#endif

namespace plumb::engine::testing {

namespace {

// Seed 5's greedy replies wander over many tokens (most seeds repeat one token), so stops and drafts get
// exercised at varied points.
gemma4::TinyOptions tiny_options() {
  gemma4::TinyOptions options;
  options.seed = 5;
  return options;
}

class TinyCheckpoint {
 public:
  TinyCheckpoint() {
    dir_ = std::filesystem::temp_directory_path() /
           ("plumb-engine-tiny-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
    const Status written = gemma4::write_tiny_checkpoint(dir_.string(), tiny_options());
    if (!written.ok()) ADD_FAILURE() << written.error().message;
    auto tokenizer = text::Tokenizer::load(dir_);
    if (!tokenizer.ok()) ADD_FAILURE() << tokenizer.error().message;
    if (tokenizer.ok()) tokenizer_ = std::move(*tokenizer);
  }
  ~TinyCheckpoint() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  std::filesystem::path dir_;
  std::optional<text::Tokenizer> tokenizer_;
};

TinyCheckpoint& checkpoint() {
  static TinyCheckpoint tiny;
  return tiny;
}

}  // namespace

std::string& backend_name() {
  static std::string name = "cpu";
  return name;
}

Result<std::unique_ptr<ops::Backend>> make_backend() {
  if (backend_name() == "cpu") return cpu::make_cpu_backend(2);
#ifdef PLUMB_EXACTNESS_CUDA
  if (backend_name() == "cuda") return cuda::make_cuda_backend();
#endif
  return error_at("exactness", "option", "--backend", "names a backend this build lacks", "cpu or cuda",
                  backend_name());
}

const std::filesystem::path& tiny_dir() {
  return checkpoint().dir_;
}

const text::Tokenizer& tiny_tokenizer() {
  return *checkpoint().tokenizer_;
}

namespace {

// The tiny checkpoint loaded onto `backend`, as a lane that owns it.
std::unique_ptr<LaneModel> lane_on(std::unique_ptr<ops::Backend> backend, bool path_invariant) {
  auto model = gemma4::load_model(tiny_dir().string(), *backend);
  if (!model.ok()) {
    ADD_FAILURE() << model.error().message;
    return nullptr;
  }
  return make_gemma4_lane(std::move(backend), std::move(*model), path_invariant);
}

std::unique_ptr<Engine> engine_on(std::unique_ptr<LaneModel> lane, const EngineOptions& options) {
  if (!lane) return nullptr;
  auto engine = Engine::create(std::move(lane), tiny_tokenizer(), options);
  if (!engine.ok()) {
    ADD_FAILURE() << engine.error().message;
    return nullptr;
  }
  return std::move(*engine);
}

}  // namespace

std::unique_ptr<LaneModel> tiny_lane(bool path_invariant) {
  auto backend = make_backend();
  if (!backend.ok()) {
    ADD_FAILURE() << backend.error().message;
    return nullptr;
  }
  return lane_on(std::move(*backend), path_invariant);
}

std::unique_ptr<Engine> tiny_engine(EngineOptions options, bool path_invariant) {
  return engine_on(tiny_lane(path_invariant), options);
}

GraphEngine tiny_engine_graphs(EngineOptions options, bool graphs) {
  auto backend = make_backend();
  if (!backend.ok()) {
    ADD_FAILURE() << backend.error().message;
    return {};
  }
  std::unique_ptr<ops::Backend> chosen = std::move(*backend);
  // A backend without graphs (the CPU one) records and replays launches through the recording backend, as
  // CUDA graphs would.
  if (!chosen->set_graphs(graphs) && graphs)
    chosen = std::make_unique<gemma4::testing::RecordingBackend>(std::move(chosen));
  GraphEngine made;
  made.backend = chosen.get();
  made.engine = engine_on(lane_on(std::move(chosen), true), options);
  return made;
}

EngineOptions serial_options() {
  EngineOptions options;
  options.parallel = 1;
  options.drafts = DraftMode::none;
  options.prompt_cache_gib = 0.0;
  options.background = false;
  return options;
}

std::vector<int32_t> plain_generate(const Request& request) {
  auto backend = make_backend();
  EXPECT_TRUE(backend.ok());
  if (!backend.ok()) return {};
  auto model = gemma4::load_model(tiny_dir().string(), **backend);
  EXPECT_TRUE(model.ok());
  if (!model.ok()) return {};
  const auto prompt = static_cast<int64_t>(request.prompt.size());
  auto stream = gemma4::new_stream(*model, std::max<int64_t>(prompt, 1));
  EXPECT_TRUE(stream.ok());
  if (!stream.ok()) return {};
  const uint64_t seed = request.sampling.seed.value_or(prompt_seed(request.prompt));
  std::vector<int32_t> sequence = request.prompt, reply;
  std::vector<int32_t> stops = request.stop_tokens;
  if (request.stop_at_eos)
    stops.insert(stops.end(), model->config.eos_token_ids.begin(), model->config.eos_token_ids.end());
  gemma4::StreamChunk chunk{&*stream, sequence, 0, gemma4::LogitRows::last};
  while (true) {
    auto logits = gemma4::forward(*model, std::span(&chunk, 1));
    EXPECT_TRUE(logits.ok()) << (logits.ok() ? "" : logits.error().message);
    if (!logits.ok()) return reply;
    const auto position = static_cast<int64_t>(sequence.size());
    const int32_t token = sample_keyed(logits->row(0), request.sampling, seed, position);
    sequence.push_back(token);
    reply.push_back(token);
    const bool stop = std::find(stops.begin(), stops.end(), token) != stops.end();
    if (stop || static_cast<int64_t>(reply.size()) >= request.max_tokens) return reply;
    chunk = gemma4::StreamChunk{&*stream, std::span(&sequence.back(), 1), position, gemma4::LogitRows::last};
  }
}

std::vector<int32_t> prompt_tokens(size_t count, uint32_t seed, bool repetitive) {
  std::mt19937 random(seed);
  const auto pick = [&] { return static_cast<int32_t>(120 + random() % (gemma4::tiny_vocab_size() - 120)); };
  std::vector<int32_t> phrase;
  for (int i = 0; i < 5; ++i) phrase.push_back(pick());
  std::vector<int32_t> tokens = {2};
  while (tokens.size() < count) tokens.push_back(repetitive ? phrase[tokens.size() % phrase.size()] : pick());
  return tokens;
}

std::string ascii_stop(const std::string& text) {
  const auto printable = [&](size_t i) { return text[i] > ' ' && text[i] < 0x7f; };
  for (size_t start : {text.size() / 2, size_t{0}})
    for (size_t i = start; i + 1 < text.size(); ++i)
      if (printable(i) && printable(i + 1)) return text.substr(i, 2);
  return {};
}

std::vector<Reply> run_together(Engine& engine, const std::vector<Request>& requests) {
  std::vector<Reply> replies(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    Sink sink;
    sink.on_done = [&replies, i](const Reply& reply) { replies[i] = reply; };
    const Admission admission = engine.submit(requests[i], std::move(sink));
    EXPECT_TRUE(admission.admitted()) << "request " << i << ": " << admission.refusal->message;
  }
  const Status idle = engine.run_until_idle();
  EXPECT_TRUE(idle.ok()) << (idle.ok() ? "" : idle.error().message);
  return replies;
}

void expect_same_reply(const Reply& expected, const Reply& got, const std::string& what) {
  EXPECT_NE(expected.finish, FinishReason::error) << what << ": reference failed: " << expected.error;
  EXPECT_NE(got.finish, FinishReason::error) << what << ": " << got.error;
  const size_t common = std::min(expected.tokens.size(), got.tokens.size());
  for (size_t i = 0; i < common; ++i) {
    if (expected.tokens[i] != got.tokens[i]) {
      ADD_FAILURE() << what << ": token index " << i << " expected " << expected.tokens[i] << " got "
                    << got.tokens[i] << " (bound: equal ids)";
      return;
    }
  }
  EXPECT_EQ(expected.tokens.size(), got.tokens.size()) << what << ": reply length (bound: equal)";
  EXPECT_EQ(expected.token_sha, got.token_sha) << what << ": token_sha";
  EXPECT_EQ(expected.finish, got.finish) << what << ": finish " << finish_reason_name(expected.finish)
                                         << " vs " << finish_reason_name(got.finish);
  EXPECT_EQ(expected.text, got.text) << what << ": text";
}

}  // namespace plumb::engine::testing
