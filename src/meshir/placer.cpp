// Kernel choice per op kind and phase, layout propagation (decode GEMVs alternate their allreduce
// axis, prefill keeps sequence on Y and features on X), re-layouts and transfers.
#include "wavel/meshir/placer.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "wavel/meshir/verify.hpp"

namespace wavel::meshir {

namespace {

using workload::OpKind;

constexpr int kBlockInput = -1;

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

// Decode activations: features split along one axis, replicated along the other (domain.md §3).
Layout features_on(Axis axis, const Rect& r) {
  Layout l;
  if (axis == Axis::x) {
    l.on_x = Dim::features;
    l.on_y = Dim::none;
    l.part_x = r.w;
  } else {
    l.on_x = Dim::none;
    l.on_y = Dim::features;
    l.part_y = r.h;
  }
  return l;
}

// Features on X and `on_y` on Y, both partitioned over the rectangle.
Layout spread_over(const Rect& r, Dim on_y) {
  Layout l;
  l.on_x = Dim::features;
  l.on_y = on_y;
  l.part_x = r.w;
  l.part_y = r.h;
  return l;
}

// Prefill activations: sequence on Y, embedding on X.
Layout prefill_layout(const Rect& r) { return spread_over(r, Dim::tokens); }

// A split epilogue's layout: each row's features over both axes.
Layout features_on_both(const Rect& r) { return spread_over(r, Dim::features); }

Axis features_axis(const Layout& l) { return l.on_x == Dim::features ? Axis::x : Axis::y; }

// A split epilogue's piece, not yet gathered.
bool is_split_piece(const PlacedOp& op) { return op.kernel == Kernel::elementwise && op.in_layout.features_on_both(); }
Axis flip(Axis a) { return a == Axis::x ? Axis::y : Axis::x; }

std::int64_t group_along(Axis axis, const Rect& used, const Tune& tune) {
  return axis == Axis::x ? tree_group(used.w, tune.group_scale_x) : tree_group(used.h, tune.group_scale_y);
}

}  // namespace

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
  if (op.kind == OpKind::expert_matmul && !decode_ && op.experts > 1) p.work.products = op.experts;
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
    if (p.kernel == Kernel::allreduce) {
      p.reduce_axis = Axis::x;  // features lie on X in prefill
      p.group = group_along(Axis::x, used, tune);
    }
  } else if (p.kernel == Kernel::meshgemv) {
    // Reduce along the axis that holds the input features; the output lies on the other axis, so
    // consecutive GEMVs alternate X and Y with no re-shuffle.
    p.reduce_axis = features_axis(incoming);
    p.group = group_along(p.reduce_axis, used, tune);
    p.in_layout = features_on(p.reduce_axis, used);
    p.out_layout = features_on(flip(p.reduce_axis), used);
  } else if (split) {
    p.in_layout = features_on_both(used);
    p.out_layout = p.in_layout;
  } else {
    p.in_layout = features_on(features_axis(incoming), used);
    p.out_layout = p.in_layout;
    if (p.kernel == Kernel::allreduce) {
      p.reduce_axis = features_axis(incoming);
      p.group = group_along(p.reduce_axis, used, tune);
    }
  }
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
  if (same_step) {
    p.step = next_step_ - 1;
    s_.ops.push_back(std::move(p));
    return static_cast<int>(s_.ops.size()) - 1;
  }
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
  if (!same_step) return append(std::move(g));
  g.step = next_step_ - 1;
  s_.ops.push_back(std::move(g));
  return static_cast<int>(s_.ops.size()) - 1;
}

// The expert CUT: the used rectangle is cut into `groups` strips along its longer side, each holding
// experts / groups experts. Dispatch multicasts each group's tokens to its strip, the strips run their
// experts in the same steps, and combine gathers the outputs back. A group serves at most
// capacity_factor x its mean share of the routed rows (the slowest group sets the pace), and never
// more than every token routed to each of its experts. A branch beside the section (the shared
// experts) gets a strip of its own, in the middle, as wide as its share of the FLOPs or narrower: every token is
// dispatched to it with the routed ones, its ops run in the experts' steps, and its output comes back
// with theirs.
int Placer::place_experts(const workload::Layer& block, std::size_t dispatch, std::size_t combine,
                          const std::vector<std::size_t>& branch, const std::function<int(int)>& resolve,
                          std::vector<int>& placed, int region, const Rect used, int stage, const Tune& tune,
                          std::int64_t groups) {
  // `used` by value: the strips below grow s_.regions, which a caller's reference may point into.
  const workload::Op& d = block.ops[dispatch];
  const std::int64_t experts = d.experts, top_k = std::max<std::int64_t>(1, d.experts_per_token);
  const std::int64_t routed = std::max<std::int64_t>(1, d.m);
  const std::int64_t tokens = std::max<std::int64_t>(1, routed / top_k);
  const double mean = static_cast<double>(routed) / static_cast<double>(groups);
  const std::int64_t rows = std::min<std::int64_t>(tokens * std::min(top_k, experts / groups),
                                                   static_cast<std::int64_t>(std::ceil(capacity_factor_ * mean)));
  // A token routed to several experts of one strip travels there once, and its outputs are summed
  // on the strip before they return: under uniform routing a strip sees each token with probability
  // 1 - C(E - E/G, k) / C(E, k), the busiest strip capacity_factor x that share, never more than rows.
  double none_here = 1.0;
  for (std::int64_t i = 0; i < top_k; ++i) {
    none_here *= static_cast<double>(std::max<std::int64_t>(0, experts - experts / groups - i)) /
                 static_cast<double>(std::max<std::int64_t>(1, experts - i));
  }
  const std::int64_t distinct = std::max<std::int64_t>(
      1, std::min({rows, tokens,
                   static_cast<std::int64_t>(std::ceil(capacity_factor_ * static_cast<double>(tokens) * (1.0 - none_here)))}));
  const auto token_bytes = [&](std::int64_t bytes) {
    return static_cast<std::int64_t>(std::ceil(static_cast<double>(bytes) * static_cast<double>(distinct) /
                                                static_cast<double>(routed)));
  };
  // Work of one group's share of an op over `rows` routed rows and experts / groups experts.
  const auto share = [&](const workload::Op& op) {
    workload::Op o = op;
    const auto scale = [&](std::int64_t v) {
      return static_cast<std::int64_t>(std::ceil(static_cast<double>(v) * static_cast<double>(rows) / static_cast<double>(routed)));
    };
    o.m = rows;  // every op of the section works on the routed rows
    o.flops = scale(op.flops);
    o.input_bytes = scale(op.input_bytes);
    o.output_bytes = op.kind == OpKind::moe_combine ? op.output_bytes : scale(op.output_bytes);
    o.weight_bytes = op.weight_bytes / groups;
    if (op.experts > 0) o.experts = std::max<std::int64_t>(1, op.experts / groups);  // the strip's experts
    return o;
  };
  const bool along_x = used.w >= used.h;
  const std::int64_t side = along_x ? used.w : used.h;
  // Strip widths: the branch's share of the side is its share of the FLOPs (one group's against the
  // branch's) over tune.branch_narrowing, at least one PE, leaving one per group.
  std::int64_t beside = 0;
  if (!branch.empty()) {
    double group_flops = 0, branch_flops = 0;
    for (std::size_t k = dispatch + 1; k < combine; ++k) group_flops += static_cast<double>(share(block.ops[k]).flops);
    for (const std::size_t j : branch) branch_flops += static_cast<double>(block.ops[j].flops);
    const double all = branch_flops + static_cast<double>(groups) * group_flops;
    const double balanced = all > 0 ? static_cast<double>(side) * branch_flops / all : 1.0;
    beside = std::clamp<std::int64_t>(std::llround(balanced / static_cast<double>(std::max<std::int64_t>(1, tune.branch_narrowing))),
                                      1, side - groups);
  }
  const std::int64_t lanes = groups + (branch.empty() ? 0 : 1);
  const std::int64_t branch_lane = branch.empty() ? -1 : groups / 2;
  std::vector<int> strips;
  std::vector<Rect> rects;
  for (std::int64_t lane = 0, lo = 0; lane < lanes; ++lane) {
    const std::int64_t g = lane - (branch_lane >= 0 && lane > branch_lane ? 1 : 0);  // routed group
    const std::int64_t hi = lane == branch_lane ? lo + beside
                            : branch_lane >= 0 && lane < branch_lane
                                ? (side - beside) * (g + 1) / groups
                                : beside + (side - beside) * (g + 1) / groups;
    const Rect r = along_x ? Rect{used.x + lo, used.y, hi - lo, used.h} : Rect{used.x, used.y + lo, used.w, hi - lo};
    rects.push_back(r);
    s_.regions.push_back(r);
    strips.push_back(static_cast<int>(s_.regions.size()) - 1);
    lo = hi;
  }
  const auto entry_layout = [&](const Rect& r) { return decode_ ? features_on(tune.entry_features, r) : prefill_layout(r); };
  const auto lane_name = [&](const workload::Op& op, std::int64_t lane) {
    if (!named_) return std::string();
    if (lane == branch_lane) return block.name + "." + op.name + ".beside";
    return block.name + "." + op.name + ".g" + std::to_string(lane - (branch_lane >= 0 && lane > branch_lane ? 1 : 0));
  };
  // The branch's work per step: its ops in order (their inputs mapped to the branch's own), the value
  // entering it dispatched whole, and its output combined back without a weighted sum.
  std::vector<int> in_branch_at(block.ops.size(), -1);
  for (std::size_t b = 0; b < branch.size(); ++b) in_branch_at[branch[b]] = static_cast<int>(b);
  int entering = kBlockInput, branch_entry = -1;
  for (const std::size_t j : branch) {
    for (const int in : block.ops[j].inputs) {
      if (in < 0 || in_branch_at[static_cast<std::size_t>(in)] < 0) entering = in;
    }
  }
  const auto whole = [&](const workload::Op& like, std::int64_t bytes) {
    workload::Op o = like;
    o.m = tokens;
    o.flops = 0;
    o.input_bytes = o.output_bytes = bytes;
    o.weight_bytes = 0;
    o.experts = o.experts_per_token = 0;
    o.inputs.clear();
    return o;
  };

  std::vector<int> last(static_cast<std::size_t>(lanes), -1);
  // Dispatch: from the block's region (where norm and router ran) to each strip, one step.
  std::vector<int> sources;
  for (int in : d.inputs) sources.push_back(resolve(in));
  for (std::int64_t lane = 0; lane < lanes; ++lane) {
    const bool is_branch = lane == branch_lane;
    workload::Op o = share(d);
    o.input_bytes = o.output_bytes = token_bytes(d.input_bytes);
    std::vector<int> from = sources;
    if (is_branch) {
      from = {resolve(entering)};
      o = whole(d, from.front() >= 0 ? s_.ops[static_cast<std::size_t>(from.front())].work.output_bytes : 0);
    }
    const int i = place_op(o, lane_name(d, lane), region, used, stage, tune, from, lane > 0);
    s_.ops[static_cast<std::size_t>(i)].to_region = strips[static_cast<std::size_t>(lane)];
    s_.ops[static_cast<std::size_t>(i)].out_layout = entry_layout(rects[static_cast<std::size_t>(lane)]);
    last[static_cast<std::size_t>(lane)] = i;
    if (is_branch) branch_entry = i;
  }
  // The experts and the branch, one step per op, every strip at once; split pieces are gathered in
  // the next step.
  const std::size_t section_ops = combine - dispatch - 1;
  for (std::size_t k = 0; k < std::max(section_ops, branch.size()); ++k) {
    bool opened = false;
    for (std::int64_t lane = 0; lane < lanes; ++lane) {
      const bool is_branch = lane == branch_lane;
      if (is_branch ? k >= branch.size() : k >= section_ops) continue;
      const auto l = static_cast<std::size_t>(lane);
      int at = 0;
      if (is_branch) {
        const workload::Op& op = block.ops[branch[k]];
        std::vector<int> inputs;
        for (const int in : op.inputs) {
          const int b = in >= 0 ? in_branch_at[static_cast<std::size_t>(in)] : -1;
          inputs.push_back(b >= 0 ? placed[branch[static_cast<std::size_t>(b)]] : branch_entry);
        }
        at = place_op(op, lane_name(op, lane), strips[l], rects[l], stage, tune, inputs, opened, /*gather_now=*/false);
      } else {
        const workload::Op& op = block.ops[dispatch + 1 + k];
        at = place_op(share(op), lane_name(op, lane), strips[l], rects[l], stage, tune, {last[l]}, opened,
                      /*gather_now=*/false);
      }
      opened = true;
      last[l] = at;
      if (is_branch) placed[branch[k]] = at;
    }
    bool first = true;
    for (std::int64_t lane = 0; lane < lanes; ++lane) {
      int& piece = last[static_cast<std::size_t>(lane)];
      if (!is_split_piece(s_.ops[static_cast<std::size_t>(piece)])) continue;
      piece = gather(piece, tune.entry_features, !first);
      if (lane == branch_lane) placed[branch[k]] = piece;
      first = false;
    }
  }
  // Combine: each strip's outputs gathered back to the block's region (gate weights came along with
  // the tokens, so the router output is not read again).
  const workload::Op& c = block.ops[combine];
  int out = -1;
  workload::Op combined = share(c);
  combined.input_bytes = token_bytes(c.input_bytes);
  for (std::int64_t lane = 0; lane < lanes; ++lane) {
    const auto l = static_cast<std::size_t>(lane);
    const bool is_branch = lane == branch_lane;
    const workload::Op o = is_branch ? whole(c, s_.ops[static_cast<std::size_t>(last[l])].work.output_bytes) : combined;
    const int i = place_op(o, lane_name(c, lane), strips[l], rects[l], stage, tune, {last[l]}, lane > 0);
    PlacedOp& op = s_.ops[static_cast<std::size_t>(i)];
    op.to_region = region;
    op.out_layout = entry_layout(used);
    if (is_branch) {
      placed[branch.back()] = i;
    } else {
      out = i;
    }
  }
  return out;
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
