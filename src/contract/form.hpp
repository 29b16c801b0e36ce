#pragma once
// A launched form: one op at one configuration (dims, dtypes, flags) that the contract generates inputs for,
// launches through the op entry on a backend, and holds to its float64 ranges. A control is a deliberately
// wrong launcher for a form, planted so one gate must go red.
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "contract/call.hpp"
#include "contract/inputs.hpp"
#include "contract/span.hpp"
#include "core/error.hpp"
#include "ops/backend.hpp"

namespace plumb::contract {

enum class Gate : int { none = 0, runs = 1, invariant = 2, shapes = 3, stress = 4, records = 5 };
std::string_view gate_name(Gate gate);

struct CallRequest {
  int64_t rows = 1;
  Inputs inputs = Inputs::gaussian;
  uint64_t seed = 1;         // per-row inputs
  uint64_t shared_seed = 1;  // weights and caches: calls with one shared seed can trade rows (gate 2)
};

// A call for `request` with no inputs or outputs yet: its row count, seed and inputs kind recorded.
inline Call empty_call(const CallRequest& request) {
  Call call;
  call.inputs_kind = std::string(inputs_name(request.inputs));
  call.seed = request.seed;
  call.rows = request.rows;
  return call;
}

class Form {
 public:
  Form(std::string op, std::string name, std::string dims)
      : op_(std::move(op)), name_(std::move(name)), dims_(std::move(dims)) {}
  virtual ~Form() = default;
  Form(const Form&) = delete;
  Form& operator=(const Form&) = delete;

  const std::string& op() const { return op_; }      // the Backend launcher it exercises: "rms_norm"
  const std::string& name() const { return name_; }  // "rms_norm/12b-hidden"
  const std::string& dims() const { return dims_; }  // "3840, eps 1e-6, weighted"

  // Gates 1-2 launch these row counts (I1 puts one row into batches of each size); gate 3 launches
  // shape_rows rows at the real shape; gate 4 launches shape_rows rows of each stress kind.
  std::vector<int64_t> batch_rows{1, 2, 5, 16};
  int64_t shape_rows = 3;
  std::vector<Inputs> stresses;
  // False for ops that write only part of an output (kv_write): unwritten elements must then be kept.
  bool writes_every_output = true;

  virtual Call make_call(const CallRequest& request) const = 0;
  // Runs the op entry on device views of the call's inputs and outputs.
  virtual Status launch(ops::Backend& backend, const Call& call, std::span<const TensorView> inputs,
                        std::span<const TensorView> outputs) const = 0;
  // One range per element of each output, from float64 at the op's rounding points.
  virtual std::vector<std::vector<Span>> expected(const Call& call) const = 0;
  // A call made of these rows of other calls, in order.
  virtual Call assemble(std::span<const RowRef> rows) const { return concat_rows(rows); }
  // The output bytes that belong to one row.
  virtual std::vector<OutputBytes> row_bytes(const Call& call, int64_t row) const {
    return row_output_bytes(call, row);
  }

 private:
  std::string op_;
  std::string name_;
  std::string dims_;
};

struct Control {
  std::string name;  // "rms_norm/drop-eps"
  std::string form;  // the form whose inputs, gates and ranges it runs through
  Gate planted = Gate::shapes;
  std::string wrong;  // what the variant does wrong, in one line
  DeviceKind device = DeviceKind::cpu;
  // A backend that forwards everything to `real` except the one launcher it replaces.
  std::function<std::unique_ptr<ops::Backend>(ops::Backend& real)> make_backend;
};

}  // namespace plumb::contract
