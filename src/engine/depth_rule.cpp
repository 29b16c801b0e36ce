#include "engine/depth_rule.hpp"

#include <algorithm>

namespace plumb::engine {

namespace {

constexpr double kDecay = 0.95;  // recent rounds and proposals count most: costs and texts change

}  // namespace

void RoundCost::observe(int64_t rows, double seconds) {
  const auto x = static_cast<double>(rows);
  weight_ = weight_ * kDecay + 1.0;
  rows_ = rows_ * kDecay + x;
  seconds_ = seconds_ * kDecay + seconds;
  rows_sq_ = rows_sq_ * kDecay + x * x;
  rows_seconds_ = rows_seconds_ * kDecay + x * seconds;
}

double RoundCost::per_row() const {
  if (weight_ <= 0.0) return 1.0;
  const double mean_rows = rows_ / weight_, mean_seconds = seconds_ / weight_;
  const double variance = rows_sq_ / weight_ - mean_rows * mean_rows;
  const double covariance = rows_seconds_ / weight_ - mean_rows * mean_seconds;
  // Without spread in row counts the split is unknown: assume half the time is per row.
  const double slope =
      variance > 0.25 ? covariance / variance : 0.5 * mean_seconds / std::max(mean_rows, 1.0);
  return std::clamp(slope, 1e-3 * mean_seconds / std::max(mean_rows, 1.0),
                    mean_seconds / std::max(mean_rows, 1.0));
}

double RoundCost::fixed() const {
  if (weight_ <= 0.0) return 1.0;
  const double mean_rows = rows_ / weight_, mean_seconds = seconds_ / weight_;
  return std::max(0.0, mean_seconds - per_row() * mean_rows);
}

void Acceptance::observe(int proposed, int accepted) {
  successes_ = successes_ * kDecay + accepted;
  failures_ = failures_ * kDecay + (accepted < proposed ? 1.0 : 0.0);
}

double Acceptance::rate() const {
  return (successes_ + 1.0) / (successes_ + failures_ + 2.0);
}

int choose_depth(double acceptance, const RoundCost& cost, int64_t streams, int most) {
  const double fixed_share = cost.fixed() / static_cast<double>(std::max<int64_t>(streams, 1));
  const double per_row = cost.per_row();
  int best = 0;
  double best_value = 0.0, expected = 0.0, power = 1.0;
  for (int depth = 0; depth <= most; ++depth) {
    expected += power;
    power *= acceptance;
    const double value = expected / (fixed_share + per_row * (1.0 + depth));
    if (value > best_value) {
      best_value = value;
      best = depth;
    }
  }
  return best;
}

}  // namespace plumb::engine
