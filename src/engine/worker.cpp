// A rank's worker; see detail/worker.hpp.
#include "wavel/engine/detail/worker.hpp"

#include <chrono>
#include <exception>

#include "wavel/common/error.hpp"
#include "wavel/common/pack.hpp"
#include "wavel/engine/detail/messages.hpp"

namespace wavel::engine::detail {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

RankStats work(Job& job, MPI_Comm comm, int rank, const std::atomic<int>* stop) {
  RankStats stats;
  stats.rank = rank;
  const auto start = Clock::now();
  Report report;
  for (;;) {
    report.signal = stop != nullptr ? stop->load() : 0;
    send(comm, 0, kReportTag, pack_report(report));
    const auto asked = Clock::now();
    const std::string reply = receive(comm, wait_message(comm, 0, kReplyTag));
    stats.idle_s += seconds_since(asked);
    Unpacker u(reply);
    const auto task = u.get<std::int64_t>();
    if (task < 0) break;
    const std::string input = u.get<std::string>();
    report = Report{};
    report.task = task;
    const auto began = Clock::now();
    try {
      report.result = job.run(static_cast<std::size_t>(task), input, report.counters, stop);
    } catch (const Cancelled&) {
      // A stop is pending: the task is abandoned, stays open in the checkpoint and runs again on --resume.
      report = Report{};
      continue;
    } catch (const Error& e) {
      report.error_code = static_cast<int>(e.code());
      report.error = e.what();
    } catch (const std::exception& e) {
      report.error_code = static_cast<int>(ExitCode::internal);
      report.error = e.what();
    }
    report.busy_s = seconds_since(began);
    stats.busy_s += report.busy_s;
    ++stats.tasks;
    stats.nodes += report.counters.nodes;
    stats.evaluations += report.counters.evaluations;
  }
  stats.wall_s = seconds_since(start);
  return stats;
}

}  // namespace wavel::engine::detail
