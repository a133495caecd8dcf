// A rank's worker: runs the tasks the hub hands out (see distribute.hpp) and reports back.
#pragma once

#include <mpi.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "wavel/config/config.hpp"
#include "wavel/config/sweep.hpp"
#include "wavel/engine/detail/task_plan.hpp"
#include "wavel/engine/distribute.hpp"
#include "wavel/search/search.hpp"
#include "wavel/workload/workload.hpp"

namespace wavel::driver::detail {

/// Runs tasks on this rank; keeps the last setting's workload and search state between tasks.
class Worker {
 public:
  /// `stop` (set by a signal handler) makes a running search piece give up.
  Worker(const config::Config& config, const Plan& plan, const std::vector<config::Setting>& settings,
         const std::atomic<int>* stop);
  /// Task `t`'s result bytes, given its input bytes.
  std::string run(std::size_t t, const std::string& input, TaskCounters& counters);
  /// The signal that asked for a stop, 0 if none.
  [[nodiscard]] int stop_signal() const { return stop_ != nullptr ? stop_->load() : 0; }

 private:
  const config::Config& config_;
  const Plan& plan_;
  const std::vector<config::Setting>& settings_;
  const std::atomic<int>* stop_;
  std::vector<workload::Workload> parts_;  ///< setting_parts of the last setting worked on
  std::size_t parts_setting_ = 0;
  search::SearchWorkspace workspace_;
};

/// Asks rank 0's hub for tasks and runs them until told to stop; each report carries the worker's stop signal.
RankStats work(Worker& worker, MPI_Comm comm, int rank);

}  // namespace wavel::driver::detail
