// SIGUSR1/SIGTERM: a checkpoint and a planned stop (exit 75), never an abrupt end.
#include <csignal>
#include <string>

#include "wavel/common/error.hpp"
#include "wavel/engine/detail/signals.hpp"
#include "wavel/engine/distribute.hpp"

namespace wavel::engine {

namespace detail {
std::atomic<int> checkpoint_signal{0};  // constant-initialized: the handler needs no guard
}  // namespace detail

namespace {
extern "C" void on_checkpoint_signal(int sig) { detail::checkpoint_signal.store(sig); }
}  // namespace

void stop_if_signalled(const std::string& phase) {
  const int sig = detail::checkpoint_signal.load();
  if (sig == 0) return;
  throw Error(ExitCode::checkpointed, std::string("stopped by ") + (sig == SIGTERM ? "SIGTERM" : "SIGUSR1") + " while " +
                                          phase + "; every item is finished and kept in the spool: rerun with "
                                          "--resume to write the results without searching again");
}

void install_checkpoint_signals() {
  struct sigaction action {};
  action.sa_handler = on_checkpoint_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

}  // namespace wavel::engine
