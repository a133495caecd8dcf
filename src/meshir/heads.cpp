// Split heads: a prefill attention section's head groups, each on its own cell of the leaf, in the
// same steps. WaferLLM's prefill runs every head's Q.K^T and P.V as one MeshGEMM over the whole
// square (features of all heads along X), so each step's k-loop walks heads x head_dim / P rows of
// 3-token tiles; a cell of side P / sqrt(G) holding H / G heads has a ring G^(1/2) times shorter,
// tiles as many times taller, and H d / (G^(1/2) P) k-rows per step.
#include <algorithm>
#include <functional>

#include "detail/placer_layouts.hpp"
#include "wavel/meshir/placer.hpp"

namespace wavel::meshir {

using workload::OpKind;
using namespace detail;

namespace {

bool reads(const workload::Op& op, std::size_t producer) {
  return std::find(op.inputs.begin(), op.inputs.end(), static_cast<int>(producer)) != op.inputs.end();
}

// Group g's share of an attention op: H / G query heads and their KV heads (a KV head that several
// groups share is copied to each).
workload::Op head_share(const workload::Op& op, std::int64_t groups) {
  workload::Op o = op;
  o.heads = op.heads / groups;
  o.batch = op.batch / groups;
  o.flops = op.flops / groups;
  o.input_bytes = op.input_bytes / groups;
  o.output_bytes = op.output_bytes / groups;
  o.weight_bytes = op.weight_bytes / groups;
  if (op.kv_heads > 0) {
    o.kv_heads = std::max<std::int64_t>(1, op.kv_heads / groups);
    o.kv_cache_bytes = op.kv_cache_bytes / op.kv_heads * o.kv_heads;
  }
  return o;
}

}  // namespace

int attention_section(const workload::Layer& block) {
  const auto& ops = block.ops;
  for (std::size_t i = 0; i + 2 < ops.size(); ++i) {
    if (ops[i].kind == OpKind::attn_scores && ops[i].heads > 0 && ops[i + 1].kind == OpKind::softmax &&
        ops[i + 2].kind == OpKind::attn_values && reads(ops[i + 1], i) && reads(ops[i + 2], i + 1)) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

bool splits_heads(const workload::Layer& block, bool decode, std::int64_t groups) {
  if (decode || groups < 2) return false;
  const int first = attention_section(block);
  if (first < 0) return false;
  for (std::size_t k = 0; k < 3; ++k) {
    const workload::Op& op = block.ops[static_cast<std::size_t>(first) + k];
    if (op.heads % groups != 0 || op.batch % groups != 0) return false;
  }
  return true;
}

std::vector<Rect> head_cells(const Rect& used, std::int64_t groups) {
  std::int64_t best_gx = 0, best_side = 0;
  for (std::int64_t gx = 1; gx <= groups; ++gx) {
    if (groups % gx != 0) continue;
    const std::int64_t gy = groups / gx;
    if (gx > used.w || gy > used.h) continue;
    const std::int64_t side = std::max((used.w + gx - 1) / gx, (used.h + gy - 1) / gy);
    if (best_gx == 0 || side < best_side) {
      best_gx = gx;
      best_side = side;
    }
  }
  std::vector<Rect> cells;
  if (best_gx == 0) return cells;
  const std::int64_t gx = best_gx, gy = groups / best_gx;
  for (std::int64_t cy = 0; cy < gy; ++cy) {
    const std::int64_t y0 = used.h * cy / gy, y1 = used.h * (cy + 1) / gy;
    for (std::int64_t cx = 0; cx < gx; ++cx) {
      const std::int64_t x0 = used.w * cx / gx, x1 = used.w * (cx + 1) / gx;
      cells.push_back(Rect{used.x + x0, used.y + y0, x1 - x0, y1 - y0});
    }
  }
  return cells;
}

void Placer::place_heads(const workload::Layer& block, std::size_t first, const std::function<int(int)>& resolve,
                         std::vector<int>& placed, int region, const Rect used, const std::vector<Rect>& cells,
                         int stage, const Tune& tune) {
  // `used` by value: the cells below grow s_.regions, which a caller's reference may point into.
  const std::int64_t groups = tune.head_groups;
  const workload::Op& scores = block.ops[first];
  const workload::Op& softmax = block.ops[first + 1];
  const workload::Op& values = block.ops[first + 2];
  const workload::Op scores_g = head_share(scores, groups), softmax_g = head_share(softmax, groups),
                     values_g = head_share(values, groups);
  // What enters the section from before it: Q (the scores' input) and the K and V it attends to.
  std::vector<int> entering;
  for (const workload::Op* op : {&scores, &values}) {
    for (const int in : op->inputs) {
      if (in >= 0 && static_cast<std::size_t>(in) >= first && static_cast<std::size_t>(in) < first + 3) continue;
      const int r = resolve(in);
      if (r >= 0 && std::find(entering.begin(), entering.end(), r) == entering.end()) entering.push_back(r);
    }
  }
  const std::int64_t in_bytes = scores_g.input_bytes + scores_g.kv_cache_bytes + values_g.kv_cache_bytes;
  std::vector<int> cell_regions;
  for (const Rect& c : cells) cell_regions.push_back(cell_region(c, region));
  const auto name = [&](const std::string& what, std::size_t g) {
    return named_ ? block.name + "." + what + ".h" + std::to_string(g) : std::string();
  };
  const auto move = [&](std::size_t g, bool in) {
    PlacedOp t;
    t.name = name(in ? "heads_in" : "heads_out", g);
    t.kernel = Kernel::transfer;
    t.stage = stage;
    t.region = in ? region : cell_regions[g];
    t.used = in ? used : cells[g];
    t.to_region = in ? cell_regions[g] : region;
    t.work.input_bytes = t.work.output_bytes = in ? in_bytes : values_g.output_bytes;
    return t;
  };
  // One step: each cell's heads of Q, K and V, from the leaf to the cell.
  std::vector<int> arrived(cells.size());
  for (std::size_t g = 0; g < cells.size(); ++g) {
    PlacedOp t = move(g, true);
    t.in_layout = entering.empty() ? prefill_layout(used) : s_.ops[static_cast<std::size_t>(entering.front())].out_layout;
    t.out_layout = prefill_layout(cells[g]);
    t.inputs = entering;
    arrived[g] = add(std::move(t), g > 0);
  }
  // Scores, softmax and values: one step each, every cell at once.
  std::vector<int> last(cells.size());
  for (std::size_t g = 0; g < cells.size(); ++g) {
    last[g] = place_op(scores_g, name(scores.name, g), cell_regions[g], cells[g], stage, tune, {arrived[g]}, g > 0);
  }
  for (std::size_t g = 0; g < cells.size(); ++g) {
    last[g] = place_op(softmax_g, name(softmax.name, g), cell_regions[g], cells[g], stage, tune, {last[g]}, g > 0);
  }
  for (std::size_t g = 0; g < cells.size(); ++g) {
    last[g] = place_op(values_g, name(values.name, g), cell_regions[g], cells[g], stage, tune, {last[g], arrived[g]}, g > 0);
  }
  // One step: each cell's output back to the leaf, in the leaf's layout.
  int out = -1;
  for (std::size_t g = 0; g < cells.size(); ++g) {
    PlacedOp t = move(g, false);
    t.in_layout = s_.ops[static_cast<std::size_t>(last[g])].out_layout;
    t.out_layout = prefill_layout(used);
    t.inputs = {last[g]};
    const int at = add(std::move(t), g > 0);
    if (g == 0) out = at;
  }
  for (std::size_t k = 0; k < 3; ++k) placed[first + k] = out;
}

int Placer::cell_region(const Rect& cell, int leaf) {
  for (std::size_t r = s_.regions.size(); r-- > 0;) {
    if (s_.regions[r] == cell && static_cast<int>(r) != leaf) return static_cast<int>(r);
  }
  s_.regions.push_back(cell);
  return static_cast<int>(s_.regions.size()) - 1;
}

}  // namespace wavel::meshir
