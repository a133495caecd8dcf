// The SRAM each PE of a region holds: its ops' resident bytes and buffers, and what overlapping
// regions (an expert CUT's strips inside their block's region) keep on the same PEs.
#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "detail/saturating.hpp"
#include "wavel/meshir/kernels.hpp"
#include "wavel/meshir/verify.hpp"

namespace wavel::meshir {
using namespace detail;

std::int64_t RegionSram::total_bytes() const { return saturating_add(resident_bytes, buffer_bytes); }

RegionSram op_sram_per_pe(const OpWork& work, std::int64_t weight_copies, std::int64_t pes) {
  RegionSram use;
  if (pes < 1) return use;
  const std::int64_t bytes = saturating_add(non_negative(work.weight_bytes), non_negative(work.kv_cache_bytes));
  use.resident_bytes = ceil_div(saturating_mul(bytes, at_least_one(weight_copies)), pes);
  std::int64_t io = saturating_add(non_negative(work.input_bytes), non_negative(work.output_bytes));
  // Attention is computed one head at a time per PE (flash-style tiling): only one head's score
  // and probability tiles are in flight, never every head's score matrix at once.
  if (work.heads > 1) io = ceil_div(io, work.heads);
  use.buffer_bytes = saturating_mul(ceil_div(io, pes), 2);
  return use;
}

namespace {

// Each region's own ops, in one pass over the schedule.
std::vector<RegionSram> own_sram(const Schedule& schedule) {
  std::vector<RegionSram> use(schedule.regions.size());
  for (const PlacedOp& op : schedule.ops) {
    if (op.region < 0 || static_cast<std::size_t>(op.region) >= use.size() || op.used.w < 1 || op.used.h < 1) continue;
    const std::int64_t copies = saturating_mul(at_least_one(op.in_layout.repl_x), at_least_one(op.in_layout.repl_y));
    OpWork work = op.work;
    if (holds_no_weights(op.kernel)) work.weight_bytes = work.kv_cache_bytes = 0;
    const RegionSram one = op_sram_per_pe(work, copies, saturating_mul(op.used.w, op.used.h));
    RegionSram& u = use[static_cast<std::size_t>(op.region)];
    u.resident_bytes = saturating_add(u.resident_bytes, one.resident_bytes);
    u.buffer_bytes = std::max(u.buffer_bytes, one.buffer_bytes);
  }
  return use;
}

// The largest sum of weights at any point covered by the boxes [x0, x1) x [y0, y1): a sweep over x
// with a segment tree over the distinct y ends (range add, maximum), O(n log n) for n boxes, so that
// a file with many overlapping regions cannot make the check run away.
struct Box {
  std::int64_t x0, x1, y0, y1, weight;
};
std::int64_t deepest_point(const std::vector<Box>& boxes) {
  __extension__ using Wide = __int128;  // sums of up to n values below 2^63
  std::vector<std::int64_t> ys;
  for (const Box& b : boxes) ys.insert(ys.end(), {b.y0, b.y1});
  std::sort(ys.begin(), ys.end());
  ys.erase(std::unique(ys.begin(), ys.end()), ys.end());
  if (ys.size() < 2) return 0;
  const std::size_t slots = ys.size() - 1;  // [ys[i], ys[i+1])
  std::vector<Wide> added(4 * slots, 0), best(4 * slots, 0);
  // Adds `w` to slots [lo, hi) under node covering [node_lo, node_hi).
  auto add = [&](auto&& self, std::size_t node, std::size_t node_lo, std::size_t node_hi, std::size_t lo,
                 std::size_t hi, Wide w) -> void {
    if (hi <= node_lo || node_hi <= lo) return;
    if (lo <= node_lo && node_hi <= hi) {
      added[node] += w;
      best[node] += w;
      return;
    }
    const std::size_t mid = (node_lo + node_hi) / 2;
    self(self, 2 * node, node_lo, mid, lo, hi, w);
    self(self, 2 * node + 1, mid, node_hi, lo, hi, w);
    best[node] = added[node] + std::max(best[2 * node], best[2 * node + 1]);
  };
  struct Event {
    std::int64_t x;
    std::size_t box;
    bool starts;
  };
  std::vector<Event> events;
  for (std::size_t i = 0; i < boxes.size(); ++i) events.insert(events.end(), {{boxes[i].x0, i, true}, {boxes[i].x1, i, false}});
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.x < b.x; });
  const auto slot = [&](std::int64_t y) { return static_cast<std::size_t>(std::lower_bound(ys.begin(), ys.end(), y) - ys.begin()); };
  Wide deepest = 0;
  for (std::size_t e = 0; e < events.size();) {
    const std::int64_t x = events[e].x;
    for (; e < events.size() && events[e].x == x; ++e) {  // every box starting or ending at x, then the slab
      const Box& b = boxes[events[e].box];
      add(add, 1, 0, slots, slot(b.y0), slot(b.y1), events[e].starts ? Wide{b.weight} : -Wide{b.weight});
    }
    deepest = std::max(deepest, best[1]);
  }
  return deepest > int64_max ? int64_max : static_cast<std::int64_t>(deepest);
}

// A PE of `region` also keeps what every other region covering it keeps (the expert CUT's strips lie
// inside their block's region): add the load of the most loaded point of the overlap.
RegionSram with_overlaps(const Schedule& schedule, const std::vector<RegionSram>& own, std::size_t region) {
  RegionSram use = own[region];
  const Rect& mine = schedule.regions[region];
  std::vector<Box> boxes;
  for (std::size_t q = 0; q < schedule.regions.size(); ++q) {
    const Rect& r = schedule.regions[q];
    if (q == region || wafer_of(schedule, static_cast<int>(q)) != wafer_of(schedule, static_cast<int>(region)) ||
        !overlap(mine, r)) {
      continue;
    }
    use.buffer_bytes = std::max(use.buffer_bytes, own[q].buffer_bytes);
    boxes.push_back(Box{std::max(r.x, mine.x), std::min(end_of(r.x, r.w), end_of(mine.x, mine.w)),
                        std::max(r.y, mine.y), std::min(end_of(r.y, r.h), end_of(mine.y, mine.h)),
                        own[q].resident_bytes});
  }
  use.resident_bytes = saturating_add(use.resident_bytes, deepest_point(boxes));
  return use;
}

}  // namespace

RegionSram region_sram_per_pe(const Schedule& schedule, int region) {
  if (region < 0 || static_cast<std::size_t>(region) >= schedule.regions.size()) {
    throw InternalError("region_sram_per_pe: region " + std::to_string(region) + " out of range (" +
                        std::to_string(schedule.regions.size()) + " regions)");
  }
  return with_overlaps(schedule, own_sram(schedule), static_cast<std::size_t>(region));
}

std::int64_t resident_bytes_per_pe(const Schedule& schedule, int region) {
  return region_sram_per_pe(schedule, region).total_bytes();
}

std::vector<RegionSram> region_sram_per_pe_all(const Schedule& schedule) {
  const auto own = own_sram(schedule);
  std::vector<RegionSram> use;
  use.reserve(own.size());
  for (std::size_t r = 0; r < own.size(); ++r) use.push_back(with_overlaps(schedule, own, r));
  return use;
}

std::int64_t resident_bytes_per_pe_max(const Schedule& schedule) {
  std::int64_t most = 0;
  for (const RegionSram& use : region_sram_per_pe_all(schedule)) most = std::max(most, use.total_bytes());
  return most;
}

}  // namespace wavel::meshir
