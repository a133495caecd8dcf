// The task plan of a distributed sweep and the messages between the hub and its workers
// (internal to distribute.cpp; see distribute.hpp).
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "wavel/config/config.hpp"
#include "wavel/config/sweep.hpp"
#include "wavel/sweep/setting_tasks.hpp"
#include "wavel/search/search.hpp"

namespace wavel::driver::detail {

enum class Kind : std::uint8_t { baselines, piece, finish };

struct Task {
  Kind kind = Kind::baselines;
  std::size_t setting = 0;       ///< index into the settings
  std::size_t part = 0;          ///< which of setting_parts (a pipeline's distinct wafer parts; else 0)
  std::size_t slot = 0;          ///< the incumbent set the task shares: per setting, or per (part, micro-batches) of a pipeline
  search::SearchPiece piece;     ///< pieces only
  std::size_t group = 0;         ///< tasks sharing cached state: a setting's baselines, or (setting, micro-batches)
  std::size_t finish = 0;        ///< the finishing task that consumes this one (finish: itself)
};

struct Plan {
  std::vector<Task> tasks;
  std::vector<std::vector<std::size_t>> inputs;  ///< per task: for a finish, its baselines then its pieces
  std::size_t groups = 0;
  /// Per group: its family, the groups of one model, phase, request count and micro-batch count
  /// over every length, part and wafer count. Their blocks are alike (a decode MLP block does not
  /// depend on the context length), so a rank that takes a family's groups one after another reuses
  /// its block costs (search::SearchWorkspace).
  std::vector<std::size_t> group_family;
  std::vector<std::vector<std::size_t>> families;  ///< the groups of each family, ascending
  static constexpr std::size_t kNoFamily = static_cast<std::size_t>(-1);  ///< finishing tasks' groups
  std::size_t slots = 0;                         ///< incumbent sets (Task::slot)
  std::uint64_t fingerprint = 0;                 ///< of the task list: a checkpoint only resumes the same plan
};

/// Per setting and part: its baselines, its search pieces (grouped by micro-batches); then the
/// setting's finishing task.
Plan make_plan(const config::Config& config, const std::vector<config::Setting>& settings);

// Message tags on the hub's own communicator.
constexpr int kReportTag = 1;
constexpr int kReplyTag = 2;
// Replies other than a task index.
constexpr std::int64_t kFinished = -1;
constexpr std::int64_t kStop = -2;

/// Polling that answers at once while messages come often and sleeps while they do not: after
/// activity the first polls only yield the core, then the sleeps grow from 10 us to `max_sleep`.
/// Tiny tasks (a 100 000-setting sweep) were bound by fixed 100-200 us sleeps per message.
class PollBackoff {
 public:
  explicit PollBackoff(std::chrono::microseconds max_sleep) : max_sleep_(max_sleep) {}
  void reset() { idle_polls_ = 0; }
  /// Called after a poll that found nothing.
  void idle();

 private:
  std::chrono::microseconds max_sleep_;
  int idle_polls_ = 0;
};

/// Waits for a message, yielding and then sleeping (PollBackoff) rather than spinning a core
/// (ranks may outnumber cores).
MPI_Status wait_message(MPI_Comm comm, int source, int tag);
/// Receives the message `probed` describes.
std::string receive(MPI_Comm comm, const MPI_Status& probed);
/// Sends bytes; throws InternalError past 2 GiB.
void send(MPI_Comm comm, int dest, int tag, const std::string& bytes);

/// What task `t` needs: the incumbents of its setting (a piece), or its inputs' results (a finish).
std::string task_input(const Plan& plan, std::size_t t, const std::vector<std::string>& results,
                       const std::vector<search::Objectives>& incumbents);

/// Adds schedules found to a setting's incumbents, keeping only its Pareto front.
void merge_incumbents(std::vector<search::Objectives>& incumbents, const std::vector<search::Objectives>& found);

/// A worker's report: the task it finished (or -1), how it went, and what it found.
struct Report {
  std::int64_t task = -1;
  std::int32_t error_code = 0;
  std::string error;
  std::int32_t signal = 0;
  TaskCounters counters;
  double busy_s = 0;
  std::string result;

  template <class Self, class Visit>
  static void fields(Self& r, Visit&& v) {
    v("task", "1", r.task);
    v("error_code", "1", r.error_code);
    v("error", "", r.error);
    v("signal", "1", r.signal);
    v("counters", "", r.counters);
    v("busy_s", "s", r.busy_s);
    v("result", "", r.result);
  }
};

std::string pack_report(const Report& r);
Report unpack_report(const std::string& bytes);

}  // namespace wavel::driver::detail
