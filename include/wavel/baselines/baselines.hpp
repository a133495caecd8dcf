// The Full-Chip and WaferLLM schedules, built as MeshIR (domain.md §3).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "wavel/cost/params.hpp"
#include "wavel/meshir/placer.hpp"
#include "wavel/meshir/schedule.hpp"
#include "wavel/wafer/wafer.hpp"
#include "wavel/workload/workload.hpp"

namespace wavel::baselines {

/// Square P x P slots on the grid in snake order (consecutive slots are neighbours), skipping slots
/// with defective PEs: WaferLLM's regions, and the search's square layouts.
std::vector<meshir::Rect> square_slots(const wafer::WaferParams& wafer, std::int64_t side);

/// Full-Chip: all weights resident over the whole usable wafer (with defects: its largest rectangle
/// free of defective PEs); every layer runs on it, one after another, for `microbatches` equal
/// micro-batches of the requests in turn (it must divide them), placed under `tune` (its fusion and
/// split epilogues; the region and its K-tree groups are Full-Chip's own).
meshir::Schedule build_fullchip(const workload::Workload& workload, const wafer::WaferParams& wafer,
                                std::int64_t microbatches = 1, const meshir::Tune& tune = {});

/// The single-region TUNEs Full-Chip tries, first the one that runs WaferLLM's kernels as they are:
/// fusion where some layer has operators to fuse, split epilogues where some decode layer has one.
std::vector<meshir::Tune> fullchip_tunes(const workload::Workload& workload);

/// Full-Chip as the strongest single-region schedule: its best micro-batch count (every divisor of
/// the requests, in both phases) and TUNE (fullchip_tunes) among those that fit in SRAM under the
/// verifier's SRAM model; ties keep fewer micro-batches, then the earlier TUNE. With none,
/// std::nullopt and `na_reason` (if given) says why.
std::optional<meshir::Schedule> build_fullchip_tuned(const workload::Workload& workload,
                                                     const wafer::WaferParams& wafer, const cost::CostParams& params,
                                                     std::string* na_reason = nullptr);

/// WaferLLM with a fixed square region side P: consecutive layers packed into P x P regions in
/// snake order while they fit; decode pipelines micro-batches over the regions, with allreduce axes
/// alternating X/Y; prefill uses MeshGEMM and GEMM-T and streams its micro-batches through the
/// regions. `microbatches` must divide the requests; 0 takes WaferLLM's own choice (decode: the
/// largest divisor not above the region count; prefill: one prompt per micro-batch). Returns
/// std::nullopt if the model cannot be placed at this P, with the reason in `na_reason` if given.
std::optional<meshir::Schedule> build_waferllm(const workload::Workload& workload, const wafer::WaferParams& wafer,
                                               std::int64_t region_side_pes, std::int64_t microbatches = 0,
                                               std::string* na_reason = nullptr);

/// The square sides WaferLLM's tuning tries: multiples of `step_pes` up to the shorter grid side,
/// plus `extra_sides` that fit, ascending and distinct; on a grid shorter than the step, its largest square.
std::vector<std::int64_t> waferllm_sides(const wafer::WaferParams& wafer, std::int64_t step_pes,
                                         const std::vector<std::int64_t>& extra_sides = {});

/// WaferLLM tuned offline over `candidate_sides` (default: waferllm_sides(wafer, 15)) and every
/// micro-batch count dividing the requests, keeping the best throughput under `params` among the
/// schedules that fit in SRAM (ties keep the smaller side, then fewer micro-batches), as
/// WaferLLM's autotuning did. With none, std::nullopt and `na_reason` (if given) says why.
std::optional<meshir::Schedule> build_waferllm_tuned(const workload::Workload& workload,
                                                     const wafer::WaferParams& wafer, const cost::CostParams& params,
                                                     std::vector<std::int64_t> candidate_sides = {},
                                                     std::string* na_reason = nullptr);

/// One decoder layer of WaferLLM's schedule on a P x P region, scaled to the model depth
/// (layer_scale = layers): what WaferLLM's open code times and its published TPR figures report.
meshir::Schedule build_waferllm_layer_sample(const workload::Workload& workload, const wafer::WaferParams& wafer,
                                             std::int64_t region_side_pes);

}  // namespace wavel::baselines
