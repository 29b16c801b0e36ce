#include "models/gemma4/kv_cache.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "models/gemma4/try_assign.hpp"

namespace plumb::gemma4 {

namespace {

constexpr std::string_view kWhere = "gemma4.kv_cache";

Result<LayerCache> allocate_layer(ops::Backend& backend, const LayerSpec& spec, int64_t capacity) {
  LayerCache layer;
  layer.capacity = capacity;
  layer.sliding = spec.kind == LayerKind::sliding;
  PLUMB_TRY_ASSIGN(keys, backend.allocate(DType::bf16, {capacity, spec.kv_heads, spec.head_dim}));
  PLUMB_TRY_ASSIGN(values, backend.allocate(DType::bf16, {capacity, spec.kv_heads, spec.head_dim}));
  layer.keys = std::move(keys);
  layer.values = std::move(values);
  return layer;
}

// A view of the first `rows` slots of a cache tensor.
TensorView leading_slots(const TensorView& cache, int64_t rows) {
  return TensorView::contiguous(cache.data, cache.dtype, {rows, cache.dim(1), cache.dim(2)}, cache.device);
}

}  // namespace

Result<StreamCache> StreamCache::create(const Config& config, ops::Backend& backend, int64_t max_chunk_rows,
                                        int64_t initial_positions) {
  if (max_chunk_rows <= 0)
    return error_at(kWhere, "parameter", "max_chunk_rows", "is out of range", "> 0",
                    std::to_string(max_chunk_rows));
  StreamCache cache;
  cache.max_chunk_rows_ = max_chunk_rows;
  for (const LayerSpec& spec : config.layers) {
    const bool sliding = spec.kind == LayerKind::sliding;
    const int64_t capacity =
        sliding ? ops::kv_capacity(spec.window, max_chunk_rows) : std::max<int64_t>(initial_positions, 1);
    PLUMB_TRY_ASSIGN(layer, allocate_layer(backend, spec, capacity));
    cache.layers_.push_back(std::move(layer));
    cache.windows_.push_back(sliding ? spec.window : 0);
  }
  return cache;
}

Status StreamCache::grow(ops::Backend& backend, LayerCache& layer, int64_t positions) {
  int64_t capacity = layer.capacity;
  while (capacity < positions) capacity *= 2;
  const TensorView& old_keys = layer.keys.view;
  PLUMB_TRY_ASSIGN(keys, backend.allocate(DType::bf16, {capacity, old_keys.dim(1), old_keys.dim(2)}));
  PLUMB_TRY_ASSIGN(values, backend.allocate(DType::bf16, {capacity, old_keys.dim(1), old_keys.dim(2)}));
  // Global slots equal positions, so the kept positions move over as one leading block.
  PLUMB_TRY(backend.copy(layer.keys.view, leading_slots(keys.view, layer.capacity)));
  PLUMB_TRY(backend.copy(layer.values.view, leading_slots(values.view, layer.capacity)));
  layer.keys = std::move(keys);
  layer.values = std::move(values);
  layer.capacity = capacity;
  return {};
}

Status StreamCache::prepare(ops::Backend& backend, int64_t first_position, int64_t rows) {
  if (first_position < 0 || first_position > end_)
    return error_at(kWhere, "chunk start", std::to_string(first_position),
                    "is not a computed position or the next one", fmt::format("0 .. {}", end_),
                    std::to_string(first_position));
  if (rows <= 0 || rows > max_chunk_rows_)
    return error_at(kWhere, "chunk at", std::to_string(first_position),
                    "has a row count the cache was not sized for", fmt::format("1 .. {}", max_chunk_rows_),
                    std::to_string(rows));
  for (size_t i = 0; i < layers_.size(); ++i) {
    LayerCache& layer = layers_[i];
    if (layer.sliding) {
      if (!window_kept(i, first_position))
        return error_at(kWhere, "chunk start", std::to_string(first_position),
                        fmt::format("rolls back past what sliding layer {} kept", i),
                        fmt::format("a start >= {}", oldest_kept(i) + windows_[i] - 1),
                        std::to_string(first_position));
    } else if (layer.capacity < first_position + rows) {
      PLUMB_TRY(grow(backend, layer, first_position + rows));
    }
  }
  written_end_ = std::max(written_end_, first_position + rows);
  return {};
}

void StreamCache::commit(int64_t first_position, int64_t rows) {
  end_ = first_position + rows;
  written_end_ = std::max(written_end_, end_);
}

int64_t StreamCache::oldest_kept(size_t layer) const {
  return std::max<int64_t>(0, written_end_ - layers_[layer].capacity);
}

bool StreamCache::window_kept(size_t layer, int64_t position) const {
  return std::max<int64_t>(0, position - windows_[layer] + 1) >= oldest_kept(layer);
}

bool StreamCache::can_resume_at(int64_t position) const {
  if (position < 0 || position > end_) return false;
  for (size_t i = 0; i < layers_.size(); ++i)
    if (layers_[i].sliding && !window_kept(i, position)) return false;
  return true;
}

Result<StreamCache> StreamCache::clone(ops::Backend& backend) const {
  StreamCache copy;
  copy.windows_ = windows_;
  copy.end_ = end_;
  copy.written_end_ = written_end_;
  copy.max_chunk_rows_ = max_chunk_rows_;
  for (const LayerCache& layer : layers_) {
    LayerCache twin = layer;
    PLUMB_TRY_ASSIGN(keys, backend.allocate(DType::bf16, layer.keys.view.shape));
    PLUMB_TRY_ASSIGN(values, backend.allocate(DType::bf16, layer.values.view.shape));
    PLUMB_TRY(backend.copy(layer.keys.view, keys.view));
    PLUMB_TRY(backend.copy(layer.values.view, values.view));
    twin.keys = std::move(keys);
    twin.values = std::move(values);
    copy.layers_.push_back(std::move(twin));
  }
  return copy;
}

int64_t StreamCache::bytes_for(const Config& config, int64_t positions, int64_t max_chunk_rows,
                               int64_t initial_positions) {
  int64_t total = 0;
  for (const LayerSpec& spec : config.layers) {
    int64_t capacity = std::max<int64_t>(initial_positions, 1);
    if (spec.kind == LayerKind::sliding) {
      capacity = ops::kv_capacity(spec.window, max_chunk_rows);
    } else {
      while (capacity < positions) capacity *= 2;
    }
    total += 2 * capacity * spec.kv_heads * spec.head_dim * static_cast<int64_t>(sizeof(uint16_t));
  }
  return total;
}

ops::KvView StreamCache::view(size_t layer, int64_t end) const {
  return ops::KvView{layers_[layer].keys.view, layers_[layer].values.view, end};
}

Status StreamCache::roll_back(int64_t end) {
  if (end < 0 || end > end_)
    return error_at(kWhere, "roll-back end", std::to_string(end), "is not a computed position",
                    fmt::format("0 .. {}", end_), std::to_string(end));
  end_ = end;
  return {};
}

int64_t StreamCache::bytes() const {
  int64_t total = 0;
  for (const LayerCache& layer : layers_)
    total += static_cast<int64_t>(layer.keys.view.bytes() + layer.values.view.bytes());
  return total;
}

}  // namespace plumb::gemma4
