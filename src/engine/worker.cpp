// A rank's worker; see detail/worker.hpp.
#include "wavel/engine/detail/worker.hpp"

#include <chrono>
#include <exception>

#include "wavel/common/error.hpp"
#include "wavel/common/fields.hpp"
#include "wavel/sweep/setting_tasks.hpp"

namespace wavel::driver::detail {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

Worker::Worker(const config::Config& config, const Plan& plan, const std::vector<config::Setting>& settings,
               const std::atomic<int>* stop)
    : config_(config), plan_(plan), settings_(settings), stop_(stop) {}

namespace {
std::vector<search::Objectives> incumbents_of(Unpacker& u) {
  std::vector<search::Objectives> incumbents;
  fields::unpack(u, incumbents);
  return incumbents;
}
}  // namespace

std::string Worker::run(std::size_t t, const std::string& input, TaskCounters& counters) {
  const Task& task = plan_.tasks[t];
  const config::Setting& setting = settings_[task.setting];
  const config::Config& config = config::for_hardware(config_, setting.hardware);
  if (parts_.empty() || parts_setting_ != task.setting) {
    parts_ = setting_parts(config, setting);
    parts_setting_ = task.setting;
  }
  if (task.part >= parts_.size()) throw InternalError("task of a part the setting does not have");
  const workload::Workload& w = parts_[task.part];
  Unpacker u(input);
  switch (task.kind) {
    case Kind::baselines:
      return run_baselines(config, setting, w, task.part, counters);
    case Kind::piece:
      return run_piece(config, setting, w, task.piece, incumbents_of(u), workspace_, counters, stop_);
    case Kind::finish: {
      // The inputs are each part's baselines then its pieces, parts in order (make_plan).
      const auto& from = plan_.inputs[t];
      const auto n = u.get<std::uint64_t>();
      if (n != from.size()) throw InternalError("finishing task with " + std::to_string(n) + " inputs, planned " +
                                                std::to_string(from.size()));
      std::vector<PartResults> results(parts_.size());
      for (std::size_t i = 0; i < from.size(); ++i) {
        const Task& in = plan_.tasks[from[i]];
        PartResults& r = results.at(in.part);
        if (in.kind == Kind::baselines) {
          u.get(r.baselines);
        } else {
          r.pieces.emplace_back();
          u.get(r.pieces.back());
        }
      }
      return run_finish(config, setting, parts_, results, counters);
    }
  }
  throw InternalError("unknown task kind");
}

RankStats work(Worker& worker, MPI_Comm comm, int rank) {
  RankStats stats;
  stats.rank = rank;
  const auto start = Clock::now();
  Report report;
  for (;;) {
    report.signal = worker.stop_signal();
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
      report.result = worker.run(static_cast<std::size_t>(task), input, report.counters);
    } catch (const search::Cancelled&) {
      // A stop is pending: the piece is abandoned, stays open in the checkpoint and runs again on --resume.
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

}  // namespace wavel::driver::detail
