// Event engine of the mesh model: POD events in exact-time buckets ordered by (time, item id), flat
// arrays for channel and PE occupancy, one cache line per item; buckets are recycled, not reallocated.
#include "wavel/sim/detail/network.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "wavel/common/error.hpp"

namespace wavel::sim {

std::string_view to_string(Fidelity fidelity) {
  switch (fidelity) {
    case Fidelity::message: return "message";
    case Fidelity::packet: return "packet";
    case Fidelity::wavelet: return "wavelet";
  }
  return "message";
}

std::optional<Fidelity> parse_fidelity(std::string_view text) {
  for (Fidelity f : {Fidelity::message, Fidelity::packet, Fidelity::wavelet}) {
    if (text == to_string(f)) return f;
  }
  return std::nullopt;
}

std::string_view to_string(SpanKind kind) {
  switch (kind) {
    case SpanKind::launch: return "launch";
    case SpanKind::compute: return "compute";
    case SpanKind::overhead: return "overhead";
    case SpanKind::message: return "message";
  }
  return "compute";
}

// Fresh multi-megabyte arrays per op cost page faults: a third of a 256x256 allreduce's time went to
// the kernel mapping and zeroing pages. Every array is empty when a network starts, as if new.
struct Network::Spare {
  detail::RawArray<Item> items;
  std::vector<Edge> edges;
  std::vector<LaneGroup> groups;
  std::vector<GroupEdge> group_edges;
  std::vector<double> lane_time, channel_free, pe_free, first_start, head, tail_min, extra;
  std::vector<std::uint64_t> colours, unblocked, holes, table_keys;
  std::vector<std::uint8_t> pe_tasks, colour_count, channel_users;
  std::vector<std::uint32_t> uncontested, table_buckets, free_buckets, pe_last;
  std::vector<TimeSlot> times;
  std::vector<Pending> current, late;
};

Network::Spare& Network::spare() {
  thread_local Spare kept;
  return kept;
}

template <class F>
void Network::pair_arrays(Spare& kept, F&& f) {
  f(items_, kept.items);
  f(edges_, kept.edges);
  f(groups_, kept.groups);
  f(group_edges_, kept.group_edges);
  f(lane_time_, kept.lane_time);
  f(holes_, kept.holes);
  f(channel_free_, kept.channel_free);
  f(pe_free_, kept.pe_free);
  f(first_start_, kept.first_start);
  f(head_, kept.head);
  f(tail_min_, kept.tail_min);
  f(extra_, kept.extra);
  f(colours_, kept.colours);
  f(unblocked_, kept.unblocked);
  f(table_keys_, kept.table_keys);
  f(pe_tasks_, kept.pe_tasks);
  f(pe_last_, kept.pe_last);
  f(colour_count_, kept.colour_count);
  f(channel_users_, kept.channel_users);
  f(uncontested_, kept.uncontested);
  f(table_buckets_, kept.table_buckets);
  f(free_buckets_, kept.free_buckets);
  f(times_, kept.times);
  f(current_, kept.current);
  f(late_, kept.late);
}

Network::~Network() {
  // Kept only up to 256 MiB: a rank should not hold the memory of an exceptionally large op.
  constexpr std::size_t kKeptBytes = std::size_t{256} << 20;
  std::size_t bytes = 0;
  pair_arrays(spare(), [&](auto& mine, auto&) {
    bytes += mine.capacity() * sizeof(typename std::decay_t<decltype(mine)>::value_type);
  });
  if (bytes > kKeptBytes) return;
  pair_arrays(spare(), [](auto& mine, auto& kept) {
    mine.clear();
    mine.swap(kept);
  });
}

Network::Network(const NetworkConfig& config) : config_(config) {
  if (config_.width_pes < 1 || config_.height_pes < 1 || config_.link_bytes_per_cycle < 1 ||
      config_.packet_wavelets < 1) {
    throw InternalError("sim::Network: mesh sides, link bandwidth and packet size must be positive");
  }
  // Item ids are 31-bit (the top bit marks stream edges); PE indices are stored as 32-bit in messages.
  if (config_.width_pes > (std::int64_t{1} << 24) || config_.height_pes > (std::int64_t{1} << 24) ||
      pes() > (std::int64_t{1} << 26)) {
    throw std::domain_error("sim::Network: a " + std::to_string(config_.width_pes) + " x " +
                            std::to_string(config_.height_pes) + " mesh is too large to simulate");
  }
  config_.max_items = std::min<std::int64_t>(std::max<std::int64_t>(1, config_.max_items), std::int64_t{1} << 30);
  pair_arrays(spare(), [](auto& mine, auto& kept) {
    mine.swap(kept);
    mine.clear();
  });
  const auto n = static_cast<std::size_t>(pes());
  pe_tasks_.assign(n, 0);
  pe_last_.assign(n, kNoItem);
  // A power-of-two link width (4 bytes on every wafer) turns the per-message division into a shift.
  const std::int64_t lb = config_.link_bytes_per_cycle;
  if ((lb & (lb - 1)) == 0 && lb <= (std::int64_t{1} << 20)) link_shift_ = __builtin_ctzll(static_cast<unsigned long long>(lb));
  if (config_.width_pes > 1) width_reciprocal_ = ~std::uint64_t{0} / static_cast<std::uint64_t>(config_.width_pes) + 1;
  colours_.assign(n, 0);
  colour_count_.assign(n, 0);
  channel_users_.assign(n * kChannelsPerPe, 0);
}

// The run's per-item steps below are inline: each item passes through them once or twice.
inline int Network::path_of(const Item& m) {
  return ((m.flags & Flag::inject) != 0 ? 1 : 0) + m.nx + m.ny + m.folded + ((m.flags & Flag::eject) != 0 ? 1 : 0);
}

bool Network::path_shared(const Item& m) const {
  const int path = path_of(m);
  double latency = 0.0;
  for (int step = 0; step < path; ++step) {
    if (channel_users_[channel_of(m, step, latency)] > 1) return true;
  }
  return false;
}

inline bool Network::contested(const Item& it) const {
  if (it.kind == Kind::task) return pe_tasks_[static_cast<std::size_t>(it.a)] > 1;
  // A message is contested if any channel on its path is shared: one that started outside the queue
  // and then met a shared channel would need a queue round trip that the ordered path avoids.
  return it.kind == Kind::message && shared_channels_ && path_shared(it);
}

inline void Network::become_ready(ItemId id) {
  const Item& it = items_[id];
  if (contested(it)) {
    push(Event{bits_of(it.ready), id, 0});
  } else {
    uncontested_.push_back(id);
  }
}

inline void Network::notify(ItemId to, double finish) {
  Item& next = items_[to];
  if (finish > next.ready) next.ready = finish;
  if (--next.deps == 0) become_ready(to);
}

void Network::drain_uncontested() {
  // Every time these items produce is at or after the current one (a finish follows its start), so
  // the queue's order is kept.
  while (!uncontested_.empty()) {
    const ItemId id = uncontested_.back();
    uncontested_.pop_back();
    if ((id & kGroupBit) != 0) {
      run_group(id & ~kGroupBit);
    } else {
      run_alone(id);
    }
  }
}

// Out of line: records over lanes are rare on the paths that complete() serves most.
void Network::notify_record(std::uint32_t record, double finish) {
  // An item's record over lanes: a compact group takes the finish once for all its lanes.
  GroupEdge& g = group_edges_[record];
  if (g.to_group != kNoGroup && groups_[g.to_group].compact) {
    g.notified = true;
    LaneGroup& lanes = groups_[g.to_group];
    lanes.ready_all_cycles = std::max(lanes.ready_all_cycles, finish);
    if (--lanes.waiting == 0) uncontested_.push_back(g.to_group | kGroupBit);
  } else {
    for (std::uint32_t k = 0; k < g.count; ++k) notify(g.to + k, finish);
  }
}

void Network::complete(ItemId id, double finish, double head) {
  Item& it = items_[id];
  it.finish = finish;
  it.deps = -1;  // finished
  ++completed_;
  makespan_cycles_ = std::max(makespan_cycles_, finish);
  if (has_packets_ && (it.kind == Kind::message || it.kind == Kind::packets)) head_[id] = head;
  if (it.successor != kNoItem) notify(it.successor, finish);
  for (std::uint32_t e = it.edges; e != kNoItem; e = edges_[e].next) {
    const ItemId to = edges_[e].to;
    if ((to & (kStreamBit | kGroupBit)) == 0) {
      notify(to, finish);
      continue;
    }
    if ((to & kGroupBit) != 0) {
      notify_record(to & ~kGroupBit, finish);
      continue;
    }
    // A stream edge: the downstream may start on the first wavelet; its tail follows the upstream's.
    const ItemId down = to & ~kStreamBit;
    double& tail = tail_min_[down];
    tail = std::max(tail, finish + config_.stream_latency_cycles);
    notify(down, head + config_.stream_latency_cycles);
  }
}

std::size_t Network::channel_of(const Item& m, std::int64_t step, double& latency) const {
  const std::int64_t inject = (m.flags & Flag::inject) != 0 ? 1 : 0;
  std::int64_t k = step - inject;
  latency = config_.hop_cycles;
  if (k < 0) {
    latency = 0.0;
    return static_cast<std::size_t>(m.a) * kChannelsPerPe + static_cast<std::size_t>(Port::ramp_in);
  }
  if (k < m.nx) {
    const bool minus = (m.flags & Flag::x_minus) != 0;
    const std::int64_t pe = m.a + (minus ? -k : k);
    return static_cast<std::size_t>(pe) * kChannelsPerPe + static_cast<std::size_t>(minus ? Port::west : Port::east);
  }
  if ((k -= m.nx) < m.ny) {
    const bool minus = (m.flags & Flag::y_minus) != 0;
    const std::int64_t pe = m.corner + (minus ? -k : k) * config_.width_pes;
    return static_cast<std::size_t>(pe) * kChannelsPerPe + static_cast<std::size_t>(minus ? Port::north : Port::south);
  }
  if ((k -= m.ny) < m.folded) {
    return static_cast<std::size_t>(m.a) * kChannelsPerPe + static_cast<std::size_t>(k == 0 ? Port::north : Port::south);
  }
  latency = 0.0;
  return static_cast<std::size_t>(m.b) * kChannelsPerPe + static_cast<std::size_t>(Port::ramp_out);
}

inline void Network::finish_task(ItemId id, const Item& it, double start) {
  const double end = start + it.length;
  if (config_.record_spans) spans_.push_back(Span{id, it.a, -1, it.span, start, end});
  complete(id, end, end);
}

inline void Network::stretch_for_stream(ItemId id, Item& m, double start) {
  // Streaming: the last wavelet cannot leave before the upstream has delivered it, so the body holds
  // every channel until then (the pipeline runs at the slower of the two).
  if ((m.flags & Flag::streamed) != 0) m.length = std::max(m.length, tail_min_[id] - start);
}

inline void Network::deliver(ItemId id, const Item& m, double first_start, double head, double extra) {
  const double delivered = head + m.length + extra;
  if (config_.record_spans) spans_.push_back(Span{id, m.a, m.b, SpanKind::message, first_start, delivered});
  complete(id, delivered, head + std::min(1.0, m.length) + extra);
}

void Network::run_alone(ItemId id) {
  ++stats_.events;
  Item& it = items_[id];
  const double now = it.ready;
  switch (it.kind) {
    case Kind::task:
      finish_task(id, it, now);  // its PE has no other task: free when it is ready
      return;
    case Kind::join:
      complete(id, now, now);
      return;
    case Kind::packets:
      // Its first packet's first wavelet, but never before now (events do not go back in time).
      complete(id, now, std::max(now, head_[static_cast<std::size_t>(it.a)]));
      return;
    case Kind::message: {
      const int path = path_of(it);
      const double extra = (it.flags & Flag::relayed) != 0 ? extra_[id] : 0.0;
      if (path == 0) {
        const double end = std::max(now, (it.flags & Flag::streamed) != 0 ? tail_min_[id] : now) + extra;
        if (config_.record_spans) spans_.push_back(Span{id, it.a, it.b, SpanKind::message, now, end});
        complete(id, end, now + extra);
        return;
      }
      // Alone on every channel of its path: each channel is free when the head reaches it, so the
      // delivery is closed-form. These are the additions the queued walk in process() makes, in the
      // same order, so the times are bit-identical; each channel still counts as an event step.
      stats_.events += path - 1;
      stretch_for_stream(id, it, now);
      if (config_.record_spans) first_start_[id] = now;
      double head = now;
      for (int link = it.nx + it.ny + it.folded; link > 0; --link) head += config_.hop_cycles;
      deliver(id, it, now, head, extra);
      return;
    }
  }
}

void Network::process(Event ev) {
  // Only what contends is queued: a task on a shared PE, or a message with a shared channel on its
  // path. A message keeps moving without a round trip through the heap while its next step would be
  // popped next anyway: keys are unique, so this is the same order as pushing it.
  std::size_t next_channel = ~std::size_t{0};  // the channel of ev.step when the loop goes on
  double next_latency = 0.0;
  for (;;) {
    ++stats_.events;
    const double now = time_of(ev.time_bits);
    Item& it = items_[ev.item];
    if (it.kind == Kind::task) {
      const auto pe = static_cast<std::size_t>(it.a);
      const double start = std::max(now, pe_free_[pe]);
      pe_free_[pe] = start + it.length;
      finish_task(ev.item, it, start);
      return;
    }
    const int path = path_of(it);
    double latency = next_latency;
    const std::size_t channel = next_channel != ~std::size_t{0} ? next_channel : channel_of(it, ev.step, latency);
    // A channel this unit alone crosses is free when the unit reaches it.
    const bool shared = channel_users_[channel] > 1;
    const double start = shared ? std::max(now, channel_free_[channel]) : now;
    if (ev.step == 0) stretch_for_stream(ev.item, it, start);
    if (shared) channel_free_[channel] = start + it.length;
    if (config_.record_spans && ev.step == 0) first_start_[ev.item] = start;
    if (static_cast<int>(ev.step) + 1 == path) {
      const double extra = (it.flags & Flag::relayed) != 0 ? extra_[ev.item] : 0.0;
      deliver(ev.item, it, config_.record_spans ? first_start_[ev.item] : start, start + latency, extra);
      return;
    }
    ev.time_bits = bits_of(start + latency);
    ++ev.step;
    // The next channel is taken now if no other unit ever crosses it (its turn cannot be contested)
    // or if its request would be popped next anyway: either way the order is the same.
    next_channel = channel_of(it, ev.step, next_latency);
    if (channel_users_[next_channel] < 2 || is_next(ev)) continue;
    push(ev);
    return;
  }
}

void Network::run_group(std::uint32_t index) {
  // Every lane alone on its PE and channels: each is what run_alone would make of it, with the same
  // additions in the same order, so the times are bit-identical to running the items.
  LaneGroup& g = groups_[index];
  g.waiting = -1;  // run: the sweep's seeding passes it by
  double* const time = lane_time_.data();
  const bool has_extra = !extra_.empty();
  // Counters in locals: the stores through `time` could otherwise alias them.
  std::int64_t events = 0;
  double makespan = makespan_cycles_;
  for (std::uint32_t i = 0; i < g.count; ++i) {
    const ItemId id = g.first + i;
    const double now = std::max(g.ready_all_cycles, time[id]);
    ++events;
    double finish = now;
    if (g.kind == Kind::task) {
      finish = now + g.length_cycles;
      if (config_.record_spans) {
        spans_.push_back(Span{id, static_cast<std::int32_t>(g.a + static_cast<std::int64_t>(i) * g.a_stride), -1, g.span, now, finish});
      }
    } else {
      std::int64_t links = g.links;
      if (!g.uniform) {
        const Route r = route_of(lane_spec(g, i));
        links = r.nx + r.ny + g.folded;
      }
      const bool ramps = config_.model_ramps;
      const std::int64_t path = (g.inject && ramps ? 1 : 0) + links + (g.eject && ramps ? 1 : 0);
      const double extra = has_extra && id < extra_.size() ? extra_[id] : 0.0;
      if (path == 0) {
        finish = now + extra;
      } else {
        events += path - 1;
        double head = now;
        for (std::int64_t link = links; link > 0; --link) head += config_.hop_cycles;
        finish = head + g.length_cycles + extra;
      }
      if (config_.record_spans) {
        const SendSpec spec = lane_spec(g, i);
        spans_.push_back(Span{id, static_cast<std::int32_t>(spec.src_pe), static_cast<std::int32_t>(spec.dst_pe),
                              SpanKind::message, now, finish});
      }
    }
    time[id] = finish;
    makespan = std::max(makespan, finish);
  }
  stats_.events += events;
  stats_.lanes_swept += g.count;
  makespan_cycles_ = makespan;
  completed_ += g.count;
  for (std::uint32_t e = g.edges; e != kNoItem; e = group_edges_[e].next) {
    GroupEdge& r = group_edges_[e];
    if (r.to_one) {
      double latest = 0;
      for (std::uint32_t k = 0; k < r.count; ++k) latest = std::max(latest, time[r.from + k]);
      Item& next = items_[r.to];
      if (latest > next.ready) next.ready = latest;
      next.deps -= static_cast<std::int32_t>(r.count);
      if (next.deps == 0) become_ready(r.to);
    } else if (r.to_group != kNoGroup && groups_[r.to_group].compact) {
      r.notified = true;
      for (std::uint32_t k = 0; k < r.count; ++k) time[r.to + k] = std::max(time[r.to + k], time[r.from + k]);
      if (--groups_[r.to_group].waiting == 0) uncontested_.push_back(r.to_group | kGroupBit);
    } else {
      for (std::uint32_t k = 0; k < r.count; ++k) notify(r.to + k, time[r.from + k]);
    }
  }
}

void Network::sweep() {
  // Items and compact groups ready from the start, in id order.
  lane_time_.assign(items_.size(), 0.0);
  std::size_t next_group = 0;
  auto groups_before = [&](std::size_t id) {
    for (; next_group < groups_.size() && groups_[next_group].first < id; ++next_group) {
      const LaneGroup& g = groups_[next_group];
      if (g.compact && g.waiting == 0) {
        uncontested_.push_back(static_cast<ItemId>(next_group) | kGroupBit);
        drain_uncontested();
      }
    }
  };
  for (std::size_t word = 0; word < unblocked_.size(); ++word) {
    for (std::uint64_t bits = unblocked_[word]; bits != 0; bits &= bits - 1) {
      const std::size_t id = word * 64 + static_cast<std::size_t>(__builtin_ctzll(bits));
      groups_before(id);
      become_ready(static_cast<ItemId>(id));
      drain_uncontested();
    }
  }
  groups_before(items_.size());
  // A group waits for all it depends on, so records that make some of its lanes wait for others of
  // its lanes (through other items) can stall it where the items would not stall. Such groups become
  // items, with what they were notified so far, and the sweep goes on item by item.
  std::vector<std::uint32_t> stalled;
  while (completed_ != items_.size()) {
    // Compact groups still waiting (those that ran have waiting -1), which includes every compact
    // group they feed.
    stalled.clear();
    for (std::uint32_t g = 0; g < groups_.size(); ++g) {
      if (groups_[g].compact && groups_[g].waiting > 0) stalled.push_back(g);
    }
    if (stalled.empty()) return;  // a true cycle: run() reports it
    for (std::uint32_t g : stalled) materialize(g);
    for (std::uint32_t g : stalled) {
      const LaneGroup& lanes = groups_[g];
      for (std::uint32_t i = 0; i < lanes.count; ++i) {
        if (items_[lanes.first + i].deps != 0) continue;
        become_ready(lanes.first + i);
        drain_uncontested();
      }
    }
  }
}

void Network::run() {
  if (ran_) throw InternalError("sim::Network: run() called twice");
  ran_ = true;
  now_bits_ = kNoTime;
  const bool shared_pes = std::any_of(pe_tasks_.begin(), pe_tasks_.end(), [](std::uint8_t t) { return t > 1; });
  // Per-item side arrays only where something reads them (extra_ is sized as relays are marked).
  if (config_.record_spans) first_start_.assign(items_.size(), 0.0);
  if (has_packets_) head_.assign(items_.size(), 0.0);
  if (has_streams_) tail_min_.assign(items_.size(), 0.0);
  if (compact_groups_ && !shared_pes && !shared_channels_) {
    // Nothing contends: the run is a sweep of the dependency graph, compact groups whole.
    sweep();
    finish_run();
    return;
  }
  for (std::uint32_t g = 0; g < groups_.size(); ++g) materialize(g);
  compact_groups_ = false;
  // Free times only for what is shared.
  const auto n = static_cast<std::size_t>(pes());
  if (shared_pes) pe_free_.assign(n, 0.0);
  if (shared_channels_) channel_free_.assign(n * kChannelsPerPe, 0.0);
  // Items ready from the start (the bits are set only while building, so running one cannot add any).
  for (std::size_t word = 0; word < unblocked_.size(); ++word) {
    for (std::uint64_t bits = unblocked_[word]; bits != 0; bits &= bits - 1) {
      become_ready(static_cast<ItemId>(word * 64 + static_cast<std::size_t>(__builtin_ctzll(bits))));
      drain_uncontested();
    }
  }
  while (!empty()) {
    const Event ev = pop();
    // The next event at this time is known: start loading its item while this one runs.
    if (current_next_ < current_.size()) __builtin_prefetch(&items_[current_[current_next_].item]);
    process(ev);
    drain_uncontested();
  }
  finish_run();
}

void Network::finish_run() {
  if (completed_ != items_.size()) throw InternalError("sim::Network: an item never became ready (dependency cycle)");
  // Spans in time order, not in the order the sweep or the queue decided them: the trace is then the
  // same whichever way the run went.
  std::sort(spans_.begin(), spans_.end(), [](const Span& a, const Span& b) {
    return a.start_cycles != b.start_cycles ? a.start_cycles < b.start_cycles : a.item < b.item;
  });
}

double Network::finish_cycles(ItemId item) const {
  if (item >= items_.size()) throw InternalError("sim::Network: unknown item");
  if (!ran_) throw InternalError("sim::Network: finish time asked before run()");
  if (compact_groups_ && is_hole(item)) return lane_time_[item];
  return items_[item].finish;
}

int Network::colours_max() const {
  int most = 0;
  for (std::uint8_t count : colour_count_) most = std::max<int>(most, count);
  return most;
}

}  // namespace wavel::sim
