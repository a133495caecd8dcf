// The hub-worker messages (see detail/messages.hpp).
#include "wavel/engine/detail/messages.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <thread>

#include "wavel/common/error.hpp"
#include "wavel/common/fields.hpp"

namespace wavel::engine::detail {

// Waits for a message without spinning a core (ranks may outnumber cores).
void PollBackoff::idle() {
  constexpr int kYields = 64;
  if (idle_polls_ < kYields) {
    ++idle_polls_;
    std::this_thread::yield();
    return;
  }
  const int doublings = std::min(idle_polls_++ - kYields, 5);
  std::this_thread::sleep_for(std::min(max_sleep_, std::chrono::microseconds(10) * (1 << doublings)));
}

MPI_Status wait_message(MPI_Comm comm, int source, int tag) {
  MPI_Status status;
  int flag = 0;
  PollBackoff backoff(std::chrono::microseconds(100));
  for (;;) {
    MPI_Iprobe(source, tag, comm, &flag, &status);
    if (flag) return status;
    backoff.idle();
  }
}

std::string receive(MPI_Comm comm, const MPI_Status& probed) {
  int size = 0;
  MPI_Get_count(&probed, MPI_CHAR, &size);
  std::string bytes(static_cast<std::size_t>(size), '\0');
  MPI_Recv(bytes.data(), size, MPI_CHAR, probed.MPI_SOURCE, probed.MPI_TAG, comm, MPI_STATUS_IGNORE);
  return bytes;
}

void send(MPI_Comm comm, int dest, int tag, const std::string& bytes) {
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw InternalError("a task message exceeds 2 GiB");
  }
  MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_CHAR, dest, tag, comm);
}

// What task `t` is given: its slot's state, or, finishing, its inputs' results.
std::string task_input(const Plan& plan, std::size_t t, const std::vector<std::string>& results,
                       const std::string& slot) {
  if (!plan.tasks[t].finishing) return slot;
  Packer p;
  p.put(static_cast<std::uint64_t>(plan.inputs[t].size()));
  for (std::size_t in : plan.inputs[t]) p.put(results[in]);
  return p.take();
}

std::string pack_report(const Report& r) {
  Packer p;
  fields::pack(p, r);
  return p.take();
}

Report unpack_report(const std::string& bytes) {
  Unpacker u(bytes);
  Report r;
  fields::unpack(u, r);
  return r;
}

}  // namespace wavel::engine::detail
