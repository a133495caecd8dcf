// Kernel choice per op kind and phase, layout propagation (decode GEMVs alternate their allreduce
// axis, prefill keeps sequence on Y and features on X), re-layouts and transfers.
#include "wavel/meshir/placer.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "detail/placer_layouts.hpp"
#include "wavel/meshir/verify.hpp"

namespace wavel::meshir {

namespace {

using workload::OpKind;
using namespace detail;

Kernel kernel_for(OpKind kind, bool decode) {
  switch (kind) {
    case OpKind::embedding: return Kernel::lookup;
    case OpKind::norm:
    case OpKind::softmax: return Kernel::allreduce;
    case OpKind::matmul:
    case OpKind::router:
    case OpKind::expert_matmul:
    case OpKind::lm_head:
    case OpKind::attn_values: return decode ? Kernel::meshgemv : Kernel::meshgemm;
    case OpKind::attn_scores: return decode ? Kernel::meshgemv : Kernel::gemm_t;
    case OpKind::rope:
    case OpKind::activation:
    case OpKind::residual: return Kernel::elementwise;
    case OpKind::kv_append: return Kernel::kv_shift;
    case OpKind::moe_dispatch: return Kernel::moe_dispatch;
    case OpKind::moe_combine: return Kernel::moe_combine;
  }
  return Kernel::elementwise;
}

}  // namespace

std::int64_t tree_group_for(const PlacedOp& op, const Tune& tune) {
  if (op.kernel != Kernel::allreduce && op.kernel != Kernel::meshgemv) return 0;
  return op.reduce_axis == Axis::x ? tree_group(op.used.w, tune.group_scale_x) : tree_group(op.used.h, tune.group_scale_y);
}

void regroup(Schedule& s, const Tune& tune) {
  for (PlacedOp& op : s.ops) op.group = tree_group_for(op, tune);
}

std::int64_t tree_group(std::int64_t pes, double scale) {
  const auto g = std::llround(scale * std::sqrt(static_cast<double>(pes)));
  return std::clamp<std::int64_t>(g, 1, std::max<std::int64_t>(1, pes));
}

std::vector<Tune> with_kinds(std::vector<Tune> tunes, bool fuse, bool split, bool branches) {
  for (const auto& [on, set] : {std::pair<bool, bool Tune::*>{fuse, &Tune::fuse},
                                {split, &Tune::split_epilogues},
                                {branches, &Tune::concurrent_branches}}) {
    if (!on) continue;
    const std::size_t before = tunes.size();
    for (std::size_t i = 0; i < before; ++i) {
      Tune t = tunes[i];
      t.*set = true;
      tunes.push_back(t);
    }
  }
  return tunes;
}

bool splits_epilogue(const workload::Op& op, bool decode) {
  return decode && op.scalar_elements > 0 && kernel_for(op.kind, decode) == Kernel::elementwise;
}

bool has_split_epilogue(const workload::Layer& block, bool decode) {
  return std::any_of(block.ops.begin(), block.ops.end(),
                     [decode](const workload::Op& op) { return splits_epilogue(op, decode); });
}

std::vector<std::size_t> beside_routed(const workload::Layer& block, std::size_t dispatch, std::size_t combine) {
  const std::size_t n = block.ops.size();
  if (dispatch > combine || combine >= n) return {};
  // Ops that read the section, directly or through another such op.
  std::vector<char> after_section(n, 0);
  for (std::size_t k = dispatch; k <= combine; ++k) after_section[k] = 1;
  std::vector<std::size_t> branch;
  std::vector<char> in_branch(n, 0);
  for (std::size_t j = combine + 1; j < n; ++j) {
    for (const int in : block.ops[j].inputs) {
      if (in >= 0 && static_cast<std::size_t>(in) < n && after_section[static_cast<std::size_t>(in)]) after_section[j] = 1;
    }
    if (after_section[j] == 0) {
      branch.push_back(j);
      in_branch[j] = 1;
    }
  }
  if (branch.empty()) return {};
  // One value enters (from before the section: every op after it is in the branch or reads it).
  int entering = 0;
  bool one_value = true;
  for (const std::size_t j : branch) {
    for (const int in : block.ops[j].inputs) {
      if (in >= 0 && static_cast<std::size_t>(in) < n && in_branch[static_cast<std::size_t>(in)] != 0) continue;
      if (entering == 0 || entering == in + 2) {
        entering = in + 2;  // 0: none yet; the layer input (-1) is 1
      } else {
        one_value = false;
      }
    }
  }
  // Only the last op's output leaves.
  for (std::size_t j = 0; j < n && one_value; ++j) {
    if (in_branch[j] != 0) continue;
    for (const int in : block.ops[j].inputs) {
      const bool from_branch = in >= 0 && static_cast<std::size_t>(in) < n && in_branch[static_cast<std::size_t>(in)] != 0;
      if (from_branch && static_cast<std::size_t>(in) != branch.back()) one_value = false;
    }
  }
  if (!one_value || entering == 0) return {};
  return branch;
}

bool has_concurrent_branch(const workload::Layer& block) {
  for (std::size_t i = 0; i < block.ops.size(); ++i) {
    if (block.ops[i].kind != OpKind::moe_dispatch || block.ops[i].experts < 2) continue;
    for (std::size_t c = i + 1; c < block.ops.size(); ++c) {
      if (block.ops[c].kind == OpKind::moe_combine) return !beside_routed(block, i, c).empty();
    }
  }
  return false;
}

OpWork work_of(const workload::Op& op) {
  OpWork w;
  static_cast<workload::OpFigures&>(w) = op;
  return w;
}

int Placer::append(PlacedOp op) {
  op.step = next_step_++;
  s_.ops.push_back(std::move(op));
  return static_cast<int>(s_.ops.size()) - 1;
}

int Placer::add(PlacedOp op, bool same_step) {
  if (!same_step) return append(std::move(op));
  op.step = next_step_ - 1;
  s_.ops.push_back(std::move(op));
  return static_cast<int>(s_.ops.size()) - 1;
}

int Placer::relayout(int producer, const Layout& target, const std::string& consumer) {
  const PlacedOp& p = s_.ops[static_cast<std::size_t>(producer)];
  PlacedOp r;
  if (named_) r.name = p.name + ".relayout-for." + consumer;
  r.kernel = Kernel::relayout;
  r.region = p.region;
  r.used = p.used;
  r.in_layout = p.out_layout;
  r.out_layout = target;
  r.stage = p.stage;
  r.inputs = {producer};
  r.work.input_bytes = p.work.output_bytes;
  r.work.output_bytes = p.work.output_bytes;
  return append(std::move(r));
}

void Placer::move_input_to(int region, const Rect& used, int stage, const Tune& tune) {
  if (block_input_ < 0) return;
  const PlacedOp& p = s_.ops[static_cast<std::size_t>(block_input_)];
  if (p.region == region) return;
  PlacedOp t;
  if (named_) t.name = "xfer." + std::to_string(p.region) + "-" + std::to_string(region) + "." + std::to_string(s_.ops.size());
  t.kernel = Kernel::transfer;
  t.region = p.region;
  t.used = p.used;
  t.to_region = region;
  t.in_layout = p.out_layout;
  // The transfer re-maps on the way, so the activation enters in the layout the region was tuned for.
  t.out_layout = decode_ ? features_on(tune.entry_features, used) : prefill_layout(used);
  t.stage = stage;
  t.inputs = {block_input_};
  t.work.input_bytes = p.work.output_bytes;
  t.work.output_bytes = p.work.output_bytes;
  block_input_ = append(std::move(t));
}

int Placer::place_op(const workload::Op& op, const std::string& name, int region, const Rect& used, int stage,
                     const Tune& tune, const std::vector<int>& inputs, bool same_step, bool gather_now) {
  PlacedOp p;
  p.name = name;
  p.kernel = kernel_for(op.kind, decode_);
  p.region = region;
  p.used = used;
  p.stage = stage;
  p.work = work_of(op);
  // Prefill's routed rows multiply their own experts' weights: a MeshGEMM per expert, one after
  // another, on the region that holds a slice of every expert (decode's GEMV rows each read their
  // expert's slice in place, at the same cost as one matrix).
  if (op.kind == OpKind::expert_matmul && !decode_ && op.experts > 1) {
    p.work.products = op.experts;
    // Skewed routing: each expert's own rows (an expert CUT's strips set their experts' instead).
    if (routing_.skew != 0) {
      p.work.product_rows = workload::expert_rows(routing_, op.experts, op.m, op.m / std::max<std::int64_t>(1, op.experts_per_token));
    }
  }
  if (op.kind == OpKind::softmax) p.rounds = 2;  // max, then sum
  if (op.heads > 0) {
    p.attention = op.kind == OpKind::attn_scores ? AttentionRole::scores
                  : op.kind == OpKind::softmax   ? AttentionRole::softmax
                                                 : AttentionRole::values;
  }
  // The first input that exists decides the layout; others are re-laid out to match.
  const int primary = inputs.empty() ? -1 : inputs.front();
  const bool split = tune.split_epilogues && splits_epilogue(op, decode_) && used.w > 1 && used.h > 1;
  const Layout incoming = primary >= 0 ? s_.ops[static_cast<std::size_t>(primary)].out_layout
                                       : (decode_ ? features_on(tune.entry_features, used) : prefill_layout(used));
  if (!decode_) {
    p.in_layout = prefill_layout(used);
    p.out_layout = p.in_layout;
    if (p.kernel == Kernel::allreduce) p.reduce_axis = Axis::x;  // features lie on X in prefill
  } else if (p.kernel == Kernel::meshgemv) {
    // Reduce along the axis that holds the input features; the output lies on the other axis, so
    // consecutive GEMVs alternate X and Y with no re-shuffle.
    p.reduce_axis = features_axis(incoming);
    p.in_layout = features_on(p.reduce_axis, used);
    p.out_layout = features_on(flip(p.reduce_axis), used);
  } else if (split) {
    p.in_layout = features_on_both(used);
    p.out_layout = p.in_layout;
  } else {
    p.in_layout = features_on(features_axis(incoming), used);
    p.out_layout = p.in_layout;
    if (p.kernel == Kernel::allreduce) p.reduce_axis = features_axis(incoming);
  }
  p.group = tree_group_for(p, tune);
  if (moves_between_regions(p.kernel)) p.to_region = region;
  if (p.kernel == Kernel::meshgemm || p.kernel == Kernel::gemm_t) {
    p.in_layout.tile_rows = (op.k + used.h - 1) / used.h;
    p.in_layout.tile_cols = (op.n + used.w - 1) / used.w;
  } else if (p.kernel == Kernel::meshgemv) {
    const std::int64_t along = p.reduce_axis == Axis::x ? used.w : used.h;
    const std::int64_t across = p.reduce_axis == Axis::x ? used.h : used.w;
    p.in_layout.tile_rows = (op.k + along - 1) / along;
    p.in_layout.tile_cols = (op.n + across - 1) / across;
  }
  p.inputs.reserve(inputs.size());
  for (int r : inputs) {
    if (r < 0) continue;
    const PlacedOp& producer = s_.ops[static_cast<std::size_t>(r)];
    const bool resident_state = kernel_info(producer.kernel).resident_state;  // the cache keeps its layout
    const bool remaps = moves_between_regions(p.kernel);              // movers re-map as they go
    if (!resident_state && !remaps && !producer.out_layout.narrows_to(p.in_layout)) {
      r = relayout(r, p.in_layout, op.name);
    }
    p.inputs.push_back(r);
  }
  // A MeshGEMM whose moving operand an earlier MeshGEMM of the block already aligned on the same PEs
  // reuses that skewed copy, as WaferLLM's prefill does for K and V after Q and gate after up
  // (Prefill/WSE-2/src/prefill.csl, xk_matmul/xv_matmul/z2_matmul): no alignment shifts.
  if (p.kernel == Kernel::meshgemm && !p.inputs.empty()) {
    for (std::size_t j = s_.ops.size(); j-- > block_first_op_;) {
      const PlacedOp& o = s_.ops[j];
      if (o.kernel == Kernel::meshgemm && !o.inputs.empty() && o.inputs.front() == p.inputs.front() &&
          o.region == p.region && o.used == p.used) {
        p.input_skewed = true;
        break;
      }
    }
  }
  if (same_step) return add(std::move(p), true);
  const int placed = append(std::move(p));
  return split && gather_now ? gather(placed, tune.entry_features, false) : placed;
}

// A split epilogue's piece goes back to every PE of the line that held the copy it came from: an
// allgather along the axis its input replicated (the input's features lie on the other; with no
// input, on the region's entry axis).
int Placer::gather(int piece, Axis entry, bool same_step) {
  const PlacedOp& p = s_.ops[static_cast<std::size_t>(piece)];
  const Axis kept = p.inputs.empty() ? entry : features_axis(s_.ops[static_cast<std::size_t>(p.inputs.front())].out_layout);
  PlacedOp g;
  if (named_) g.name = p.name + ".gather";
  g.kernel = Kernel::allgather;
  g.region = p.region;
  g.used = p.used;
  g.stage = p.stage;
  g.in_layout = p.out_layout;
  g.out_layout = features_on(kept, p.used);
  g.reduce_axis = flip(kept);
  g.work.batch = p.work.batch;
  g.work.m = p.work.m;
  g.work.n = p.work.n;
  g.work.input_bytes = p.work.output_bytes;
  g.work.output_bytes = p.work.output_bytes;
  g.inputs = {piece};
  return add(std::move(g), same_step);
}

void Placer::place(const workload::Layer& block, int region, const Rect used,  // by value: see place_experts
                   int stage, const Tune& tune) {
  const std::size_t first_op = s_.ops.size();
  block_first_op_ = first_op;
  move_input_to(region, used, stage, tune);
  std::vector<int> placed(block.ops.size(), -1);
  const std::function<int(int)> resolve = [&](int input) {
    return input == kBlockInput ? block_input_ : placed[static_cast<std::size_t>(input)];
  };
  for (std::size_t i = 0; i < block.ops.size(); ++i) {
    const workload::Op& op = block.ops[i];
    if (placed[i] >= 0) continue;  // ran beside the routed experts
    if (op.kind == OpKind::moe_dispatch && (tune.expert_groups > 1 || tune.concurrent_branches) && op.experts > 1) {
      std::size_t combine = i + 1;
      while (combine < block.ops.size() && block.ops[combine].kind != OpKind::moe_combine) ++combine;
      const std::int64_t side = std::max(used.w, used.h);
      const std::int64_t groups = std::max<std::int64_t>(1, std::min({tune.expert_groups, op.experts, side}));
      std::vector<std::size_t> branch;
      if (tune.concurrent_branches && combine < block.ops.size() && side > groups) branch = beside_routed(block, i, combine);
      if (combine < block.ops.size() && (groups > 1 || !branch.empty())) {
        const int out = place_experts(block, i, combine, branch, resolve, placed, region, used, stage, tune, groups);
        for (std::size_t k = i; k <= combine; ++k) placed[k] = out;
        i = combine;
        continue;
      }
    }
    if (tune.sibling_branches && splits_siblings(op)) {
      const int input = resolve(op.inputs.front());
      if (const int out = place_siblings(op, block.name, input, region, used, stage, tune); out >= 0) {
        placed[i] = out;
        continue;
      }
    }
    if (tune.head_groups > 1 && op.kind == OpKind::attn_scores && splits_heads(block, decode_, tune.head_groups) &&
        attention_section(block) == static_cast<int>(i)) {
      if (const auto cells = head_cells(used, tune.head_groups); !cells.empty()) {
        place_heads(block, i, resolve, placed, region, used, cells, stage, tune);
        i += 2;
        continue;
      }
    }
    inputs_.clear();  // a member: the search's block table places millions of ops
    for (int in : op.inputs) {
      if (const int r = resolve(in); r >= 0) inputs_.push_back(r);
    }
    placed[i] = place_op(op, named_ ? block.name + "." + op.name : std::string(), region, used, stage, tune, inputs_, false);
  }
  if (!block.ops.empty()) block_input_ = placed.back();
  // Embedding and head run once per pass; a layer subset scales only the decoder layers.
  for (std::size_t i = first_op; i < s_.ops.size(); ++i) s_.ops[i].once = !block.decoder;
}

}  // namespace wavel::meshir
