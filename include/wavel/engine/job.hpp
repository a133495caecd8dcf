// What the distributed engine runs: a plan of tasks whose inputs and results are opaque bytes, and
// the job that gives those bytes their meaning (a sweep's settings, in sweep/sweep_job.hpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "wavel/common/error.hpp"

namespace wavel::engine {

/// One task as the engine schedules it; what it computes is the job's.
struct Task {
  std::uint8_t kind = 0;     ///< index into Plan::kind_names (progress and ETA are kept per kind)
  bool finishing = false;    ///< folds its inputs into its item's result, which goes to the spool
  std::size_t item = 0;      ///< the item (a sweep's setting) it belongs to
  std::size_t slot = 0;      ///< the shared state it reads, and, if not finishing, adds to
  std::size_t group = 0;     ///< tasks sharing cached state on a rank (taken one after another)
  std::size_t finish = 0;    ///< the finishing task that consumes it (a finishing task: itself)
};

/// The tasks of a run, fixed by its input alone, so any rank count gives identical bytes.
struct Plan {
  std::vector<Task> tasks;
  std::vector<std::vector<std::size_t>> inputs;  ///< per finishing task: the tasks whose results it folds, in order
  std::size_t items = 0;
  std::string item_noun = "items";                 ///< what the items are, plural, for messages ("settings")
  std::size_t groups = 0;
  std::size_t slots = 0;
  /// Per group: its family (groups whose cached state is alike, so a rank takes them in a row), or kNoFamily.
  std::vector<std::size_t> group_family;
  std::vector<std::vector<std::size_t>> families;  ///< the groups of each family, ascending
  static constexpr std::size_t kNoFamily = static_cast<std::size_t>(-1);
  std::vector<std::string> kind_names;             ///< per Task::kind, for the progress line
  std::uint64_t fingerprint = 0;                   ///< of the task list: a checkpoint only resumes the same plan
};

/// What a task did, for the progress line, the per-rank statistics and the shared state.
struct TaskCounters {
  std::int64_t nodes = 0;        ///< search-tree nodes generated
  std::int64_t pruned = 0;       ///< options pruned
  std::int64_t evaluations = 0;  ///< candidates scored
  std::string found;             ///< bytes Job::merge adds to the task's slot
  std::string note;              ///< a finishing task's one-line summary for the progress line

  template <class Self, class Visit>
  static void fields(Self& r, Visit&& v) {
    v("nodes", "1", r.nodes);
    v("pruned", "1", r.pruned);
    v("evaluations", "1", r.evaluations);
    v("found", "", r.found);
    v("note", "", r.note);
  }
};

/// The work the engine distributes. One instance per rank: run() is called by the rank's worker
/// only; the const members also by rank 0's hub thread, at the same time.
class Job {
 public:
  virtual ~Job() = default;
  [[nodiscard]] virtual const Plan& plan() const = 0;
  /// Task `t`'s result bytes. `input` is its slot's state (a finishing task: its inputs' results,
  /// see task_input). May throw wavel::Cancelled once `*stop` is set.
  virtual std::string run(std::size_t t, const std::string& input, TaskCounters& counters,
                          const std::atomic<int>* stop) = 0;
  /// Adds `found` to a slot's state ("" is the empty state).
  virtual void merge(std::string& slot, const std::string& found) const = 0;
  /// Decodes, without using them, a result or a slot state read back from a checkpoint; throws
  /// wavel::Error on malformed bytes.
  virtual void check_result(std::size_t t, const std::string& bytes) const = 0;
  virtual void check_slot(const std::string& bytes) const = 0;
  /// How the progress line names an item ("setting 12").
  [[nodiscard]] virtual std::string item_label(std::size_t item) const = 0;
};

}  // namespace wavel::engine
