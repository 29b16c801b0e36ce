#include "contract/execute.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace plumb::contract {
namespace {

constexpr size_t kChunkBytes = size_t{16} << 20;  // inputs are compared back in chunks of this size

// A buffer on the device: guard, payload, guard.
struct Placed {
  ops::DeviceTensor whole;
  TensorView payload;
};

uint8_t guard_byte(size_t buffer, size_t k) {
  return static_cast<uint8_t>(0xa5u ^ (k * 29u) ^ (buffer * 71u));
}

std::vector<uint8_t> guard_pattern(size_t buffer) {
  std::vector<uint8_t> guard(kGuardBytes);
  for (size_t k = 0; k < kGuardBytes; ++k) guard[k] = guard_byte(buffer, k);
  return guard;
}

TensorView bytes_view(void* data, size_t bytes, Device device) {
  return TensorView::contiguous(data, DType::u8, {static_cast<int64_t>(bytes)}, device);
}

TensorView host_bytes(const void* data, size_t bytes) {
  return bytes_view(const_cast<void*>(data), bytes, Device{});
}

Result<Placed> place(ops::Backend& backend, const HostData& data, const std::vector<uint8_t>& payload,
                     size_t buffer) {
  const size_t bytes = data.bytes.size();
  auto whole = backend.allocate(DType::u8, {static_cast<int64_t>(bytes + 2 * kGuardBytes)});
  if (!whole.ok()) return whole.error();
  auto* base = static_cast<uint8_t*>(whole->view.data);
  const Device device = backend.device();
  const std::vector<uint8_t> guard = guard_pattern(buffer);
  PLUMB_TRY(backend.upload(host_bytes(guard.data(), kGuardBytes), bytes_view(base, kGuardBytes, device)));
  PLUMB_TRY(backend.upload(host_bytes(payload.data(), bytes), bytes_view(base + kGuardBytes, bytes, device)));
  PLUMB_TRY(backend.upload(host_bytes(guard.data(), kGuardBytes),
                           bytes_view(base + kGuardBytes + bytes, kGuardBytes, device)));
  Placed placed{std::move(*whole),
                TensorView::contiguous(base + kGuardBytes, data.dtype, data.shape, device)};
  return placed;
}

// Downloads both guards and reports whether either changed.
Result<bool> guards_intact(ops::Backend& backend, const Placed& placed, size_t bytes, size_t buffer) {
  auto* base = static_cast<uint8_t*>(placed.whole.view.data);
  const std::vector<uint8_t> expected = guard_pattern(buffer);
  std::vector<uint8_t> got(kGuardBytes);
  for (size_t offset : {size_t{0}, kGuardBytes + bytes}) {
    PLUMB_TRY(backend.download(bytes_view(base + offset, kGuardBytes, backend.device()),
                               host_bytes(got.data(), kGuardBytes)));
    if (got != expected) return false;
  }
  return true;
}

Result<bool> input_intact(ops::Backend& backend, const Placed& placed, const HostData& data) {
  std::vector<uint8_t> chunk;
  auto* base = static_cast<uint8_t*>(placed.payload.data);
  for (size_t offset = 0; offset < data.bytes.size(); offset += kChunkBytes) {
    const size_t count = std::min(kChunkBytes, data.bytes.size() - offset);
    chunk.resize(count);
    PLUMB_TRY(backend.download(bytes_view(base + offset, count, backend.device()),
                               host_bytes(chunk.data(), count)));
    if (std::memcmp(chunk.data(), data.bytes.data() + offset, count) != 0) return false;
  }
  return true;
}

std::vector<uint8_t> poisoned(const HostData& data, int poison) {
  std::vector<uint8_t> bytes(data.bytes.size());
  const uint32_t bits = poison_bits(data.dtype, poison);
  const size_t size = data.element_bytes();
  for (size_t offset = 0; offset < bytes.size(); offset += size) std::memcpy(&bytes[offset], &bits, size);
  return bytes;
}

Status run(ops::Backend& backend, const Form& form, const Call& call, int poison, Launched& launched) {
  std::vector<Placed> inputs, outputs;
  std::vector<TensorView> input_views, output_views;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    auto placed = place(backend, call.inputs[i], call.inputs[i].bytes, i);
    if (!placed.ok()) return placed.error();
    input_views.push_back(placed->payload);
    inputs.push_back(std::move(*placed));
  }
  for (size_t o = 0; o < call.outputs.size(); ++o) {
    auto placed = place(backend, call.outputs[o], poisoned(call.outputs[o], poison), 1000 + o);
    if (!placed.ok()) return placed.error();
    output_views.push_back(placed->payload);
    outputs.push_back(std::move(*placed));
  }
  const Status status = form.launch(backend, call, input_views, output_views);
  if (!status.ok()) launched.problems.push_back("launch refused: " + status.error().message);
  PLUMB_TRY(backend.synchronize());
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto guards = guards_intact(backend, inputs[i], call.inputs[i].bytes.size(), i);
    if (!guards.ok()) return guards.error();
    if (!*guards)
      launched.problems.push_back(fmt::format("guard bytes of input '{}' changed", call.inputs[i].name));
    auto intact = input_intact(backend, inputs[i], call.inputs[i]);
    if (!intact.ok()) return intact.error();
    if (!*intact) launched.problems.push_back(fmt::format("input '{}' changed", call.inputs[i].name));
  }
  for (size_t o = 0; o < outputs.size(); ++o) {
    HostData& out = launched.outputs[o];
    auto guards = guards_intact(backend, outputs[o], out.bytes.size(), 1000 + o);
    if (!guards.ok()) return guards.error();
    if (!*guards) launched.problems.push_back(fmt::format("guard bytes of output '{}' changed", out.name));
    PLUMB_TRY(backend.download(bytes_view(outputs[o].payload.data, out.bytes.size(), backend.device()),
                               host_bytes(out.bytes.data(), out.bytes.size())));
  }
  return {};
}

}  // namespace

uint32_t poison_bits(DType dtype, int poison) {
  if (dtype_size(dtype) == 2) return poison == 0 ? 0x7fa1u : 0xffb3u;
  return poison == 0 ? 0x7fa1a1a1u : 0xffb3b3b3u;
}

Launched launch_call(ops::Backend& backend, const Form& form, const Call& call, int poison) {
  Launched launched;
  launched.outputs = call.outputs;
  const Status status = run(backend, form, call, poison, launched);
  if (!status.ok()) launched.problems.push_back("backend failed: " + status.error().message);
  return launched;
}

}  // namespace plumb::contract
