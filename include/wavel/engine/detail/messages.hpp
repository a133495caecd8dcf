// The messages between the hub and its workers (internal to distribute.cpp; see distribute.hpp).
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "wavel/engine/job.hpp"

namespace wavel::engine::detail {

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

/// What task `t` is given: its slot's state, or, finishing, the count and bytes of its inputs' results.
std::string task_input(const Plan& plan, std::size_t t, const std::vector<std::string>& results,
                       const std::string& slot);

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

}  // namespace wavel::engine::detail
