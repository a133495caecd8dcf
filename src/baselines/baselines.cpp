// Full-Chip and WaferLLM schedules as MeshIR: op graphs mapped to kernels, layouts propagated from
// producer to consumer (re-layouts inserted where they disagree), layers packed into regions.
#include "wavel/baselines/baselines.hpp"

#include <algorithm>
#include <cmath>

#include "wavel/common/error.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/meshir/verify.hpp"

namespace wavel::baselines {

namespace {

using meshir::Axis;
using meshir::Dim;
using meshir::Kernel;
using meshir::Layout;
using meshir::PlacedOp;
using meshir::Rect;
using meshir::Schedule;
using workload::OpKind;

constexpr int kLayerInput = -1;

Kernel kernel_for(OpKind kind, bool decode) {
  switch (kind) {
    case OpKind::embedding: return Kernel::lookup;
    case OpKind::norm: return Kernel::allreduce;
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

std::int64_t tree_group(std::int64_t pes) {
  return std::max<std::int64_t>(1, std::llround(std::sqrt(static_cast<double>(pes))));
}

meshir::OpWork work_of(const workload::Op& op) {
  meshir::OpWork w;
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

// Appends placed ops one step at a time, tracking the op that produced the current layer input.
class Builder {
 public:
  Builder(Schedule& s, bool decode) : s_(s), decode_(decode) {}

  int append(PlacedOp op) {
    op.step = next_step_++;
    s_.ops.push_back(std::move(op));
    return static_cast<int>(s_.ops.size()) - 1;
  }

  // A re-layout of `producer`'s output to `target` inside the same region, for `consumer`.
  int relayout(int producer, const Layout& target, const std::string& consumer) {
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

  // Moves the current layer input into `region` if it lives elsewhere.
  void move_input_to(int region, int stage) {
    if (layer_input_ < 0) return;
    const PlacedOp& p = s_.ops[static_cast<std::size_t>(layer_input_)];
    if (p.region == region) return;
    PlacedOp t;
    t.name = "xfer." + std::to_string(p.region) + "-" + std::to_string(region);
    t.kernel = Kernel::transfer;
    t.region = p.region;
    t.used = s_.regions[static_cast<std::size_t>(p.region)];
    t.to_region = region;
    t.in_layout = p.out_layout;
    t.out_layout = decode_ ? features_on(features_axis(p.out_layout), s_.regions[static_cast<std::size_t>(region)])
                           : prefill_layout(s_.regions[static_cast<std::size_t>(region)]);
    t.stage = stage;
    t.inputs = {layer_input_};
    t.work.input_bytes = p.work.output_bytes;
    t.work.output_bytes = p.work.output_bytes;
    layer_input_ = append(std::move(t));
  }

  // Places every op of `layer` on `region`.
  void place_layer(const workload::Layer& layer, int region, int stage) {
    move_input_to(region, stage);
    const Rect rect = s_.regions[static_cast<std::size_t>(region)];
    std::vector<int> placed(layer.ops.size(), -1);
    auto resolve = [&](int input) { return input == kLayerInput ? layer_input_ : placed[static_cast<std::size_t>(input)]; };
    for (std::size_t i = 0; i < layer.ops.size(); ++i) {
      const workload::Op& op = layer.ops[i];
      PlacedOp p;
      p.name = layer.name + "." + op.name;
      p.kernel = kernel_for(op.kind, decode_);
      p.region = region;
      p.used = rect;
      p.stage = stage;
      p.work = work_of(op);
      if (op.kind == OpKind::softmax) p.rounds = 2;  // max, then sum
      // The first input that exists decides the layout; others are re-laid out to match.
      int primary = -1;
      for (int in : op.inputs) {
        const int r = resolve(in);
        if (r >= 0) {
          primary = r;
          break;
        }
      }
      const Layout incoming = primary >= 0 ? s_.ops[static_cast<std::size_t>(primary)].out_layout
                                           : (decode_ ? features_on(Axis::x, rect) : prefill_layout(rect));
      if (!decode_) {
        p.in_layout = prefill_layout(rect);
        p.out_layout = p.in_layout;
      } else if (p.kernel == Kernel::meshgemv) {
        // Reduce along the axis that holds the input features; the output lies on the other axis,
        // so consecutive GEMVs alternate X and Y with no re-shuffle.
        p.reduce_axis = features_axis(incoming);
        p.group = tree_group(p.reduce_axis == Axis::x ? rect.w : rect.h);
        p.in_layout = features_on(p.reduce_axis, rect);
        p.out_layout = features_on(flip(p.reduce_axis), rect);
      } else {
        p.in_layout = features_on(features_axis(incoming), rect);
        p.out_layout = p.in_layout;
        if (p.kernel == Kernel::allreduce) {
          p.reduce_axis = features_axis(incoming);
          p.group = tree_group(p.reduce_axis == Axis::x ? rect.w : rect.h);
        }
      }
      if (p.kernel == Kernel::allreduce && !decode_) {
        p.reduce_axis = Axis::x;  // features lie on X in prefill
        p.group = tree_group(rect.w);
      }
      if (p.kernel == Kernel::moe_dispatch || p.kernel == Kernel::moe_combine) p.to_region = region;
      if (p.kernel == Kernel::meshgemm || p.kernel == Kernel::gemm_t) {
        p.in_layout.tile_rows = (op.k + rect.h - 1) / rect.h;
        p.in_layout.tile_cols = (op.n + rect.w - 1) / rect.w;
      } else if (p.kernel == Kernel::meshgemv) {
        const std::int64_t along = p.reduce_axis == Axis::x ? rect.w : rect.h;
        const std::int64_t across = p.reduce_axis == Axis::x ? rect.h : rect.w;
        p.in_layout.tile_rows = (op.k + along - 1) / along;
        p.in_layout.tile_cols = (op.n + across - 1) / across;
      }
      for (int in : op.inputs) {
        int r = resolve(in);
        if (r < 0) continue;
        const PlacedOp& producer = s_.ops[static_cast<std::size_t>(r)];
        const bool resident_state = producer.kernel == Kernel::kv_shift;  // the cache keeps its own layout
        const bool remaps = meshir::moves_between_regions(p.kernel);     // movers re-map as they go
        if (!resident_state && !remaps && !producer.out_layout.aligned_with(p.in_layout)) {
          r = relayout(r, p.in_layout, op.name);
        }
        p.inputs.push_back(r);
      }
      placed[i] = append(std::move(p));
    }
    if (!layer.ops.empty()) layer_input_ = placed.back();
  }

  [[nodiscard]] int steps() const { return next_step_; }

 private:
  Schedule& s_;
  bool decode_;
  int next_step_ = 0;
  int layer_input_ = -1;
};

Schedule empty_schedule(const std::string& name, const workload::Workload& w, const wafer::WaferParams& wafer) {
  Schedule s;
  s.name = name;
  s.grid_w_pes = wafer.grid_w_pes;
  s.grid_h_pes = wafer.grid_h_pes;
  s.sram_per_pe_bytes = wafer.sram_per_pe_bytes;
  s.colours = wafer.routable_colours;
  for (const auto& pe : wafer.defective_pes) s.defective_pes.emplace_back(pe.x, pe.y);
  s.concurrent_requests = w.shape.concurrent_requests;
  s.layers_total = w.model.num_layers;
  return s;
}

bool is_decode(const workload::Workload& w) { return w.shape.phase == workload::Phase::decode; }

// SRAM per PE of a layer spread over `pes` PEs, split as meshir::region_sram_per_pe splits it:
// weights and KV add up over the layers of a region, activation buffers are shared (largest op).
meshir::RegionSram layer_sram_per_pe(const workload::Layer& layer, std::int64_t pes) {
  meshir::RegionSram fill;
  for (const auto& op : layer.ops) {
    const meshir::RegionSram one = meshir::op_sram_per_pe(work_of(op), 1, pes);
    fill.resident_bytes += one.resident_bytes;
    fill.buffer_bytes = std::max(fill.buffer_bytes, one.buffer_bytes);
  }
  return fill;
}

// Square P x P slots on the grid in snake order (consecutive slots are neighbours), skipping
// slots with defective PEs.
std::vector<Rect> square_slots(const wafer::WaferParams& wafer, std::int64_t side) {
  std::vector<Rect> slots;
  const std::int64_t cols = wafer.grid_w_pes / side;
  const std::int64_t rows = wafer.grid_h_pes / side;
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      const std::int64_t col = (r % 2 == 0) ? c : cols - 1 - c;
      const Rect rect{col * side, r * side, side, side};
      bool clean = true;
      for (const auto& pe : wafer.defective_pes) clean = clean && !rect.contains(pe.x, pe.y);
      if (clean) slots.push_back(rect);
    }
  }
  return slots;
}

// The op graph of one micro-batch when `w`'s requests are split into `microbatches` groups; the KV
// cache of every request stays resident, so its bytes are scaled back up.
workload::Workload per_microbatch(const workload::Workload& w, std::int64_t microbatches) {
  if (microbatches <= 1) return w;
  workload::WorkloadShape shape = w.shape;
  shape.concurrent_requests = (w.shape.concurrent_requests + microbatches - 1) / microbatches;
  workload::Workload part = workload::build_workload(w.model, shape);
  for (auto& layer : part.layers) {
    for (auto& op : layer.ops) op.kv_cache_bytes *= microbatches;
  }
  return part;
}

Schedule fullchip_with(const workload::Workload& w, const wafer::WaferParams& wafer, std::int64_t microbatches) {
  Schedule s = empty_schedule("fullchip", w, wafer);
  s.microbatches = microbatches;
  s.regions.push_back(Rect{0, 0, wafer.grid_w_pes, wafer.grid_h_pes});
  Builder b(s, is_decode(w));
  for (const auto& layer : per_microbatch(w, microbatches).layers) b.place_layer(layer, 0, 0);
  return s;
}

}  // namespace

meshir::Schedule build_fullchip(const workload::Workload& w, const wafer::WaferParams& wafer) {
  // All requests in one batch; prefill falls back to one prompt at a time when the batch's
  // activations do not fit beside the weights.
  Schedule s = fullchip_with(w, wafer, 1);
  if (!is_decode(w) && w.shape.concurrent_requests > 1 &&
      meshir::resident_bytes_per_pe_max(s) > wafer.sram_per_pe_bytes) {
    s = fullchip_with(w, wafer, w.shape.concurrent_requests);
  }
  return s;
}

std::optional<meshir::Schedule> build_waferllm(const workload::Workload& w, const wafer::WaferParams& wafer,
                                               std::int64_t side) {
  if (side < 1 || side > std::min(wafer.grid_w_pes, wafer.grid_h_pes)) return std::nullopt;
  const std::vector<Rect> slots = square_slots(wafer, side);
  if (slots.empty()) return std::nullopt;
  const bool decode = is_decode(w);
  // Decode pipelines micro-batches over the regions; op work is that of one micro-batch, while the
  // KV cache of every request stays resident.
  const std::int64_t requests = w.shape.concurrent_requests;
  const std::int64_t pes = side * side;
  // Prefill streams one prompt at a time, so pack with one prompt's activations; decode packs with
  // the whole batch (its activations are small), then splits it over the stages.
  const workload::Workload packed = decode ? w : per_microbatch(w, requests);
  std::vector<int> region_of(w.layers.size(), 0);
  {
    int region = 0;
    meshir::RegionSram used;
    for (std::size_t i = 0; i < packed.layers.size(); ++i) {
      const meshir::RegionSram need = layer_sram_per_pe(packed.layers[i], pes);
      if (need.total_bytes() > wafer.sram_per_pe_bytes) return std::nullopt;  // one layer alone does not fit
      meshir::RegionSram with{used.resident_bytes + need.resident_bytes, std::max(used.buffer_bytes, need.buffer_bytes)};
      if (with.total_bytes() > wafer.sram_per_pe_bytes) {
        ++region;
        with = need;
      }
      used = with;
      region_of[i] = region;
    }
    if (region + 1 > static_cast<int>(slots.size())) return std::nullopt;
  }
  const int regions = region_of.back() + 1;
  // Decode keeps every stage busy with one micro-batch each; prefill streams one prompt at a time.
  const std::int64_t microbatches = decode ? std::min<std::int64_t>(requests, regions) : requests;
  const workload::Workload per_batch = decode ? per_microbatch(w, microbatches) : packed;
  Schedule s = empty_schedule("waferllm", w, wafer);
  s.microbatches = microbatches;
  s.regions.assign(slots.begin(), slots.begin() + regions);
  Builder b(s, decode);
  for (std::size_t i = 0; i < per_batch.layers.size(); ++i) b.place_layer(per_batch.layers[i], region_of[i], region_of[i]);
  return s;
}

std::optional<meshir::Schedule> build_waferllm_tuned(const workload::Workload& w, const wafer::WaferParams& wafer,
                                                     const cost::CostParams& params,
                                                     std::vector<std::int64_t> candidates) {
  if (candidates.empty()) {
    for (std::int64_t p = 60; p <= std::min(wafer.grid_w_pes, wafer.grid_h_pes); p += 60) candidates.push_back(p);
  }
  std::optional<meshir::Schedule> best;
  double best_tokens_per_s = -1.0;
  for (std::int64_t p : candidates) {
    auto s = build_waferllm(w, wafer, p);
    if (!s) continue;
    const auto cost = cost::evaluate(*s, wafer, params, is_decode(w), w.shape.input_tokens);
    if (cost.tokens_per_s > best_tokens_per_s) {  // strict: ties keep the smaller region
      best_tokens_per_s = cost.tokens_per_s;
      best = std::move(s);
    }
  }
  return best;
}

meshir::Schedule build_waferllm_layer_sample(const workload::Workload& w, const wafer::WaferParams& wafer,
                                             std::int64_t side) {
  if (side < 1 || side > std::min(wafer.grid_w_pes, wafer.grid_h_pes)) {
    throw DataError({Diagnostic{"", 0, 0, "grid",
                                "region side " + std::to_string(side) + " does not fit the " + wafer.preset + " grid of " +
                                    std::to_string(wafer.grid_w_pes) + " x " + std::to_string(wafer.grid_h_pes)}});
  }
  Schedule s = empty_schedule("waferllm-layer", w, wafer);
  s.regions.push_back(Rect{0, 0, side, side});
  s.layer_scale = w.model.num_layers;
  Builder b(s, is_decode(w));
  // The first decoder layer stands for all of them (skip the embedding and head layers).
  for (const auto& layer : w.layers) {
    if (layer.name.rfind("layer.", 0) == 0) {
      b.place_layer(layer, 0, 0);
      break;
    }
  }
  return s;
}

}  // namespace wavel::baselines
