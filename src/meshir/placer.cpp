// Kernel choice per op kind and phase, layout propagation (decode GEMVs alternate their allreduce
// axis, prefill keeps sequence on Y and features on X), re-layouts and transfers.
#include "wavel/meshir/placer.hpp"

#include <algorithm>
#include <cmath>

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

// Prefill activations: sequence on Y, embedding on X, both partitioned.
Layout prefill_layout(const Rect& r) {
  Layout l;
  l.on_x = Dim::features;
  l.on_y = Dim::tokens;
  l.part_x = r.w;
  l.part_y = r.h;
  return l;
}

Axis features_axis(const Layout& l) { return l.on_x == Dim::features ? Axis::x : Axis::y; }
Axis flip(Axis a) { return a == Axis::x ? Axis::y : Axis::x; }

std::int64_t group_along(Axis axis, const Rect& used, const Tune& tune) {
  return axis == Axis::x ? tree_group(used.w, tune.group_scale_x) : tree_group(used.h, tune.group_scale_y);
}

}  // namespace

std::int64_t tree_group(std::int64_t pes, double scale) {
  const auto g = std::llround(scale * std::sqrt(static_cast<double>(pes)));
  return std::clamp<std::int64_t>(g, 1, std::max<std::int64_t>(1, pes));
}

OpWork work_of(const workload::Op& op) {
  OpWork w;
  w.batch = op.batch;
  w.m = op.m;
  w.k = op.k;
  w.n = op.n;
  w.flops = op.flops;
  w.weight_bytes = op.weight_bytes;
  w.input_bytes = op.input_bytes;
  w.output_bytes = op.output_bytes;
  w.kv_cache_bytes = op.kv_cache_bytes;
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
  r.name = p.name + ".relayout-for." + consumer;
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
  t.name = "xfer." + std::to_string(p.region) + "-" + std::to_string(region) + "." + std::to_string(s_.ops.size());
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

void Placer::place(const workload::Layer& block, int region, const Rect& used, int stage, const Tune& tune) {
  move_input_to(region, used, stage, tune);
  std::vector<int> placed(block.ops.size(), -1);
  auto resolve = [&](int input) { return input == kBlockInput ? block_input_ : placed[static_cast<std::size_t>(input)]; };
  for (std::size_t i = 0; i < block.ops.size(); ++i) {
    const workload::Op& op = block.ops[i];
    PlacedOp p;
    p.name = block.name + "." + op.name;
    p.kernel = kernel_for(op.kind, decode_);
    p.region = region;
    p.used = used;
    p.stage = stage;
    p.work = work_of(op);
    if (op.kind == OpKind::softmax) p.rounds = 2;  // max, then sum
    // The first input that exists decides the layout; others are re-laid out to match.
    int primary = -1;
    for (int in : op.inputs) {
      if (const int r = resolve(in); r >= 0) {
        primary = r;
        break;
      }
    }
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
    for (int in : op.inputs) {
      int r = resolve(in);
      if (r < 0) continue;
      const PlacedOp& producer = s_.ops[static_cast<std::size_t>(r)];
      const bool resident_state = producer.kernel == Kernel::kv_shift;  // the cache keeps its own layout
      const bool remaps = moves_between_regions(p.kernel);              // movers re-map as they go
      if (!resident_state && !remaps && !producer.out_layout.aligned_with(p.in_layout)) {
        r = relayout(r, p.in_layout, op.name);
      }
      p.inputs.push_back(r);
    }
    placed[i] = append(std::move(p));
  }
  if (!block.ops.empty()) block_input_ = placed.back();
}

}  // namespace wavel::meshir
