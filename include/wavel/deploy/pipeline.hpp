// A model deployed over several systems as a pipeline: decoder layers split into contiguous stages,
// one per wafer, split by cost; each stage searched on its own wafer; the wafers' schedules joined
// into one multi-wafer MeshIR schedule whose transfers between wafers cross the systems' link.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "wavel/cost/params.hpp"
#include "wavel/deploy/deployment.hpp"
#include "wavel/meshir/schedule.hpp"
#include "wavel/wafer/wafer.hpp"
#include "wavel/workload/model.hpp"
#include "wavel/workload/workload.hpp"

namespace wavel::deploy {

/// The part of the model one wafer holds.
struct StagePart {
  std::int64_t first_layer = 0;
  std::int64_t layers = 0;
  bool embedding = false;
  bool head = false;
  std::int64_t dense_layers = 0;  ///< MoE: leading dense layers in the part (a part's kind)
  friend bool operator==(const StagePart& a, const StagePart& b) {
    return a.layers == b.layers && a.embedding == b.embedding && a.head == b.head && a.dense_layers == b.dense_layers;
  }
};

/// Which layers each wafer holds, and the distinct parts (wafers holding alike parts share one search).
struct PipelinePlan {
  std::vector<StagePart> wafers;        ///< per wafer, in pipeline order
  std::vector<std::size_t> part_of;     ///< per wafer: index into `parts`
  std::vector<StagePart> parts;         ///< distinct parts, in order of first use
  std::vector<double> proxy_stage_s;    ///< per wafer: the split's stage time (Full-Chip compute per layer)
  bool fits = true;                     ///< every wafer's weights and KV cache within layer_subset_max_fill of its SRAM
  std::string na_reason;                ///< why not, when it does not fit
};

/// Splits `model` over `wafers` systems: split_layers over each stage's Full-Chip compute per layer
/// (layer_costs), a stage whose weights and KV cache exceed `max_fill` of the wafer's SRAM counting
/// as infinitely slow. With no split that fits, the split balancing compute alone, fits = false.
/// Throws wavel::InputDataError when the model has fewer decoder layers than wafers.
PipelinePlan plan_pipeline(const workload::ModelSpec& model, const workload::WorkloadShape& shape, std::int64_t wafers,
                           const workload::MoeRouting& moe, const wafer::WaferParams& wafer, const cost::CostParams& params,
                           double max_fill);

/// The workload of one part, with the config's MoE capacity factor.
workload::Workload part_workload(const workload::ModelSpec& model, const workload::WorkloadShape& shape,
                                 const StagePart& part, const workload::MoeRouting& moe);

/// One schedule over the wafers of `plan`: `per_part[p]` is part p's single-wafer schedule (all with
/// the same micro-batch count), placed on every wafer holding that part with its layers renamed to
/// their place in the model. Between consecutive wafers a transfer carries the activation from the
/// last op of one to the first region of the next (with a re-layout where a reader of the layer
/// input expects another layout); in decode a second transfer returns the sampled tokens to the
/// first wafer. `parts[p]` is the workload part p's schedule was built from (it names the readers
/// of the layer input). Throws wavel::InternalError when the schedules cannot be joined.
meshir::Schedule join_stages(const PipelinePlan& plan, const std::vector<const meshir::Schedule*>& per_part,
                             const std::vector<const workload::Workload*>& parts, const wafer::ClusterParams& cluster,
                             std::int64_t layers_total, bool decode, const std::string& name);

/// One schedule a part may run, in cycles: its pass (cost::evaluate's plus the on-wafer legs of its
/// crossings to the wafers around it, search::part_crossings) and its slowest stage; the legs of
/// its crossing in and out apart, and the link's own time (latency and bytes) for the crossing out.
struct StageOption {
  double pass_cycles = 0;
  double stage_cycles = 0;
  double in_leg_cycles = 0;
  double out_leg_cycles = 0;
  double out_link_cycles = 0;
};

/// For each part, the index of the option that makes the joined pipeline cheapest under `cost`, a
/// function of the pipeline's pass and its slowest element, nondecreasing in both. Wafer w holds
/// part `part_of[w]`; a link joins each wafer to the next, and the last to the first where
/// `token_return` (decode). The pass is the sum over wafers of their parts' passes plus each link's
/// own time; the slowest element is the largest part stage or link (its own time plus the legs of
/// the two options it joins: a link that outlasts every stage paces the pipeline). First each stage
/// value is tried as the ceiling, each part taking its shortest pass under it: exact whenever no link
/// paces the pick; where one does, every combination is costed (up to 2^20 of them). Ties go to the
/// smaller slowest element, then to the lower indices. Empty if a part has no option.
std::vector<std::size_t> pick_parts(const std::vector<std::vector<StageOption>>& options,
                                    const std::vector<std::size_t>& part_of, bool token_return,
                                    const std::function<double(double pass_cycles, double slowest_cycles)>& cost);

}  // namespace wavel::deploy
