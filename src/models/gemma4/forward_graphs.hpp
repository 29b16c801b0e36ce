#pragma once
// Decode-sized forwards as graphs that replay unchanged. A forward's launches are fixed by its signature: the
// kept tensors it works in, its row count, each chunk's rows, logits and draw choice and cache addresses, and
// the attention end bucket (ops::attention_end_bucket). Only the values uploaded into the kept tensors (ids,
// positions, draw options) differ from step to step. The first forward with a signature runs its ops as they
// come, the second is recorded as a graph under the signature's key, and later ones replay that graph.
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "models/gemma4/forward_tensors.hpp"

namespace plumb::gemma4 {

class ForwardGraphs {
 public:
  // Forwards of up to this many rows (decode steps, verify rounds) run as graphs: their launches cost more
  // than their work. Longer prompts gain nothing from a graph and would record one per length.
  static constexpr int64_t kGraphRows = 128;
  // Tensor sets kept (one per row shape; 192 MiB at 128 rows of a 262,144-token vocabulary) and signatures
  // remembered; the least recently used goes first.
  static constexpr size_t kKeptTensorSets = 4;
  static constexpr size_t kKeptSignatures = 256;

  struct Kept {
    ForwardTensors tensors;
    int64_t generation = 0;  // unique per allocation, so a signature names these tensors and no later ones
  };
  // The kept tensors for this row shape, allocated on first use.
  Result<Kept*> tensors(ops::Backend& backend, const Config& config, int64_t rows, int64_t logit_rows,
                        int64_t draw_rows);

  struct Plan {
    int64_t key = 0;           // the graph key of this signature, never reused in the process: every model on
                               // a backend (a drafter beside its target, a reloaded model) shares its graphs
    bool seen_before = false;  // a forward with this signature ran before
  };
  Plan plan(const std::vector<int64_t>& signature);

 private:
  struct Shape {
    int64_t rows, logit_rows, draw_rows;
    auto operator<=>(const Shape&) const = default;
  };
  struct KeptSet {
    std::unique_ptr<Kept> kept;
    uint64_t last_use = 0;
  };
  struct Known {
    int64_t key = 0;
    uint64_t last_use = 0;
  };

  std::map<Shape, KeptSet> sets_;
  std::map<std::vector<int64_t>, Known> signatures_;
  uint64_t clock_ = 0;
  int64_t next_generation_ = 1;
};

}  // namespace plumb::gemma4
