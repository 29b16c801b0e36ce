#include "contract/call.hpp"

#include "core/error.hpp"
#include "core/half.hpp"

namespace plumb::contract {

HostData HostData::zeros(std::string name, DType dtype, Shape shape, bool per_row) {
  HostData data;
  data.name = std::move(name);
  data.dtype = dtype;
  data.shape = std::move(shape);
  data.bytes.assign(static_cast<size_t>(data.elements()) * dtype_size(dtype), 0);
  data.per_row = per_row;
  return data;
}

size_t HostData::row_bytes() const {
  PLUMB_ASSERT(!shape.empty() && shape[0] > 0, "a row needs a leading axis");
  return bytes.size() / static_cast<size_t>(shape[0]);
}

double HostData::value(int64_t i) const {
  switch (dtype) {
    case DType::bf16:
      return bf16_to_f32(as<uint16_t>()[i]);
    case DType::f16:
      return f16_to_f32(as<uint16_t>()[i]);
    case DType::f32:
      return as<float>()[i];
    case DType::i32:
      return as<int32_t>()[i];
    case DType::u32:
      return as<uint32_t>()[i];
    default:
      PLUMB_ASSERT(false, "no value reader for this dtype");
      return 0.0;
  }
}

uint32_t HostData::bits(int64_t i) const {
  switch (dtype_size(dtype)) {
    case 2:
      return as<uint16_t>()[i];
    case 4:
      return as<uint32_t>()[i];
    case 1:
      return as<uint8_t>()[i];
    default:
      PLUMB_ASSERT(false, "no bit reader for this element size");
      return 0;
  }
}

uint64_t Call::seed_of_row(int64_t row) const {
  return row_seeds.empty() ? seed : row_seeds.at(static_cast<size_t>(row));
}

Call concat_rows(std::span<const RowRef> rows) {
  PLUMB_ASSERT(!rows.empty(), "a batch needs rows");
  const Call& first = *rows[0].call;
  Call batch;
  batch.inputs_kind = first.inputs_kind;
  batch.seed = first.seed;
  batch.rows = static_cast<int64_t>(rows.size());
  const auto gather = [&](const std::vector<HostData>& (*pick)(const Call&), std::vector<HostData>& into) {
    for (size_t t = 0; t < pick(first).size(); ++t) {
      HostData joined = pick(first)[t];
      if (joined.per_row) {
        const size_t row_bytes = joined.row_bytes();
        joined.shape[0] = batch.rows;
        joined.bytes.clear();
        for (const RowRef& ref : rows) {
          const HostData& source = pick(*ref.call)[t];
          PLUMB_ASSERT(source.bytes.size() == pick(first)[t].bytes.size(), "rows of one form share shapes");
          const auto* begin = source.bytes.data() + static_cast<size_t>(ref.row) * row_bytes;
          joined.bytes.insert(joined.bytes.end(), begin, begin + row_bytes);
        }
      } else {
        const Call* checked = &first;
        for (const RowRef& ref : rows) {
          if (ref.call == checked) continue;  // sources come in runs; compare each run's source once
          checked = ref.call;
          PLUMB_ASSERT(pick(*ref.call)[t].bytes == joined.bytes,
                       "batched rows must share weights and caches");
        }
      }
      into.push_back(std::move(joined));
    }
  };
  gather([](const Call& call) -> const std::vector<HostData>& { return call.inputs; }, batch.inputs);
  gather([](const Call& call) -> const std::vector<HostData>& { return call.outputs; }, batch.outputs);
  for (const RowRef& ref : rows) batch.row_seeds.push_back(ref.call->seed_of_row(ref.row));
  return batch;
}

std::vector<OutputBytes> row_output_bytes(const Call& call, int64_t row) {
  std::vector<OutputBytes> runs;
  for (size_t o = 0; o < call.outputs.size(); ++o) {
    const size_t row_bytes = call.outputs[o].row_bytes();
    runs.push_back({static_cast<int>(o), static_cast<size_t>(row) * row_bytes, row_bytes});
  }
  return runs;
}

}  // namespace plumb::contract
