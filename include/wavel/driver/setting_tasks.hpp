// The three kinds of work one setting splits into, each from inputs to bytes so any rank can run
// it: the baselines, pieces of the CUT/TUNE search, and finishing (front, hypervolume, simulation).
#pragma once

#include <atomic>

#include <string>
#include <vector>

#include "wavel/config/config.hpp"
#include "wavel/config/sweep.hpp"
#include "wavel/driver/pack.hpp"
#include "wavel/driver/run.hpp"
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

/// The workload the setting's schedules are built for: the whole model or its layer subset
/// (layer_scale set), with the config's MoE capacity factor.
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

/// What a task did, for the progress line, per-rank statistics and shared incumbents.
struct TaskCounters {
  std::int64_t nodes = 0;                  ///< search-tree nodes generated
  std::int64_t pruned = 0;                 ///< options and points pruned, every rule
  std::int64_t evaluations = 0;            ///< candidates scored
  std::vector<search::Objectives> found;   ///< schedules found (baselines: the seeds)
  double best_tokens_per_s = 0;            ///< finishing: the setting's best
  std::int64_t front_size = 0;             ///< finishing: its front size
};

/// Builds and scores the baselines; the bytes hold them and the seeds among them.
std::string run_baselines(const config::Config& config, const config::Setting& setting, const workload::Workload& w,
                          TaskCounters& counters);

/// One piece of the setting's search.
std::string run_piece(const config::Config& config, const config::Setting& setting, const workload::Workload& w,
                      const search::SearchPiece& piece, const std::vector<search::Objectives>& incumbents,
                      search::SearchWorkspace& workspace, TaskCounters& counters,
                      const std::atomic<int>* stop_flag = nullptr);

/// The setting's result from its baselines' bytes and its pieces' bytes in piece order: the front,
/// its schedules, and the sampled simulation. Returns pack_setting's bytes.
std::string run_finish(const config::Config& config, const workload::Workload& w,
                       const std::string& baselines, const std::vector<std::string>& pieces, TaskCounters& counters);

/// What a task's bytes hold: run_baselines', run_piece's or run_finish's result.
enum class TaskResultKind { baselines, piece, finish };

/// Decodes bytes of that kind read from outside (a checkpoint) without using them; malformed ones
/// throw wavel::Error with exit code 65 (never a bad_alloc or a library exception).
void check_task_result(TaskResultKind kind, const std::string& bytes);

}  // namespace wavel::driver
