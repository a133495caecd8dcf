// Distributed evaluation of a sweep: every setting splits into tasks (baselines, search pieces,
// finishing) fixed by the config alone; a hub thread on rank 0 hands them out on request, with
// affinity to the (setting, micro-batch) a rank last worked on and stealing from the fullest group,
// shares each setting's best schedules as incumbents, writes checkpoints, and prints progress.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "wavel/config/config.hpp"
#include "wavel/config/sweep.hpp"
#include "wavel/engine/checkpoint.hpp"
#include "wavel/sweep/records.hpp"
#include "wavel/engine/runtime.hpp"

namespace wavel::driver {

struct DistributeOptions {
  std::string checkpoint_path;        ///< where checkpoints go ("" = never)
  std::string spool_path;             ///< where finished settings' results go until the end ("" = memory)
  bool resume = false;                ///< continue from checkpoint_path
  double checkpoint_interval_s = 0;   ///< also checkpoint this often (0 = only on signals)
  bool progress = false;              ///< progress line on stderr (rank 0)
  double progress_interval_s = 5;
  std::string config_hash;            ///< identity of the results, checked on resume
  std::vector<InputFingerprint> inputs;  ///< the inputs' contents and the build, checked on resume
};

/// What one rank did (timing-dependent).
struct RankStats {
  std::int64_t rank = 0;
  std::int64_t tasks = 0;
  std::int64_t nodes = 0;             ///< search-tree nodes generated
  std::int64_t evaluations = 0;       ///< candidates scored
  double busy_s = 0;                  ///< running tasks
  double idle_s = 0;                  ///< waiting for the hub
  double wall_s = 0;

  template <class Self, class Visit>
  static void fields(Self& r, Visit&& v) {
    v("rank", "1", r.rank);
    v("tasks", "1", r.tasks);
    v("nodes", "1", r.nodes);
    v("evaluations", "1", r.evaluations);
    v("busy_s", "s", r.busy_s);
    v("idle_s", "s", r.idle_s);
    v("wall_s", "s", r.wall_s);
  }
};

struct SweepOutcome {
  std::vector<SettingResult> results;  ///< in setting order, on rank 0 only (empty elsewhere)
  TextFetch texts;                     ///< reads their MeshIR texts, left on disk (rank 0)
  std::vector<RankStats> ranks;        ///< one per rank
};

/// Installs SIGUSR1/SIGTERM handlers that request a checkpoint (idempotent).
void install_checkpoint_signals();

/// After the sweep's last setting (the results read back, tabulated and written): a SIGTERM or SIGUSR1
/// received so far stops the run here with exit 75, the finished settings kept in the spool for --resume.
void stop_if_signalled(const std::string& phase);

/// Evaluates the settings across the ranks of `context`. A signal makes every rank stop, rank 0
/// write the checkpoint, and every rank throw wavel::Error with exit code 75.
SweepOutcome evaluate_distributed(const config::Config& config, const std::vector<config::Setting>& settings,
                                  const RunContext& context, const DistributeOptions& options);

}  // namespace wavel::driver
