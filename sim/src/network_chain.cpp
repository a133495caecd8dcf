// Tasks a PE's previous task sets up (Network::task_after, tasks_after): ordered on their PE, so they
// do not make it shared.
#include <cstdint>
#include <vector>

#include "wavel/common/error.hpp"
#include "wavel/sim/detail/network.hpp"

namespace wavel::sim {

std::int64_t Network::task_pe(ItemId task) const {
  if (task >= items_.size()) throw InternalError("sim::Network: task_after names no item");
  if (compact_groups_ && is_hole(task)) {
    const LaneGroup& g = groups_[group_of(task)];
    if (g.kind != Kind::task) throw InternalError("sim::Network: task_after names a message lane");
    return g.a + static_cast<std::int64_t>(task - g.first) * g.a_stride;
  }
  if (items_[task].kind != Kind::task) throw InternalError("sim::Network: task_after names an item that is no task");
  return items_[task].a;
}

ItemId Network::task_after(ItemId previous, double duration_cycles, SpanKind kind) {
  const std::int64_t pe = task_pe(previous);
  const bool chained = pe_last_[static_cast<std::size_t>(pe)] == previous;
  const std::uint8_t before = pe_tasks_[static_cast<std::size_t>(pe)];
  const ItemId id = task(pe, duration_cycles, kind);
  if (chained) pe_tasks_[static_cast<std::size_t>(pe)] = before;  // it cannot overlap `previous`
  after(id, previous);
  return id;
}

Lanes Network::tasks_after(Lanes previous, double duration_cycles, SpanKind kind) {
  if (previous.count == 0) return Lanes{static_cast<ItemId>(items_.size()), 0};
  const std::int64_t pe0 = task_pe(previous.at(0));
  const std::int64_t stride = previous.count > 1 ? task_pe(previous.at(1)) - pe0 : 0;
  bool affine = task_pe(previous.at(previous.count - 1)) == pe0 + static_cast<std::int64_t>(previous.count - 1) * stride;
  const std::uint32_t group = group_of(previous.first);
  affine = affine && group != kNoGroup && group == group_of(previous.at(previous.count - 1));
  if (!affine || (stride == 0 && previous.count > 1)) {  // one by one (their ids are consecutive all the same)
    const ItemId first = task_after(previous.at(0), duration_cycles, kind);
    for (std::uint32_t i = 1; i < previous.count; ++i) task_after(previous.at(i), duration_cycles, kind);
    return Lanes{first, previous.count};
  }
  // A lane that follows its PE's last task does not add to the PE's count: remember the count to
  // restore before tasks() records the new lanes (kNoRestore: it counts).
  constexpr std::uint8_t kNoRestore = 0xff;
  std::vector<std::uint8_t> restore(previous.count, kNoRestore);
  for (std::uint32_t i = 0; i < previous.count; ++i) {
    const auto pe = static_cast<std::size_t>(pe0 + static_cast<std::int64_t>(i) * stride);
    if (pe_last_[pe] == previous.at(i)) restore[i] = pe_tasks_[pe];
  }
  const Lanes made = tasks(pe0, stride, previous.count, duration_cycles, kind);
  for (std::uint32_t i = 0; i < previous.count; ++i) {
    if (restore[i] != kNoRestore) pe_tasks_[static_cast<std::size_t>(pe0 + static_cast<std::int64_t>(i) * stride)] = restore[i];
  }
  after(made, previous);
  return made;
}

}  // namespace wavel::sim
