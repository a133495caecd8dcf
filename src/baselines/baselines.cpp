// Full-Chip and WaferLLM schedules as MeshIR: op graphs mapped to kernels, layouts propagated from
// producer to consumer (re-layouts inserted where they disagree), layers packed into regions.
#include "wavel/baselines/baselines.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "wavel/common/error.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/meshir/placer.hpp"
#include "wavel/meshir/verify.hpp"

namespace wavel::baselines {

namespace {

using meshir::Rect;
using meshir::Schedule;

Schedule empty_schedule(const std::string& name, const workload::Workload& w, const wafer::WaferParams& wafer) {
  Schedule s = meshir::empty_on(name, wafer);
  s.concurrent_requests = w.shape.concurrent_requests;
  s.prompt_chunks = w.shape.prompt_chunks;  // the ops are one chunk's (workload::chunk_prompt)
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

// The largest rectangle of the grid that holds no defective PE (the whole grid without defects);
// ties go to the smallest left edge, then right edge, then top. Row by row, each column's run of
// clean PEs ending at that row is a bar of a histogram, and a stack of rising bars yields every
// maximal rectangle: O(grid PEs) whatever the number of defects.
Rect largest_clean_rect(const wafer::WaferParams& wafer) {
  const Rect grid{0, 0, wafer.grid_w_pes, wafer.grid_h_pes};
  if (wafer.defective_pes.empty()) return grid;
  const wafer::DefectIndex defects(wafer);
  const std::int64_t w = grid.w;
  std::vector<std::int64_t> height(static_cast<std::size_t>(w), 0);
  std::vector<std::int64_t> stack;
  Rect best{0, 0, 0, 0};
  const auto consider = [&](const Rect& r) {
    if (r.pes() > best.pes() ||
        (r.pes() == best.pes() && std::make_tuple(r.x, r.x + r.w, r.y) < std::make_tuple(best.x, best.x + best.w, best.y))) {
      best = r;
    }
  };
  for (std::int64_t y = 0; y < grid.h; ++y) {
    for (std::int64_t x = 0; x < w; ++x) {
      auto& bar = height[static_cast<std::size_t>(x)];
      bar = defects.at(x, y) ? 0 : bar + 1;
    }
    stack.clear();
    for (std::int64_t x = 0; x <= w; ++x) {
      const std::int64_t h = x < w ? height[static_cast<std::size_t>(x)] : 0;
      while (!stack.empty() && height[static_cast<std::size_t>(stack.back())] >= h) {
        const std::int64_t top = height[static_cast<std::size_t>(stack.back())];
        stack.pop_back();
        const std::int64_t left = stack.empty() ? 0 : stack.back() + 1;
        if (top > 0) consider(Rect{left, y + 1 - top, x - left, top});
      }
      stack.push_back(x);
    }
  }
  return best;
}

std::string kib(std::int64_t bytes) {
  return std::to_string((bytes + 1023) / 1024) + " KiB";
}

// Tokens/s of a schedule that fits in SRAM, or -1.
double fitting_tokens_per_s(const Schedule& s, const workload::Workload& w, const wafer::WaferParams& wafer,
                            const cost::CostParams& params) {
  const auto c = cost::evaluate(s, wafer, params, is_decode(w), w.shape.input_tokens);
  return c.sram_headroom >= 0.0 ? c.tokens_per_s : -1.0;
}

}  // namespace

std::vector<Rect> square_slots(const wafer::WaferParams& wafer, std::int64_t side) {
  std::vector<Rect> slots;
  if (side < 1) return slots;
  const std::int64_t cols = wafer.grid_w_pes / side;
  const std::int64_t rows = wafer.grid_h_pes / side;
  // Slots tile the grid, so each defect dirties at most the one slot it falls in: O(defects + slots).
  std::vector<bool> dirty(static_cast<std::size_t>(std::max<std::int64_t>(0, cols * rows)), false);
  for (const auto& pe : wafer.defective_pes) {
    const std::int64_t c = pe.x >= 0 ? pe.x / side : cols, r = pe.y >= 0 ? pe.y / side : rows;
    if (c < cols && r < rows) dirty[static_cast<std::size_t>(r * cols + c)] = true;
  }
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      const std::int64_t col = (r % 2 == 0) ? c : cols - 1 - c;
      if (!dirty[static_cast<std::size_t>(r * cols + col)]) slots.push_back(Rect{col * side, r * side, side, side});
    }
  }
  return slots;
}

meshir::Schedule build_fullchip(const workload::Workload& w, const wafer::WaferParams& wafer,
                                std::int64_t microbatches, const meshir::Tune& tune) {
  Schedule s = empty_schedule("fullchip", w, wafer);
  s.microbatches = microbatches;
  s.regions.push_back(largest_clean_rect(wafer));
  meshir::Placer b(s, is_decode(w), w.moe);
  for (const auto& layer : workload::split_requests(w, microbatches).layers) {
    b.place(tune.fuse ? workload::fuse_shared_inputs(layer, w.shape.phase) : layer, 0, s.regions[0], 0, tune);
  }
  return s;
}

std::vector<meshir::Tune> fullchip_tunes(const workload::Workload& w) {
  bool fusable = false, splittable = false;
  for (const auto& layer : w.layers) {
    fusable = fusable || workload::has_fusion(layer, w.shape.phase);
    splittable = splittable || meshir::has_split_epilogue(layer, is_decode(w));
  }
  return meshir::with_kinds({meshir::Tune{}}, fusable, splittable);
}

std::optional<meshir::Schedule> build_fullchip_tuned(const workload::Workload& w, const wafer::WaferParams& wafer,
                                                     const cost::CostParams& params, std::string* na_reason) {
  std::optional<Schedule> best;
  double best_tokens_per_s = -1.0;
  std::int64_t least_per_pe = -1;
  const auto tunes = fullchip_tunes(w);
  for (std::int64_t mb : workload::request_divisors(w.shape.concurrent_requests)) {
    for (const auto& tune : tunes) {
      Schedule s = build_fullchip(w, wafer, mb, tune);
      const double tps = fitting_tokens_per_s(s, w, wafer, params);
      if (tps > best_tokens_per_s) {  // strict: ties keep fewer micro-batches, then the earlier TUNE
        best_tokens_per_s = tps;
        best = std::move(s);
      } else if (tps < 0.0) {
        const std::int64_t need = meshir::resident_bytes_per_pe_max(s);
        least_per_pe = least_per_pe < 0 ? need : std::min(least_per_pe, need);
      }
    }
  }
  if (!best && na_reason != nullptr) {
    *na_reason = "weights + KV cache + activations need at least " + kib(least_per_pe) +
                 " per PE over the whole grid at every micro-batch count, more than the " +
                 kib(wafer.sram_data_per_pe_bytes()) + " a PE has for data";
  }
  return best;
}

std::optional<meshir::Schedule> build_waferllm(const workload::Workload& w, const wafer::WaferParams& wafer,
                                               std::int64_t side, std::int64_t microbatches, std::string* na_reason) {
  const auto fail = [&](const std::string& why) -> std::optional<Schedule> {
    if (na_reason != nullptr) *na_reason = why;
    return std::nullopt;
  };
  const std::string at = "at P = " + std::to_string(side) + ": ";
  if (side < 1 || side > std::min(wafer.grid_w_pes, wafer.grid_h_pes)) return fail(at + "the square does not fit the grid");
  const std::vector<Rect> slots = square_slots(wafer, side);
  if (slots.empty()) return fail(at + "every square slot holds a defective PE");
  const bool decode = is_decode(w);
  const std::int64_t requests = w.shape.concurrent_requests;
  if (microbatches < 0 || (microbatches > 0 && requests % microbatches != 0)) {
    throw InternalError("build_waferllm: " + std::to_string(microbatches) + " micro-batches for " +
                        std::to_string(requests) + " requests");
  }
  const std::int64_t pes = side * side;
  // Pack with the micro-batch's activations (decode's own choice packs with the whole batch, whose
  // activations are small, then splits it over the stages); the KV cache of every request stays.
  const std::int64_t pack_mb = microbatches > 0 ? microbatches : (decode ? 1 : requests);
  const workload::Workload packed = workload::split_requests(w, pack_mb);
  std::vector<int> region_of(w.layers.size(), 0);
  {
    int region = 0;
    meshir::RegionSram used;
    for (std::size_t i = 0; i < packed.layers.size(); ++i) {
      const meshir::RegionSram need = layer_sram_per_pe(packed.layers[i], pes);
      if (need.total_bytes() > wafer.sram_data_per_pe_bytes()) {
        return fail(at + "layer '" + packed.layers[i].name + "' alone needs " + kib(need.total_bytes()) +
                    " per PE (" + kib(need.resident_bytes) + " of weights and KV cache), more than the " +
                    kib(wafer.sram_data_per_pe_bytes()) + " a PE has for data");
      }
      meshir::RegionSram with{used.resident_bytes + need.resident_bytes, std::max(used.buffer_bytes, need.buffer_bytes)};
      if (with.total_bytes() > wafer.sram_data_per_pe_bytes()) {
        ++region;
        with = need;
      }
      used = with;
      region_of[i] = region;
    }
    if (region + 1 > static_cast<int>(slots.size())) {
      return fail(at + "the layers need " + std::to_string(region + 1) + " squares, the grid holds " +
                  std::to_string(slots.size()));
    }
  }
  const int regions = region_of.back() + 1;
  std::int64_t mb = microbatches;
  if (mb == 0) {
    mb = decode ? 1 : requests;
    for (std::int64_t d : workload::request_divisors(requests)) {
      if (decode && d <= regions) mb = d;
    }
  }
  const workload::Workload per_batch = mb == pack_mb ? packed : workload::split_requests(w, mb);
  Schedule s = empty_schedule("waferllm", w, wafer);
  s.microbatches = mb;
  s.regions.assign(slots.begin(), slots.begin() + regions);
  meshir::Placer b(s, decode, w.moe);
  for (std::size_t i = 0; i < per_batch.layers.size(); ++i) {
    const int r = region_of[i];
    b.place(per_batch.layers[i], r, s.regions[static_cast<std::size_t>(r)], r, {});
  }
  return s;
}

std::vector<std::int64_t> waferllm_sides(const wafer::WaferParams& wafer, std::int64_t step,
                                         const std::vector<std::int64_t>& extra) {
  const std::int64_t largest = std::min(wafer.grid_w_pes, wafer.grid_h_pes);
  std::vector<std::int64_t> sides;
  for (std::int64_t p = std::max<std::int64_t>(1, step); p <= largest; p += std::max<std::int64_t>(1, step)) {
    sides.push_back(p);
  }
  for (std::int64_t p : extra) {
    if (p >= 1 && p <= largest) sides.push_back(p);
  }
  // A grid smaller than the step still has its largest square to tune over.
  if (sides.empty() && largest >= 1) sides.push_back(largest);
  std::sort(sides.begin(), sides.end());
  sides.erase(std::unique(sides.begin(), sides.end()), sides.end());
  return sides;
}

std::optional<meshir::Schedule> build_waferllm_tuned(const workload::Workload& w, const wafer::WaferParams& wafer,
                                                     const cost::CostParams& params,
                                                     std::vector<std::int64_t> candidates, std::string* na_reason) {
  if (candidates.empty()) candidates = waferllm_sides(wafer, 15);
  std::optional<meshir::Schedule> best;
  double best_tokens_per_s = -1.0;
  std::string last_reason;
  for (std::int64_t p : candidates) {
    for (std::int64_t mb : workload::request_divisors(w.shape.concurrent_requests)) {
      std::string why;
      auto s = build_waferllm(w, wafer, p, mb, &why);
      const double tps = s ? fitting_tokens_per_s(*s, w, wafer, params) : -1.0;
      if (s && tps < 0.0) why = "at P = " + std::to_string(p) + ": the packed squares overflow SRAM by the verifier's count";
      // The largest side has the most SRAM per square: its reason (with one prompt per micro-batch,
      // the smallest activations) says best why nothing fits.
      if (tps < 0.0 && p == candidates.back()) last_reason = why;
      if (tps < 0.0) continue;  // more micro-batches shrink the activations a layer carries, so they may fit
      if (tps > best_tokens_per_s) {  // strict: ties keep the smaller side, then fewer micro-batches
        best_tokens_per_s = tps;
        best = std::move(s);
      }
    }
  }
  if (!best && na_reason != nullptr && candidates.empty()) {
    *na_reason = "no square side to tune over fits the grid";
  } else if (!best && na_reason != nullptr) {
    *na_reason = "no square side from " + std::to_string(candidates.front()) + " to " +
                 std::to_string(candidates.back()) + " PEs places the model within SRAM; the largest, " + last_reason;
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
  meshir::Placer b(s, is_decode(w), w.moe);
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
