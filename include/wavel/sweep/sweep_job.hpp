// A sweep as the engine's job: each setting splits into tasks (its baselines, pieces of its CUT/TUNE
// search, its finishing) whose bytes setting_tasks.hpp defines; the slots share each setting's best
// schedules as incumbents. evaluate_sweep runs it on every rank and reads the results back.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "wavel/config/config.hpp"
#include "wavel/config/sweep.hpp"
#include "wavel/engine/distribute.hpp"
#include "wavel/engine/job.hpp"
#include "wavel/search/search.hpp"
#include "wavel/sweep/records.hpp"
#include "wavel/sweep/setting_tasks.hpp"
#include "wavel/workload/workload.hpp"

namespace wavel::driver {

/// The sweep's own facts about a task (engine::Task holds the engine's).
struct SweepTask {
  using Kind = TaskResultKind;
  Kind kind = Kind::baselines;
  std::size_t setting = 0;    ///< index into the settings (engine::Task::item)
  std::size_t part = 0;       ///< which of setting_parts (a pipeline's distinct wafer parts; else 0)
  search::SearchPiece piece;  ///< pieces only
};

class SweepJob final : public engine::Job {
 public:
  /// Per setting and part: its baselines, its search pieces (grouped by micro-batches); then the
  /// setting's finishing task.
  SweepJob(const config::Config& config, const std::vector<config::Setting>& settings);

  [[nodiscard]] const engine::Plan& plan() const override { return plan_; }
  std::string run(std::size_t t, const std::string& input, engine::TaskCounters& counters,
                  const std::atomic<int>* stop) override;
  void merge(std::string& slot, const std::string& found) const override;
  void check_result(std::size_t t, const std::string& bytes) const override;
  void check_slot(const std::string& bytes) const override;
  [[nodiscard]] std::string item_label(std::size_t item) const override;
  [[nodiscard]] const std::vector<SweepTask>& tasks() const { return tasks_; }

 private:
  const config::Config& config_;
  const std::vector<config::Setting>& settings_;
  engine::Plan plan_;
  std::vector<SweepTask> tasks_;  ///< beside plan_.tasks
  std::vector<workload::Workload> parts_;  ///< setting_parts of the last setting worked on
  std::size_t parts_setting_ = 0;
  search::SearchWorkspace workspace_;
};

/// The fingerprints of every file `config` read and of this build, in a fixed order (InputMissingError
/// if a file cannot be read any more): what a checkpoint or a spool is bound to beyond the config.
std::vector<engine::InputFingerprint> input_fingerprints(const config::Config& config);

struct SweepOutcome {
  std::vector<SettingResult> results;  ///< in setting order, on rank 0 only (empty elsewhere)
  TextFetch texts;                     ///< reads their MeshIR texts, left in the spool (rank 0)
  std::vector<engine::RankStats> ranks;  ///< one per rank
};

/// Evaluates the settings across the ranks of `context` (engine::run_distributed) and reads the
/// finished settings back on rank 0, their MeshIR texts left in the spool. Collective: a failure on
/// rank 0 is thrown on every rank.
SweepOutcome evaluate_sweep(const config::Config& config, const std::vector<config::Setting>& settings,
                            const engine::RunContext& context, const engine::DistributeOptions& options);

namespace detail {
/// The finished settings' results in setting order, their MeshIR texts left in the spool (each
/// `meshir` emptied and `meshir_ref` set). Those an earlier run spooled (`restored`) are checked like a
/// checkpoint's, as their schedules go to the results (InputDataError naming the spool).
std::vector<SettingResult> read_back(const engine::Finished& finished, const std::vector<config::Setting>& settings);
/// Reads the texts read_back left in the spool; rows asked for in setting order unpack each setting once.
TextFetch spool_texts(const engine::Finished& finished);
}  // namespace detail

}  // namespace wavel::driver
