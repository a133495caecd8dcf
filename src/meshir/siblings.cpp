// Sibling branches: a merged matmul's products (Q/K/V, gate/up, MLA's projections) side by side on
// strips of the leaf, in one step. A decode GEMV's K-tree runs along the axis holding its input
// features; cut along that axis, each product reduces over a line as much shorter as its share of
// the width, at the price of multicasting the input to the strips and bringing the outputs back.
// A prefill MeshGEMM's ring is as long as its rectangle's longer side, so prefill cuts that side.
#include <algorithm>
#include <limits>

#include "detail/placer_layouts.hpp"
#include "wavel/meshir/placer.hpp"

namespace wavel::meshir {

using workload::OpKind;
using namespace detail;

namespace {

__extension__ using Wide = __int128;  // products of two int64 values

// floor(value x part / whole) for 0 <= part <= whole, with no overflow on the way.
std::int64_t share_of(std::int64_t value, std::int64_t part, std::int64_t whole) {
  if (whole <= 0) return 0;
  return static_cast<std::int64_t>(Wide{value} * part / whole);
}

}  // namespace

bool splits_siblings(const workload::Op& op) {
  return op.kind == OpKind::matmul && op.merged.size() > 1 && op.inputs.size() == 1;
}

bool has_sibling_branches(const workload::Layer& block) {
  return std::any_of(block.ops.begin(), block.ops.end(), splits_siblings);
}

std::vector<Rect> sibling_strips(const Rect& used, const std::vector<workload::Op::Part>& parts, Axis axis) {
  const std::int64_t side = axis == Axis::x ? used.w : used.h;
  const auto count = static_cast<std::int64_t>(parts.size());
  Wide total = 0;
  for (const auto& p : parts) {
    if (p.n < 1) return {};
    total += p.n;
  }
  if (total > std::numeric_limits<std::int64_t>::max()) return {};  // no merged op of a real model
  std::vector<Rect> strips;
  if (count < 2 || side < count) return strips;
  std::int64_t lo = 0, before = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    before += parts[static_cast<std::size_t>(i)].n;
    // The cumulative share of the side, rounded, leaving at least one PE to each strip on both sides.
    const std::int64_t hi =
        i + 1 == count ? side : std::clamp(share_of(side, before, static_cast<std::int64_t>(total)), lo + 1, side - (count - 1 - i));
    strips.push_back(axis == Axis::x ? Rect{used.x + lo, used.y, hi - lo, used.h} : Rect{used.x, used.y + lo, used.w, hi - lo});
    lo = hi;
  }
  return strips;
}

int Placer::place_siblings(const workload::Op& op, const std::string& block_name, int input, int region,
                           const Rect used, int stage, const Tune& tune) {
  // `used` by value: the strips below grow s_.regions, which a caller's reference may point into.
  if (input < 0 || !splits_siblings(op)) return -1;
  const Layout incoming = s_.ops[static_cast<std::size_t>(input)].out_layout;
  const Axis axis = decode_ ? features_axis(incoming) : (used.w >= used.h ? Axis::x : Axis::y);
  const std::vector<Rect> strips = sibling_strips(used, op.merged, axis);
  if (strips.empty()) return -1;
  const std::int64_t input_bytes = s_.ops[static_cast<std::size_t>(input)].work.output_bytes;
  const auto layout_on = [&](const Rect& r) { return decode_ ? features_on(axis, r) : prefill_layout(r); };
  const auto name = [&](std::size_t p, const char* what) {
    return named_ ? block_name + "." + op.merged[p].name + what : std::string();
  };
  const auto move = [&](std::size_t p, int from, int from_region, Rect from_used, int to_region,
                        const Layout& out, std::int64_t bytes, const char* what) {
    PlacedOp t;
    t.name = name(p, what);
    t.kernel = Kernel::transfer;
    t.stage = stage;
    t.region = from_region;
    t.used = from_used;
    t.to_region = to_region;
    t.in_layout = s_.ops[static_cast<std::size_t>(from)].out_layout;
    t.out_layout = out;
    t.inputs = {from};
    t.work.input_bytes = t.work.output_bytes = bytes;
    return add(std::move(t), p > 0);
  };
  std::vector<int> strip_regions;
  for (const Rect& r : strips) strip_regions.push_back(cell_region(r, region));
  // One step: the input multicast to every strip, laid out as the product there reads it.
  std::vector<int> last(strips.size());
  for (std::size_t p = 0; p < strips.size(); ++p) {
    last[p] = move(p, input, region, used, strip_regions[p], layout_on(strips[p]), input_bytes, ".sibling_in");
  }
  // One step: every product on its strip, each its own reduction.
  for (std::size_t p = 0; p < strips.size(); ++p) {
    workload::Op part = op;
    const std::int64_t n = op.merged[p].n;
    part.n = n;
    part.flops = share_of(op.flops, n, op.n);
    part.weight_bytes = share_of(op.weight_bytes, n, op.n);
    part.output_bytes = share_of(op.output_bytes, n, op.n);
    part.fused = 1;
    part.merged.clear();
    last[p] = place_op(part, name(p, ".sibling"), strip_regions[p], strips[p], stage, tune, {last[p]}, p > 0);
  }
  // One step: every output back to the leaf, in the layout the merged product would have left there.
  const Layout back = decode_ ? features_on(flip(axis), used) : prefill_layout(used);
  int out = -1;
  for (std::size_t p = 0; p < strips.size(); ++p) {
    const PlacedOp& product = s_.ops[static_cast<std::size_t>(last[p])];
    const int at = move(p, last[p], product.region, product.used, region, back, product.work.output_bytes, ".sibling_out");
    if (p == 0) out = at;
  }
  return out;
}

}  // namespace wavel::meshir
