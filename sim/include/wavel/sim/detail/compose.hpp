// Runs one schedule's op times as a pipeline: micro-batches flow through the steps in order, a step
// waits for the pipeline stages its ops run on, and decode repeats the pass per generated token.
#pragma once

#include <cstdint>
#include <vector>

#include "wavel/meshir/schedule.hpp"

namespace wavel::sim {

/// The pipeline's outcome.
struct Pipeline {
  double pass_cycles = 0;              ///< one micro-batch alone through every step (layer-scaled)
  double bottleneck_stage_cycles = 0;  ///< busiest stage's time per micro-batch (layer-scaled)
  double latency_s = 0;                ///< decode: steady-state time per token; prefill: mean TTFT
  double tokens_per_s = 0;
  double tpr_tokens_per_s = 0;
  std::vector<double> op_start_cycles; ///< one unscaled pass of one micro-batch
};

/// Runs the pipeline. A step takes its slowest op (times layer_scale unless all its ops are `once`);
/// it holds the stages of its ops, except transfers whose producer is in another stage (they use
/// only links). Decode runs `rounds` tokens per micro-batch and measures the last period; prefill
/// starts every micro-batch at 0, each as its prompt_chunks chunks in order, and a micro-batch's TTFT
/// is its last chunk's end. Throws wavel::InternalError if the times do not match the ops.
Pipeline run_pipeline(const meshir::Schedule& schedule, const std::vector<double>& op_cycles, double clock_hz,
                      bool decode, std::int64_t prompt_tokens, int rounds = 4);

}  // namespace wavel::sim
