// The square layouts: P x P squares in snake order, the first k of them each holding a run of
// consecutive blocks, solved as an exact chain over (squares used, blocks placed).
#include <algorithm>
#include <cmath>
#include <limits>

#include "wavel/baselines/baselines.hpp"
#include "wavel/search/detail/solver.hpp"

namespace wavel::search::detail {

namespace {

using meshir::Rect;

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

std::vector<Point> Solver::square_points(std::int64_t side, const std::vector<Objectives>& incumbents) {
  const int blocks = static_cast<int>(ev_.blocks.size());
  const std::vector<Rect> slots = baselines::square_slots(ev_.wafer, side);
  const int max_slots = std::min(static_cast<int>(slots.size()), blocks);
  std::vector<Point> out;
  if (max_slots < 1) return out;
  const int tunes = static_cast<int>(ev_.tunes.size());
  std::vector<int> types;
  for (const auto& blk : ev_.blocks) types.push_back(blk.type);
  std::sort(types.begin(), types.end());
  types.erase(std::unique(types.begin(), types.end()), types.end());
  const std::int64_t slot_bytes = side * side * ev_.wafer.sram_data_per_pe_bytes();
  for (const auto& blk : ev_.blocks) {
    if (blk.resident_bytes > slot_bytes) {  // a block a square cannot hold
      ++stats_->pruned_sram;
      return out;
    }
  }
  std::vector<TableKey> wanted;
  for (int type : types) {
    for (const int t : ev_.own_placements[static_cast<std::size_t>(type)]) wanted.emplace_back(type, side, side, t);
  }
  ev_.ensure(std::move(wanted));
  // Lower bounds for the incumbent rule: each block at its cheapest TUNE that holds it alone.
  double pass_lb = 0, stage_lb = 0;
  for (int i = 0; i < blocks; ++i) {
    double m = kInf;
    const int type = ev_.blocks[static_cast<std::size_t>(i)].type;
    for (const int t : ev_.own_placements[static_cast<std::size_t>(type)]) {
      const BlockCost& c = ev_.get(type, side, side, t);
      if (c.resident + c.buffers <= ev_.wafer.sram_data_per_pe_bytes()) m = std::min(m, c.cycles);
    }
    pass_lb += m;
    stage_lb = std::max(stage_lb, m);
  }
  if (!std::isfinite(pass_lb)) {
    ++stats_->pruned_sram;
    return out;
  }
  // The fastest fitting TUNE of every block range on one square (all squares are alike).
  const std::size_t n = static_cast<std::size_t>(blocks) + 1;
  std::vector<double> range_cycles(n * n, kInf);
  std::vector<int> range_tune(n * n, -1);
  // Each TUNE's sums grow by one block as b does (the leaf's rule, so no range is summed again).
  std::vector<PlanEvaluator::Impl::LeafSum> sums(static_cast<std::size_t>(tunes));
  for (int a = 0; a < blocks; ++a) {
    std::fill(sums.begin(), sums.end(), PlanEvaluator::Impl::LeafSum{});
    for (int b = a + 1; b <= blocks; ++b) {
      if (resident_prefix_[static_cast<std::size_t>(b)] - resident_prefix_[static_cast<std::size_t>(a)] > slot_bytes) break;
      bool any = false;
      const int type = ev_.blocks[static_cast<std::size_t>(b - 1)].type;
      for (int t = 0; t < tunes; ++t) {
        auto& sum = sums[static_cast<std::size_t>(t)];
        ev_.add_block(sum, b - 1, ev_.get(type, side, side, t));
        ++stats_->tunes_scored;
        if (!ev_.fits(sum)) continue;
        any = true;
        const std::size_t k = static_cast<std::size_t>(a) * n + static_cast<std::size_t>(b);
        if (sum.cycles < range_cycles[k]) {
          range_cycles[k] = sum.cycles;
          range_tune[k] = t;
        }
      }
      if (!any) break;  // more blocks only need more SRAM
      stats_->pruned_tune += tunes - 1;
    }
  }
  // Chain over the slots: states (slots used, blocks placed), each a set of (pass, stage) points
  // sharing their first and last region.
  std::vector<std::vector<Point>> prev(n), next(n);
  prev[0].push_back(Point{});
  for (int k = 1; k <= max_slots; ++k) {
    if (incumbent_beats(pass_lb, stage_lb, k * side * side, incumbents)) {
      stats_->pruned_incumbent += max_slots - k + 1;
      break;
    }
    const Rect& slot = slots[static_cast<std::size_t>(k - 1)];
    for (auto& v : next) v.clear();
    for (int a = 0; a < blocks; ++a) {
      if (prev[static_cast<std::size_t>(a)].empty()) continue;
      for (int b = a + 1; b <= blocks; ++b) {
        const std::size_t r = static_cast<std::size_t>(a) * n + static_cast<std::size_t>(b);
        if (range_tune[r] < 0) break;
        Plan leaf;
        leaf.a = a;
        leaf.b = b;
        leaf.used_w = side;
        leaf.used_h = side;
        leaf.tune = range_tune[r];
        plans_.push_back(leaf);
        const int leaf_id = static_cast<int>(plans_.size()) - 1;
        check_stop();
        for (const Point& p : prev[static_cast<std::size_t>(a)]) {
          Point q;
          q.stage = std::max(p.stage, range_cycles[r]);
          q.entry = k == 1 ? slot : p.entry;
          q.exit = slot;
          q.pes = p.pes + side * side;
          ++stats_->nodes_visited;
          if (k == 1) {
            q.pass = range_cycles[r];
            q.plan = leaf_id;
            q.offset = slot;
          } else {
            q.pass = p.pass + ev_.transfer(slots[static_cast<std::size_t>(k - 2)], slot, a - 1) + range_cycles[r];
            Plan g;
            g.leaf = false;
            g.a = 0;
            g.b = b;
            g.parts[0] = p.plan;
            g.offsets[0] = p.offset;
            g.parts[1] = leaf_id;
            g.offsets[1] = slot;
            plans_.push_back(g);
            q.plan = static_cast<int>(plans_.size()) - 1;
            q.offset = Rect{0, 0, ev_.wafer.grid_w_pes, ev_.wafer.grid_h_pes};
          }
          next[static_cast<std::size_t>(b)].push_back(q);
        }
      }
    }
    for (int b = 1; b <= blocks; ++b) {
      auto& v = next[static_cast<std::size_t>(b)];
      if (!opt_.exhaustive) v = filter(std::move(v), 0, b, false);
    }
    std::vector<Point> complete = next[static_cast<std::size_t>(blocks)];
    add_crossings(complete);
    out.insert(out.end(), complete.begin(), complete.end());
    std::swap(prev, next);
  }
  return out;
}

double Solver::square_tree_log10(std::int64_t side) {
  const int blocks = static_cast<int>(ev_.blocks.size());
  const int max_slots = std::min(static_cast<int>(baselines::square_slots(ev_.wafer, side).size()), blocks);
  const double tunes = std::log10(static_cast<double>(ev_.tunes.size()));
  std::vector<double> prev(static_cast<std::size_t>(blocks) + 1, -kInf), next(prev.size());
  prev[0] = 0;
  double nodes = -kInf;
  for (int k = 1; k <= max_slots; ++k) {
    std::fill(next.begin(), next.end(), -kInf);
    for (int a = 0; a < blocks; ++a) {
      if (prev[static_cast<std::size_t>(a)] == -kInf) continue;
      for (int b = a + 1; b <= blocks; ++b) {
        next[static_cast<std::size_t>(b)] = log10_add(next[static_cast<std::size_t>(b)], prev[static_cast<std::size_t>(a)] + tunes);
      }
    }
    for (double v : next) nodes = log10_add(nodes, v);
    std::swap(prev, next);
  }
  return nodes;
}

}  // namespace wavel::search::detail
