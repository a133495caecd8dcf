// The Full-Chip and WaferLLM schedules, built as MeshIR (domain.md §3).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "wavel/cost/params.hpp"
#include "wavel/meshir/schedule.hpp"
#include "wavel/wafer/wafer.hpp"
#include "wavel/workload/workload.hpp"

namespace wavel::baselines {

/// Full-Chip: all weights resident over the whole usable wafer (with defects: its largest rectangle
/// free of defective PEs); every layer runs on it, one after another.
meshir::Schedule build_fullchip(const workload::Workload& workload, const wafer::WaferParams& wafer);

/// WaferLLM with a fixed square region side P: one P x P region per layer; decode pipelines over as
/// many P x P regions as weights and KV need, with allreduce axes alternating X/Y; prefill uses
/// MeshGEMM and GEMM-T. Returns std::nullopt if the model cannot be placed at this P.
std::optional<meshir::Schedule> build_waferllm(const workload::Workload& workload, const wafer::WaferParams& wafer,
                                               std::int64_t region_side_pes);

/// WaferLLM with P tuned offline over `candidate_sides` (default: multiples of 60 that fit), keeping
/// the best throughput under `params` (ties keep the earlier candidate), as WaferLLM's autotuning did.
std::optional<meshir::Schedule> build_waferllm_tuned(const workload::Workload& workload,
                                                     const wafer::WaferParams& wafer, const cost::CostParams& params,
                                                     std::vector<std::int64_t> candidate_sides = {});

/// One decoder layer of WaferLLM's schedule on a P x P region, scaled to the model depth
/// (layer_scale = layers): what WaferLLM's open code times and its published TPR figures report.
meshir::Schedule build_waferllm_layer_sample(const workload::Workload& workload, const wafer::WaferParams& wafer,
                                             std::int64_t region_side_pes);

}  // namespace wavel::baselines
