// Full-Chip and WaferLLM schedules as MeshIR: op graphs mapped to kernels, layouts propagated from
// producer to consumer (re-layouts inserted where they disagree), layers packed into regions.
#include "wavel/baselines/baselines.hpp"

#include <algorithm>
#include <cmath>

#include "wavel/common/error.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/meshir/placer.hpp"
#include "wavel/meshir/verify.hpp"

namespace wavel::baselines {

namespace {

using meshir::Rect;
using meshir::Schedule;

Schedule empty_schedule(const std::string& name, const workload::Workload& w, const wafer::WaferParams& wafer) {
  Schedule s;
  s.name = name;
  s.grid_w_pes = wafer.grid_w_pes;
  s.grid_h_pes = wafer.grid_h_pes;
  s.sram_per_pe_bytes = wafer.sram_per_pe_bytes;
  s.colours = wafer.routable_colours;
  for (const auto& pe : wafer.defective_pes) s.defective_pes.emplace_back(pe.x, pe.y);
  s.concurrent_requests = w.shape.concurrent_requests;
  s.layer_scale = w.layer_scale;  // a layer subset stands for the whole model
  s.layers_total = w.model.num_layers * w.layer_scale;
  return s;
}

bool is_decode(const workload::Workload& w) { return w.shape.phase == workload::Phase::decode; }

// SRAM per PE of a layer spread over `pes` PEs, split as meshir::region_sram_per_pe splits it:
// weights and KV add up over the layers of a region, activation buffers are shared (largest op).
meshir::RegionSram layer_sram_per_pe(const workload::Layer& layer, std::int64_t pes) {
  meshir::RegionSram fill;
  for (const auto& op : layer.ops) {
    const meshir::RegionSram one = meshir::op_sram_per_pe(meshir::work_of(op), 1, pes);
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

// The largest rectangle of the grid that holds no defective PE (the whole grid without defects):
// its sides can only start or end at the grid's edges or next to a defect.
Rect largest_clean_rect(const wafer::WaferParams& wafer) {
  const Rect grid{0, 0, wafer.grid_w_pes, wafer.grid_h_pes};
  if (wafer.defective_pes.empty()) return grid;
  std::vector<std::int64_t> xs{0, grid.w}, ys{0, grid.h};
  for (const auto& pe : wafer.defective_pes) {
    xs.insert(xs.end(), {pe.x, pe.x + 1});
    ys.insert(ys.end(), {pe.y, pe.y + 1});
  }
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  std::sort(ys.begin(), ys.end());
  ys.erase(std::unique(ys.begin(), ys.end()), ys.end());
  Rect best{0, 0, 0, 0};
  for (std::size_t x0 = 0; x0 < xs.size(); ++x0) {
    for (std::size_t x1 = x0 + 1; x1 < xs.size(); ++x1) {
      for (std::size_t y0 = 0; y0 < ys.size(); ++y0) {
        for (std::size_t y1 = y0 + 1; y1 < ys.size(); ++y1) {
          const Rect r{xs[x0], ys[y0], xs[x1] - xs[x0], ys[y1] - ys[y0]};
          if (r.pes() <= best.pes()) continue;
          bool clean = true;
          for (const auto& pe : wafer.defective_pes) clean = clean && !r.contains(pe.x, pe.y);
          if (clean) best = r;
        }
      }
    }
  }
  return best;
}

Schedule fullchip_with(const workload::Workload& w, const wafer::WaferParams& wafer, std::int64_t microbatches) {
  Schedule s = empty_schedule("fullchip", w, wafer);
  s.microbatches = microbatches;
  s.regions.push_back(largest_clean_rect(wafer));
  meshir::Placer b(s, is_decode(w));
  for (const auto& layer : per_microbatch(w, microbatches).layers) b.place(layer, 0, s.regions[0], 0, {});
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
  meshir::Placer b(s, decode);
  for (std::size_t i = 0; i < per_batch.layers.size(); ++i) {
    const int r = region_of[i];
    b.place(per_batch.layers[i], r, s.regions[static_cast<std::size_t>(r)], r, {});
  }
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
  meshir::Placer b(s, is_decode(w));
  // The first decoder layer stands for all of them (skip the embedding and head layers).
  for (const auto& layer : w.layers) {
    if (layer.name.rfind("layer.", 0) == 0) {
      b.place(layer, 0, s.regions[0], 0, {});
      break;
    }
  }
  return s;
}

}  // namespace wavel::baselines
