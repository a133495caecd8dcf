// Distributed evaluation of a job's plan (job.hpp): a hub thread on rank 0 hands tasks out on
// request, with affinity to the group a rank last worked on and stealing from the fullest group,
// folds what tasks find into their slots' shared state, spools finished items' results, writes
// checkpoints and prints progress. It moves bytes only; the job gives them their meaning.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "wavel/engine/checkpoint.hpp"
#include "wavel/engine/job.hpp"
#include "wavel/engine/runtime.hpp"
#include "wavel/engine/spool.hpp"

namespace wavel::engine {

struct DistributeOptions {
  std::string checkpoint_path;        ///< where checkpoints go ("" = never)
  std::string spool_path;             ///< where finished items' results go until the end ("" = memory)
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

/// The finished items' results, on rank 0: each item's bytes lie in the spool.
struct Finished {
  std::shared_ptr<const Spool> spool;
  std::vector<SpoolEntry> entries;  ///< per item, in item order
  std::vector<bool> restored;       ///< per item: spooled by an earlier run (check before use)
};

struct Outcome {
  Finished finished;             ///< rank 0 only (empty elsewhere)
  std::vector<RankStats> ranks;  ///< one per rank
};

/// Installs SIGUSR1/SIGTERM handlers that request a checkpoint (idempotent).
void install_checkpoint_signals();

/// After the run's last item (its results read back and written): a SIGTERM or SIGUSR1 received so
/// far stops the run here with exit 75, the finished items kept in the spool for --resume.
void stop_if_signalled(const std::string& phase);

/// Runs `job`'s plan across the ranks of `context` (each rank passes its own job). A signal makes
/// every rank stop, rank 0 write the checkpoint, and every rank throw wavel::Error with exit code 75.
Outcome run_distributed(Job& job, const RunContext& context, const DistributeOptions& options);

}  // namespace wavel::engine
