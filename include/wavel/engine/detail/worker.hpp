// A rank's worker: runs the tasks the hub hands out (see distribute.hpp) and reports back.
#pragma once

#include <mpi.h>

#include "wavel/engine/distribute.hpp"
#include "wavel/engine/job.hpp"

namespace wavel::engine::detail {

/// Asks rank 0's hub for tasks and runs them with `job` until told to stop; each report carries the
/// stop signal raised so far (`stop`).
RankStats work(Job& job, MPI_Comm comm, int rank, const std::atomic<int>* stop);

}  // namespace wavel::engine::detail
