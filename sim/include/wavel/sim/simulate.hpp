// Simulates MeshIR ops and whole schedules on the mesh model, recording how every sample is scaled up.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <optional>

#include "wavel/meshir/schedule.hpp"
#include "wavel/sim/detail/kernels.hpp"
#include "wavel/sim/microarch.hpp"
#include "wavel/sim/detail/network.hpp"
#include "wavel/wafer/wafer.hpp"

namespace wavel::sim {

/// How to simulate.
struct SimOptions {
  Fidelity fidelity = Fidelity::message;
  std::int64_t packet_wavelets = 16;          ///< packet size at Fidelity::packet
  bool model_ramps = true;                    ///< the PE-router ramps are channels with occupancy
  bool full_region_when_small = false;        ///< simulate the whole used rectangle when it is small
  std::int64_t full_region_max_pes = 64 * 64; ///< "small": at most this many PEs
  std::int64_t max_simulated_steps = 16;      ///< MeshGEMM steps simulated (>= 2); the rest extrapolated
  std::int64_t sample_lines = 3;              ///< lines (or lanes, PEs) simulated per op when sampling
  std::uint64_t seed = 1;                     ///< chooses the sampled lines
  std::optional<MicroArch> micro;             ///< the PE's timing; default microarch_for(wafer)
  bool memoize = true;                        ///< simulate identical ops once (see simulate())
  bool record_trace = false;                  ///< keep each op's timeline for trace export
  std::int64_t trace_max_pes = 16;            ///< sampled PEs per op kept in the trace
  std::int64_t trace_max_spans = 4096;        ///< spans per op kept (the earliest to start)
};

/// One simulated op.
struct OpSimResult {
  double cycles = 0;                  ///< simulated op time: the slowest simulated line
  double colour_switch_cycles = 0;    ///< simulate() only: routers re-configured for a new reduce axis
  double contention_cycles = 0;       ///< simulate() only: extra time from movers of the same step sharing links
  double total_cycles = 0;            ///< cycles + colour switch + contention: what the schedule composes
  double sampling_error = 0;          ///< (slowest - fastest) / slowest over the sampled lines of one work class
  std::int64_t relays = 0;            ///< routes relayed in software (routers out of colours)
  std::int64_t events = 0;            ///< event steps simulated (0 when reused)
  std::int64_t messages = 0;          ///< messages simulated (0 when reused)
  std::int64_t wavelet_hops = 0;      ///< wavelet-hops simulated (0 when reused)
  double represented_messages = 0;    ///< the whole op: simulated x scale factor x steps_total / steps_simulated
  double represented_wavelet_hops = 0;///< likewise (the skew is not split by steps, so this is an estimate)
  int colours_max = 0;                ///< distinct colours at the busiest simulated router
  SampleRecord sample;                ///< what was simulated and how it is scaled up
  std::int64_t mesh_w_pes = 1;        ///< simulated mesh (trace PE indices are y * mesh_w_pes + x)
  std::int64_t mesh_h_pes = 1;
  int reused_from = -1;               ///< simulate(): the op whose simulation this one reuses; -1: its own
  std::vector<Span> spans;            ///< record_trace: tasks and messages of the first trace_max_pes PEs
                                      ///< (at most trace_max_spans; none when reused)
};

/// A simulated schedule: micro-batches run through the steps and stages as a pipeline (compose.hpp).
struct SimResult {
  std::vector<OpSimResult> ops;       ///< parallel to Schedule::ops
  std::vector<double> op_start_cycles;///< start of each op within one unscaled pass (steps in sequence)
  double pass_cycles = 0;             ///< one pass of one micro-batch through all steps (x layer_scale)
  double bottleneck_stage_cycles = 0; ///< slowest pipeline stage (x layer_scale)
  double latency_s = 0;               ///< TPOT (decode) or mean TTFT (prefill)
  double tokens_per_s = 0;            ///< over all concurrent requests
  double tpr_tokens_per_s = 0;        ///< per request
  std::int64_t events = 0;            ///< simulated, summed over the ops simulated
  std::int64_t messages = 0;
  std::int64_t wavelet_hops = 0;
  std::int64_t relays = 0;
  std::int64_t ops_simulated = 0;
  std::int64_t ops_reused = 0;        ///< ops whose result came from an identical op (memo)
  std::int64_t layer_scale = 1;
  std::string scale_rule;             ///< how the op times were scaled to the schedule, in words
};

/// The mesh simulate_op builds for `plan`: its size, the microarchitecture's timing, and the options'
/// fidelity, ramps and trace recording.
NetworkConfig network_config(const KernelPlan& plan, const MicroArch& micro, const SimOptions& options);

/// Simulates op `op_index` of `schedule` on its own (no colour switch, no other op's contention).
/// By default a seeded sample of its lines is simulated (SampleRecord says which and how it scales);
/// with full_region_when_small, the whole used rectangle when it has at most full_region_max_pes PEs.
/// A grouped GEMM with product_rows is each distinct expert's MeshGEMM simulated alone, run after
/// run (the first expert's sample stands for the op's). Throws wavel::InternalError for a bad index, wavel::DataError when a mover names no region, and
/// std::domain_error for sizes the simulator cannot hold.
OpSimResult simulate_op(const meshir::Schedule& schedule, int op_index, const wafer::WaferParams& wafer,
                        const SimOptions& options);

/// Simulates every op, adds colour switches (a region's K-tree kernels changing reduce axis) and the
/// contention of movers of one step that share a region's links, then runs the pass as a pipeline
/// of micro-batches over the stages (compose.hpp). Ops with the same kernel, used size, layouts,
/// reduce axis, group, rounds, work and (movers) distance and lanes are simulated once and reused.
/// `decode`: latency is the steady-state token period; else prefill: mean TTFT over micro-batches.
SimResult simulate(const meshir::Schedule& schedule, const wafer::WaferParams& wafer, bool decode,
                   std::int64_t prompt_tokens, const SimOptions& options);

/// A deterministic sample of search candidates to simulate.
struct CandidateSample {
  std::vector<std::size_t> indices;  ///< ascending
  std::string rule;                  ///< e.g. "8 of 100 candidates: lowest splitmix64(seed 1, index)"
};

/// Picks `samples` of `candidates` (all if samples >= candidates): those with the lowest
/// counter-based hash of (seed, index), ties by index, so every rank picks the same ones.
CandidateSample sample_candidates(std::size_t candidates, std::size_t samples, std::uint64_t seed);

}  // namespace wavel::sim
