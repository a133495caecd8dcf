// The three kinds of work one setting splits into, each from inputs to bytes so any rank can run
// it: the baselines, pieces of the CUT/TUNE search, and finishing (front, hypervolume, simulation).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

#include <string>
#include <vector>

#include "wavel/config/config.hpp"
#include "wavel/config/sweep.hpp"
#include "wavel/deploy/pipeline.hpp"
#include "wavel/common/fields.hpp"
#include "wavel/sweep/records.hpp"
#include "wavel/search/search.hpp"
#include "wavel/workload/workload.hpp"

namespace wavel::driver {

void pack_setting(const SettingResult& r, Packer& p);
SettingResult unpack_setting(Unpacker& u);

/// Layer-subset method (domain.md §4): a setting whose weights and KV cache need more than
/// workloads.layer_subset_max_fill of the wafer's SRAM is built with the largest number of layers k
/// dividing the model's depth L whose k-layer model stays under it (at least 1), and every
/// schedule's costs are scaled by L / k (embedding and head included, so they are over-counted).
struct LayerSubset {
  std::int64_t layers = 0;  ///< layers built; 0 = the whole model
  std::int64_t scale = 1;   ///< model layers / layers
};
LayerSubset choose_layer_subset(const config::Config& config, const config::Setting& setting);

/// The pipeline of a setting over setting.wafers > 1 systems (deploy::plan_pipeline under the
/// config's layer_subset_max_fill), or none on one wafer.
std::optional<deploy::PipelinePlan> setting_pipeline(const config::Config& config, const config::Setting& setting);

/// The workloads a setting's search covers, one search each: on one wafer the whole model or its
/// layer subset (layer_scale set); over several, the pipeline's distinct parts. With the config's
/// MoE capacity factor.
std::vector<workload::Workload> setting_parts(const config::Config& config, const config::Setting& setting);

/// setting_parts(...)[0]: the one workload of a setting on one wafer.
workload::Workload setting_workload(const config::Config& config, const config::Setting& setting);

/// Workload and wafer figures of a setting (of the whole model, and `subset`, the layers its
/// schedules use), without schedules (what a dry run prints).
SettingResult describe_setting(const config::Config& config, const config::Setting& setting, const LayerSubset& subset);

/// 90 % intervals of `best` and of its ratios to the placed `schedules`, all under the same
/// cost.draws parameter draws (NaN without an uncertainty or without `best`); texts left on disk
/// are read through `texts`.
PredictionIntervals prediction_intervals(const config::Config& config, const workload::WorkloadShape& shape,
                                         const meshir::Schedule* best, const std::vector<ScheduleResult>& schedules,
                                         const TextFetch& texts = {});

/// What a task did, for the progress line, per-rank statistics and shared incumbents (the engine's
/// counters carry it as engine::TaskCounters: SweepJob::run converts).
struct TaskCounters {
  std::int64_t nodes = 0;                  ///< search-tree nodes generated
  std::int64_t pruned = 0;                 ///< options and points pruned, every rule
  std::int64_t evaluations = 0;            ///< candidates scored
  std::vector<search::Objectives> found;   ///< schedules found (baselines: the seeds)
  double best_tokens_per_s = 0;            ///< finishing: the setting's best
  std::int64_t front_size = 0;             ///< finishing: its front size
};

/// Builds and scores the baselines of part `part` of the setting (workload `w`); the bytes hold
/// them and the seeds among them.
std::string run_baselines(const config::Config& config, const config::Setting& setting, const workload::Workload& w,
                          std::size_t part, TaskCounters& counters);

/// One piece of the setting's search.
std::string run_piece(const config::Config& config, const config::Setting& setting, const workload::Workload& w,
                      const search::SearchPiece& piece, const std::vector<search::Objectives>& incumbents,
                      search::SearchWorkspace& workspace, TaskCounters& counters,
                      const std::atomic<int>* stop_flag = nullptr);

/// What the searches of one part of a setting returned: its baselines' bytes, its pieces' in piece order.
struct PartResults {
  std::string baselines;
  std::vector<std::string> pieces;
};

/// The setting's result from its parts' results (setting_parts order): the front, its schedules,
/// and the sampled simulation; over several wafers the parts' schedules joined into pipelines
/// (pipeline_finish.cpp). Returns pack_setting's bytes.
std::string run_finish(const config::Config& config, const config::Setting& setting,
                       const std::vector<workload::Workload>& parts, const std::vector<PartResults>& results,
                       TaskCounters& counters);

namespace detail {
/// The square sides WaferLLM's tuning tries under the config's `baselines` section.
std::vector<std::int64_t> waferllm_sides(const config::Config& config);
/// The search options a setting's pieces run with: a pipeline's parts (wafers > 1) with
/// SearchOptions::pipeline_part and every objective on.
search::SearchOptions part_search_options(const config::Config& config, const config::Setting& setting);
/// run_finish over several wafers.
SettingResult finish_pipeline(const config::Config& config, const config::Setting& setting,
                              const deploy::PipelinePlan& plan, const std::vector<workload::Workload>& parts,
                              const std::vector<PartResults>& results, TaskCounters& counters);
/// Scores a schedule built for workload `w` (not placed, with `na_reason`, when there is none).
ScheduleResult score(const std::string& name, const std::optional<meshir::Schedule>& schedule,
                     const config::Config& config, const workload::Workload& w, const std::string& na_reason);
/// Simulates a schedule of the setting beside its model cost and records the pairs in `out`.
void simulate_sample(const std::string& name, const meshir::Schedule& schedule, const config::Config& config,
                     const workload::WorkloadShape& shape, SettingResult& out);
void unpack_candidates(Unpacker& u, std::vector<search::SearchCandidate>& out);
search::SearchStats unpack_stats(Unpacker& u);
}  // namespace detail

/// The work counters of a search's statistics (timing left out).
SearchCounts search_counts(const search::SearchStats& stats);

/// A setting's kinds of task, and so what a task's bytes hold: run_baselines', run_piece's or
/// run_finish's result (also the engine's kind index of a sweep task: SweepJob).
enum class TaskResultKind : std::uint8_t { baselines, piece, finish };

/// Decodes bytes of that kind read from outside (a checkpoint) without using them; malformed ones
/// throw wavel::Error with exit code 65 (never a bad_alloc or a library exception).
void check_task_result(TaskResultKind kind, const std::string& bytes);

}  // namespace wavel::driver
