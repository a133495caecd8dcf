// The engine's stop requests: SIGUSR1/SIGTERM set one flag that the hub, the workers and the
// end of a run read (install_checkpoint_signals and stop_if_signalled in distribute.hpp).
#pragma once

#include <atomic>

namespace wavel::engine::detail {

/// The signal that asked for a checkpoint, 0 if none.
extern std::atomic<int> checkpoint_signal;

}  // namespace wavel::engine::detail
