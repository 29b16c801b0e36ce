#pragma once
// How many drafts a stream proposes: the depth d that maximizes expected committed tokens per unit of cost,
//   E(d) = 1 + a + a^2 + ... + a^d   (a: the stream's measured chance that the next draft is accepted)
//   C(d) = fixed / streams + per_row * (1 + d)   (a round's time fitted as fixed + per_row * rows)
// so drafts grow deep where the forward is bound by weight reads (the GPU) and acceptance is high, and shrink
// to none where each row costs about the same as a round (the CPU) or drafts keep failing.
#include <cstdint>

namespace plumb::engine {

// A round's measured time against its row count, fitted as fixed + per_row * rows with decaying weights.
class RoundCost {
 public:
  void observe(int64_t rows, double seconds);
  double fixed() const;    // seconds per round independent of rows
  double per_row() const;  // seconds per row
  bool measured() const { return weight_ > 0.0; }

 private:
  double weight_ = 0.0, rows_ = 0.0, seconds_ = 0.0, rows_sq_ = 0.0, rows_seconds_ = 0.0;
};

// One stream's acceptance: accepted drafts are successes, a rejected draft ends a proposal as a failure.
class Acceptance {
 public:
  void observe(int proposed, int accepted);
  double rate() const;  // a = (successes + 1) / (successes + failures + 2)

 private:
  double successes_ = 0.0, failures_ = 0.0;
};

// The depth in [0, most] with the best E(d) / C(d); `streams` share the round's fixed cost.
int choose_depth(double acceptance, const RoundCost& cost, int64_t streams, int most);

}  // namespace plumb::engine
