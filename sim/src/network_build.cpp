// Building a Network: tasks, messages (their routes, colours and channel users), joins and edges,
// one at a time or as lane groups (a line of like tasks or messages made and linked in one call).
#include <algorithm>
#include <stdexcept>
#include <string>

#include "wavel/common/error.hpp"
#include "wavel/sim/microarch.hpp"
#include "wavel/sim/detail/network.hpp"

namespace wavel::sim {

std::int64_t Network::pe_at(std::int64_t x, std::int64_t y) const {
  if (x < 0 || y < 0 || x >= config_.width_pes || y >= config_.height_pes) {
    throw InternalError("sim::Network: PE (" + std::to_string(x) + ", " + std::to_string(y) + ") is off the " +
                        std::to_string(config_.width_pes) + " x " + std::to_string(config_.height_pes) + " mesh");
  }
  return y * config_.width_pes + x;
}

void Network::refuse_item() const {
  if (ran_) throw InternalError("sim::Network: work added after run()");
  throw std::domain_error("sim::Network: the simulation needs more than " + std::to_string(config_.max_items) +
                          " work items (messages, tasks); the op is too large to simulate at this fidelity");
}

void Network::reserve(std::size_t items, std::size_t edges) {
  items_.reserve(items);
  edges_.reserve(edges);
}

void Network::refuse_task(std::int64_t pe, double duration_cycles) const {
  if (pe < 0 || pe >= pes()) throw InternalError("sim::Network: task on PE " + std::to_string(pe) + " off the mesh");
  if (!(duration_cycles >= 0.0)) throw InternalError("sim::Network: negative or NaN task duration");
}

Network::Route Network::route_of(const SendSpec& spec) const {
  // PE indices fit 32 bits (checked in the constructor), so y = pe / width is one multiply by a
  // 64-bit reciprocal (exact for every 32-bit numerator; Lemire, Kaser and Kurz 2019) instead of a
  // division per end point.
  const auto w = static_cast<std::uint32_t>(config_.width_pes);
  auto y_of = [&](std::int64_t pe) {
    if (width_reciprocal_ == 0) return static_cast<std::uint32_t>(pe);  // width 1
    __extension__ using U128 = unsigned __int128;
    return static_cast<std::uint32_t>((static_cast<U128>(width_reciprocal_) * static_cast<std::uint64_t>(pe)) >> 64);
  };
  const std::uint32_t y0 = y_of(spec.src_pe), y1 = y_of(spec.dst_pe);
  const std::uint32_t x0 = static_cast<std::uint32_t>(spec.src_pe) - y0 * w, x1 = static_cast<std::uint32_t>(spec.dst_pe) - y1 * w;
  Route r;
  r.x_minus = x1 < x0;
  r.y_minus = y1 < y0;
  r.nx = r.x_minus ? x0 - x1 : x1 - x0;
  r.ny = r.y_minus ? y0 - y1 : y1 - y0;
  r.corner = static_cast<std::int64_t>(y0) * config_.width_pes + x1;
  return r;
}

// Inlined into send and sends: a call per message was a tenth of a 4-byte shift. With lanes > 1, the
// route is that of `lanes` messages, each `stride` PEs on from the last, all of one colour; they are
// noted position by position along the route. The outcome is that of noting them one after another:
// channel counts saturate whatever the order, and at each router the one colour is either carried
// already, taken by the first lane there, or relayed for every lane.
template <bool kLanes>
__attribute__((always_inline)) inline void Network::note_route(const SendSpec& spec, const Route& r, std::int64_t units,
                                                               std::int64_t lanes_given, std::int64_t stride, int* relays) {
  const std::int64_t lanes = kLanes ? lanes_given : 1;  // one message: the lane loops fold away
  const std::uint64_t bit = std::uint64_t{1} << spec.colour;
  const std::int64_t w = config_.width_pes;
  const auto add = static_cast<unsigned>(std::min<std::int64_t>(units, 2));
  // Raw pointers and a local flag: a store through a uint8_t may alias anything, so members would be
  // reloaded after every count.
  std::uint8_t* const users = channel_users_.data();
  unsigned most = 0;
  const std::int64_t channel_stride = stride * kChannelsPerPe;
  auto use = [&](std::int64_t pe, Port port) __attribute__((always_inline)) {
    std::uint8_t* u = users + pe * kChannelsPerPe + static_cast<std::int64_t>(port);
    for (std::int64_t i = 0; i < lanes; ++i, u += channel_stride) {
      const unsigned now = std::min(2u, *u + add);
      *u = static_cast<std::uint8_t>(now);
      most = std::max(most, now);
    }
  };
  std::uint64_t* const sets = colours_.data();
  std::uint8_t* const counts = colour_count_.data();
  const std::int64_t routable = config_.routable_colours;
  auto mark = [&](std::int64_t pe) __attribute__((always_inline)) {
    for (std::int64_t i = 0; i < lanes; ++i, pe += stride) {
      auto& set = sets[pe];
      if ((set & bit) != 0) continue;  // most routes reuse colours the router already carries
      auto& count = counts[pe];
      if (count >= routable) {
        ++relays[i];  // out of colours: this router hands the route to its PE, which re-sends it
        continue;
      }
      set |= bit;
      ++count;
    }
  };
  // Every router from source to destination, each with the channel it drives along the route.
  const std::int64_t step_x = r.x_minus ? -1 : 1, step_y = r.y_minus ? -w : w;
  const Port port_x = r.x_minus ? Port::west : Port::east, port_y = r.y_minus ? Port::north : Port::south;
  if (spec.inject && config_.model_ramps) use(spec.src_pe, Port::ramp_in);
  std::int64_t pe = spec.src_pe;
  for (std::int64_t k = 0; k < r.nx; ++k, pe += step_x) {
    mark(pe);
    use(pe, port_x);
  }
  for (std::int64_t k = 0; k < r.ny; ++k, pe += step_y) {
    mark(pe);
    use(pe, port_y);
  }
  mark(pe);
  if (spec.folded_hops > 0) use(spec.src_pe, Port::north);
  if (spec.folded_hops > 1) use(spec.src_pe, Port::south);
  if (spec.eject && config_.model_ramps) use(spec.dst_pe, Port::ramp_out);
  if (most > 1) shared_channels_ = true;
}

Network::Item Network::message_item(const SendSpec& spec, const Route& r, double serial_cycles) const {
  Item m;
  m.kind = Kind::message;
  m.length = serial_cycles;
  m.a = static_cast<std::int32_t>(spec.src_pe);
  m.b = static_cast<std::int32_t>(spec.dst_pe);
  m.corner = static_cast<std::int32_t>(r.corner);
  m.nx = static_cast<std::int32_t>(r.nx);
  m.ny = static_cast<std::int32_t>(r.ny);
  m.folded = static_cast<std::uint8_t>(spec.folded_hops);
  m.flags = static_cast<std::uint8_t>((spec.inject && config_.model_ramps ? Flag::inject : 0) |
                                      (spec.eject && config_.model_ramps ? Flag::eject : 0) |
                                      (r.x_minus ? Flag::x_minus : 0) | (r.y_minus ? Flag::y_minus : 0));
  m.span = SpanKind::message;
  return m;
}

ItemId Network::new_message(const SendSpec& spec, const Route& r, double serial_cycles) {
  return new_item(message_item(spec, r, serial_cycles));
}

void Network::refuse_send(const SendSpec& spec) const {
  if (spec.src_pe < 0 || spec.src_pe >= pes() || spec.dst_pe < 0 || spec.dst_pe >= pes()) {
    throw InternalError("sim::Network: message endpoint off the mesh");
  }
  if (spec.folded_hops < 0 || spec.folded_hops > 2 || (spec.folded_hops > 0 && spec.src_pe != spec.dst_pe)) {
    throw InternalError("sim::Network: folded hops must be 0..2 and only on a message to itself");
  }
  if (spec.bytes < 0) throw InternalError("sim::Network: negative message size");
  if (spec.colour < 0 || spec.colour > 63) throw InternalError("sim::Network: colour outside 0..63");
}

std::int64_t Network::wavelets_of(std::int64_t bytes) const {
  return link_shift_ >= 0 ? (bytes >> link_shift_) + ((bytes & (config_.link_bytes_per_cycle - 1)) != 0 ? 1 : 0)
                          : ceil_div(bytes, config_.link_bytes_per_cycle);
}

std::int64_t Network::unit_wavelets(std::int64_t wavelets) const {
  switch (config_.fidelity) {
    case Fidelity::message: return wavelets;
    case Fidelity::packet: return config_.packet_wavelets;
    case Fidelity::wavelet: return 1;
  }
  return wavelets;
}

bool Network::single_unit(std::int64_t bytes) const {
  const std::int64_t wavelets = wavelets_of(std::max<std::int64_t>(0, bytes));
  return wavelets <= unit_wavelets(wavelets);
}

ItemId Network::send(const SendSpec& spec) {
  const std::int64_t n = pes();
  if (static_cast<std::uint64_t>(spec.src_pe) >= static_cast<std::uint64_t>(n) ||
      static_cast<std::uint64_t>(spec.dst_pe) >= static_cast<std::uint64_t>(n) || spec.bytes < 0 ||
      static_cast<unsigned>(spec.colour) > 63u || static_cast<unsigned>(spec.folded_hops) > 2u ||
      (spec.folded_hops > 0 && spec.src_pe != spec.dst_pe)) {
    refuse_send(spec);
  }
  const std::int64_t wavelets = wavelets_of(spec.bytes);
  const std::int64_t unit = unit_wavelets(wavelets);
  const std::int64_t units = wavelets <= unit ? 1 : ceil_div(wavelets, unit);
  const Route route = route_of(spec);
  const std::int64_t hops = route.nx + route.ny + spec.folded_hops;
  if (units > config_.max_items) {
    throw std::domain_error("sim::Network: a message of " + std::to_string(spec.bytes) + " bytes needs " +
                            std::to_string(units) + " transport units, more than the " +
                            std::to_string(config_.max_items) + " items a simulation may hold");
  }
  int relays = 0;
  note_route<false>(spec, route, units, 1, 0, &relays);
  ++stats_.messages;
  stats_.units = checked_add(stats_.units, units, "transport units");
  stats_.wavelet_hops = checked_add(stats_.wavelet_hops, checked_mul(wavelets, hops, "wavelet-hops"), "wavelet-hops");
  stats_.relays += relays;
  auto mark_relays_of = [&](ItemId id) {
    if (relays > 0) mark_relays(id, relays);
  };
  if (units == 1) {
    const ItemId id = new_message(spec, route, static_cast<double>(wavelets));
    mark_relays_of(id);
    return id;
  }
  // Packets leave in id order, so they queue behind one another on the injection ramp.
  has_packets_ = true;
  const auto first = static_cast<std::uint32_t>(items_.size());
  for (std::int64_t u = 0; u < units; ++u) {
    mark_relays_of(new_message(spec, route, static_cast<double>(std::min(unit, wavelets - u * unit))));
  }
  Item packets;
  packets.kind = Kind::packets;
  packets.a = static_cast<std::int32_t>(first);
  packets.b = static_cast<std::int32_t>(units);
  const ItemId group = new_item(packets);
  for (std::int64_t u = 0; u < units; ++u) add_edge(first + static_cast<ItemId>(u), group);
  return group;
}

void Network::mark_relays(ItemId id, int relays) {
  if (!is_hole(id)) items_[id].flags = static_cast<std::uint8_t>(items_[id].flags | Flag::relayed);
  if (extra_.size() <= id) extra_.resize(static_cast<std::size_t>(id) + 1, 0.0);
  extra_[id] = relays * config_.relay_cycles;
}

void Network::refuse_edge(ItemId item, ItemId dependency) const {
  if (ran_) throw InternalError("sim::Network: dependency added after run()");
  if (item >= items_.size() || dependency >= items_.size()) throw InternalError("sim::Network: unknown item");
}

void Network::after_packets(ItemId item, ItemId dependency) {
  const Item& it = items_[item];
  const auto first = static_cast<ItemId>(it.a);
  for (std::int32_t u = 0; u < it.b; ++u) add_edge(dependency, first + static_cast<ItemId>(u));
}

void Network::add_stream_edge(ItemId from, ItemId to) {
  has_streams_ = true;
  Item& source = items_[from];
  edges_.push_back(Edge{to | kStreamBit, source.edges});
  source.edges = static_cast<std::uint32_t>(edges_.size() - 1);
  depend(to);
  items_[to].flags = static_cast<std::uint8_t>(items_[to].flags | Flag::streamed);
}

void Network::stream(ItemId item, ItemId upstream) {
  if (upstream == kNoItem) return;
  if (ran_) throw InternalError("sim::Network: stream added after run()");
  if (item >= items_.size() || upstream >= items_.size()) throw InternalError("sim::Network: unknown item");
  if (compact_groups_) {
    unhole(item);
    unhole(upstream);
  }
  const Item& down = items_[item];
  const Item& up = items_[upstream];
  if ((down.kind != Kind::message && down.kind != Kind::packets) ||
      (up.kind != Kind::message && up.kind != Kind::packets)) {
    throw InternalError("sim::Network: only a message can stream another message");
  }
  if (down.kind == Kind::packets && up.kind == Kind::packets && down.b == up.b) {
    // Packet u forwards the upstream's packet u: the pipeline keeps its packet granularity.
    for (std::int32_t u = 0; u < down.b; ++u) {
      add_stream_edge(static_cast<ItemId>(up.a) + static_cast<ItemId>(u), static_cast<ItemId>(down.a) + static_cast<ItemId>(u));
    }
  } else if (down.kind == Kind::packets) {
    const auto first = static_cast<ItemId>(down.a);
    for (std::int32_t u = 0; u < down.b; ++u) add_stream_edge(upstream, first + static_cast<ItemId>(u));
  } else {
    add_stream_edge(upstream, item);
  }
}

void Network::release_at(ItemId item, double time_cycles) {
  if (item >= items_.size()) throw InternalError("sim::Network: unknown item");
  if (ran_) throw InternalError("sim::Network: release time set after run()");
  if (compact_groups_) unhole(item);
  Item& it = items_[item];
  if (it.kind == Kind::packets) {
    for (std::int32_t u = 0; u < it.b; ++u) {
      Item& packet = items_[static_cast<std::size_t>(it.a) + static_cast<std::size_t>(u)];
      packet.ready = std::max(packet.ready, time_cycles);
    }
  }
  it.ready = std::max(it.ready, time_cycles);
}

// Lane groups. Their ids are those the single calls would take, in the same order; a compact group
// writes no items, and its links to other groups are one record per call.

namespace {

// PE of the last of `count` lanes from `first`, `stride` apart (strides may be negative).
std::int64_t last_lane_pe(std::int64_t first, std::int64_t count, std::int64_t stride) {
  std::int64_t step = 0, pe = 0;
  if (__builtin_mul_overflow(count - 1, stride, &step) || __builtin_add_overflow(first, step, &pe)) {
    throw InternalError("sim::Network: lane PEs leave the 64-bit range");
  }
  return pe;
}

}  // namespace

Network::LaneGroup& Network::new_group(std::int64_t count) {
  if (ran_ || static_cast<std::int64_t>(items_.size()) + count > config_.max_items) refuse_item();
  LaneGroup g;
  g.first = static_cast<ItemId>(items_.size());
  g.count = static_cast<std::uint32_t>(count);
  items_.grow_uninitialized(static_cast<std::size_t>(count));
  const std::size_t words = (items_.size() + 63) / 64;
  unblocked_.resize(words, 0);
  holes_.resize(words, 0);
  for (std::size_t id = g.first; id < items_.size();) {
    const std::size_t bit = id % 64;
    const std::size_t n = std::min<std::size_t>(64 - bit, items_.size() - id);
    holes_[id / 64] |= n == 64 ? ~std::uint64_t{0} : ((std::uint64_t{1} << n) - 1) << bit;
    id += n;
  }
  compact_groups_ = true;
  groups_.push_back(g);
  return groups_.back();
}

Lanes Network::tasks(std::int64_t first_pe, std::int64_t pe_stride, std::int64_t count, double duration_cycles,
                     SpanKind kind) {
  if (count < 0) throw InternalError("sim::Network: a negative number of lanes");
  if (count == 0) return Lanes{static_cast<ItemId>(items_.size()), 0};
  if (ran_ || static_cast<std::int64_t>(items_.size()) + count > config_.max_items) refuse_item();
  const std::int64_t last_pe = last_lane_pe(first_pe, count, pe_stride);
  refuse_task(first_pe, duration_cycles);
  refuse_task(last_pe, duration_cycles);  // lanes are affine: the ends bound every PE
  std::uint8_t* const placed = pe_tasks_.data();
  const auto first_id = static_cast<ItemId>(items_.size());
  std::int64_t pe = first_pe;
  for (std::int64_t i = 0; i < count; ++i, pe += pe_stride) {
    auto& p = placed[static_cast<std::size_t>(pe)];
    p = static_cast<std::uint8_t>(std::min(2, p + 1));
    pe_last_[static_cast<std::size_t>(pe)] = first_id + static_cast<ItemId>(i);
  }
  LaneGroup& g = new_group(count);
  g.kind = Kind::task;
  g.span = kind;
  g.length_cycles = duration_cycles;
  g.a = first_pe;
  g.a_stride = pe_stride;
  stats_.tasks += count;
  return Lanes{g.first, g.count};
}

Lanes Network::sends(const SendSpec& first_spec, std::int64_t count, std::int64_t src_stride, std::int64_t dst_stride) {
  if (count < 0) throw InternalError("sim::Network: a negative number of lanes");
  if (count == 0) return Lanes{static_cast<ItemId>(items_.size()), 0};
  if (ran_ || static_cast<std::int64_t>(items_.size()) + count > config_.max_items) refuse_item();
  SendSpec spec = first_spec;
  SendSpec last = first_spec;
  last.src_pe = last_lane_pe(first_spec.src_pe, count, src_stride);
  last.dst_pe = last_lane_pe(first_spec.dst_pe, count, dst_stride);
  refuse_send(first_spec);  // lanes are affine: the ends bound every PE
  refuse_send(last);
  if (spec.folded_hops > 0 && src_stride != dst_stride) throw InternalError("sim::Network: folded hops need src == dst on every lane");
  if (!single_unit(spec.bytes)) throw InternalError("sim::Network: lane groups hold single-unit messages only");
  const auto first = static_cast<ItemId>(items_.size());
  std::int64_t hops = 0;
  std::vector<int> relays(static_cast<std::size_t>(count), 0);
  const Route route = route_of(spec);
  const bool uniform = same_route(first_spec, count, src_stride, dst_stride);
  if (uniform) {
    note_route<true>(spec, route, 1, count, src_stride, relays.data());
    hops = count * (route.nx + route.ny + spec.folded_hops);
  } else {
    for (std::int64_t i = 0; i < count; ++i, spec.src_pe += src_stride, spec.dst_pe += dst_stride) {
      const Route r = route_of(spec);
      note_route<false>(spec, r, 1, 1, 0, &relays[static_cast<std::size_t>(i)]);
      hops += r.nx + r.ny + spec.folded_hops;
    }
  }
  const std::int64_t wavelets = wavelets_of(first_spec.bytes);
  LaneGroup& g = new_group(count);
  g.kind = Kind::message;
  g.span = SpanKind::message;
  g.length_cycles = static_cast<double>(wavelets);
  g.folded = static_cast<std::uint8_t>(first_spec.folded_hops);
  g.inject = first_spec.inject;
  g.eject = first_spec.eject;
  g.a = first_spec.src_pe;
  g.a_stride = src_stride;
  g.b = first_spec.dst_pe;
  g.b_stride = dst_stride;
  g.uniform = uniform;
  g.links = route.nx + route.ny + first_spec.folded_hops;
  for (std::int64_t i = 0; i < count; ++i) {
    const int n = relays[static_cast<std::size_t>(i)];
    if (n == 0) continue;
    mark_relays(first + static_cast<ItemId>(i), n);
    stats_.relays += n;
  }
  stats_.messages += count;
  stats_.units = checked_add(stats_.units, count, "transport units");
  stats_.wavelet_hops = checked_add(stats_.wavelet_hops, checked_mul(wavelets, hops, "wavelet-hops"), "wavelet-hops");
  return Lanes{g.first, g.count};
}

bool Network::same_route(const SendSpec& first, std::int64_t count, std::int64_t src_stride, std::int64_t dst_stride) const {
  // Lanes that move as one (equal strides) have one route shape unless a lane's x wraps to another
  // row: a whole-row stride keeps x; a smaller one must keep both ends' x on their rows, and x moves
  // monotonically, so the last lane's x settles it.
  if (src_stride != dst_stride) return false;
  const std::int64_t w = config_.width_pes;
  if (src_stride % w == 0) return true;
  if (src_stride <= -w || src_stride >= w) return false;
  const std::int64_t shift = (count - 1) * src_stride;
  for (std::int64_t pe : {first.src_pe, first.dst_pe}) {
    const std::int64_t x = pe % w + shift;
    if (x < 0 || x >= w) return false;
  }
  return true;
}

SendSpec Network::lane_spec(const LaneGroup& g, std::uint32_t lane) const {
  SendSpec spec;
  spec.src_pe = g.a + static_cast<std::int64_t>(lane) * g.a_stride;
  spec.dst_pe = g.b + static_cast<std::int64_t>(lane) * g.b_stride;
  spec.folded_hops = g.folded;
  spec.inject = g.inject;
  spec.eject = g.eject;
  return spec;
}

std::uint32_t Network::group_of(ItemId id) const {
  auto it = std::upper_bound(groups_.begin(), groups_.end(), id, [](ItemId v, const LaneGroup& g) { return v < g.first; });
  if (it == groups_.begin()) return kNoGroup;
  --it;
  return id - it->first < it->count ? static_cast<std::uint32_t>(it - groups_.begin()) : kNoGroup;
}

bool Network::covers_compact(std::uint32_t group, Lanes lanes) const {
  if (group == kNoGroup) return false;
  const LaneGroup& g = groups_[group];
  return g.compact && lanes.first >= g.first && lanes.first - g.first + lanes.count <= g.count;
}

void Network::unhole(Lanes lanes) {
  if (!compact_groups_) return;
  for (std::uint32_t i = 0; i < lanes.count; ++i) unhole(lanes.at(i));
}

void Network::materialize(std::uint32_t first_group) {
  std::vector<std::uint32_t> todo{first_group};
  while (!todo.empty()) {
    LaneGroup& g = groups_[todo.back()];
    todo.pop_back();
    if (!g.compact) continue;
    g.compact = false;
    for (std::uint32_t i = 0; i < g.count; ++i) {
      const ItemId id = g.first + i;
      Item it;
      if (g.kind == Kind::task) {
        it = task_item(g.a + static_cast<std::int64_t>(i) * g.a_stride, g.length_cycles, g.span);
      } else {
        const SendSpec spec = lane_spec(g, i);
        it = message_item(spec, route_of(spec), g.length_cycles);
        if (id < extra_.size() && extra_[id] != 0.0) it.flags = static_cast<std::uint8_t>(it.flags | Flag::relayed);
      }
      // What the sweep had notified to the lanes before (when it materialises a group late).
      it.ready = std::max(g.ready_all_cycles, id < lane_time_.size() ? lane_time_[id] : 0.0);
      new (&items_[id]) Item(it);
    }
    // What was recorded into its lanes while compact, and not yet notified, becomes their
    // dependency counts.
    for (std::uint32_t e = g.in_edges; e != kNoItem; e = group_edges_[e].next_in) {
      const GroupEdge& r = group_edges_[e];
      if (r.notified) continue;
      for (std::uint32_t k = 0; k < r.count; ++k) ++items_[r.to + k].deps;
    }
    for (std::uint32_t i = 0; i < g.count; ++i) {
      const ItemId id = g.first + i;
      holes_[id / 64] &= ~(std::uint64_t{1} << (id % 64));
      if (items_[id].deps == 0) unblocked_[id / 64] |= std::uint64_t{1} << (id % 64);
    }
    // Its records become its lanes' edges (the dependencies they stand for are counted already).
    // Lanes notify one by one from now on, which a compact group cannot take: those go too.
    for (std::uint32_t e = g.edges; e != kNoItem; e = group_edges_[e].next) {
      const GroupEdge& r = group_edges_[e];
      for (std::uint32_t k = 0; k < r.count; ++k) link(r.from + k, r.to_one ? r.to : r.to + k);
      if (!r.to_one && r.to_group != kNoGroup && groups_[r.to_group].compact) todo.push_back(r.to_group);
    }
    g.edges = kNoItem;
  }
}

void Network::check_lanes(Lanes lanes) const {
  if (ran_) throw InternalError("sim::Network: dependency added after run()");
  if (static_cast<std::size_t>(lanes.first) + lanes.count > items_.size()) throw InternalError("sim::Network: unknown lanes");
}

void Network::add_in_record(std::uint32_t record, std::uint32_t group) {
  LaneGroup& g = groups_[group];
  group_edges_[record].next_in = g.in_edges;
  g.in_edges = record;
  ++g.waiting;
}

std::uint32_t Network::new_group_edge(const GroupEdge& edge) {
  if (group_edges_.size() >= kGroupBit) throw std::domain_error("sim::Network: too many lane records");
  group_edges_.push_back(edge);
  return static_cast<std::uint32_t>(group_edges_.size() - 1);
}

void Network::after(Lanes items, Lanes dependencies) {
  if (items.count != dependencies.count) throw InternalError("sim::Network: lane counts differ");
  if (items.count == 0) return;
  check_lanes(items);
  check_lanes(dependencies);
  // A record only from the lanes of one compact group; anything else is an edge per lane.
  const std::uint32_t from = group_of(dependencies.first);
  const std::uint32_t to = group_of(items.first);
  const bool compact = covers_compact(to, items);
  bool plain = !covers_compact(from, dependencies) || (compact && from == to);  // lanes of one group after each other
  for (std::uint32_t i = 0; i < items.count && !plain && !compact; ++i) plain = is_hole(items.first + i) || items_[items.first + i].kind == Kind::packets;
  if (plain) {
    for (std::uint32_t i = 0; i < items.count; ++i) after(items.first + i, dependencies.first + i);
    return;
  }
  const std::uint32_t index =
      new_group_edge(GroupEdge{dependencies.first, dependencies.count, items.first, compact ? to : kNoGroup,
                               groups_[from].edges, kNoItem, false});
  groups_[from].edges = index;
  if (compact) {
    add_in_record(index, to);
  } else {
    for (std::uint32_t i = 0; i < items.count; ++i) depend(items.first + i);
  }
}

void Network::after(Lanes items, ItemId dependency) {
  if (dependency == kNoItem || items.count == 0) return;
  check_lanes(items);
  if (dependency >= items_.size()) throw InternalError("sim::Network: unknown item");
  if (compact_groups_) unhole(dependency);
  const std::uint32_t to = group_of(items.first);
  const bool compact = covers_compact(to, items);
  if (!compact) {
    unhole(items);
    for (std::uint32_t i = 0; i < items.count; ++i) {
      if (items_[items.first + i].kind == Kind::packets) {
        for (std::uint32_t k = 0; k < items.count; ++k) after(items.first + k, dependency);
        return;
      }
    }
  }
  Item& source = items_[dependency];
  const std::uint32_t index =
      new_group_edge(GroupEdge{dependency, items.count, items.first, compact ? to : kNoGroup, kNoItem, kNoItem, false});
  edges_.push_back(Edge{index | kGroupBit, source.edges});
  source.edges = static_cast<std::uint32_t>(edges_.size() - 1);
  if (compact) {
    add_in_record(index, to);
  } else {
    for (std::uint32_t i = 0; i < items.count; ++i) depend(items.first + i);
  }
}

void Network::after(ItemId item, Lanes dependencies) {
  if (dependencies.count == 0) return;
  check_lanes(dependencies);
  if (item >= items_.size()) throw InternalError("sim::Network: unknown item");
  if (compact_groups_) unhole(item);
  const std::uint32_t from = group_of(dependencies.first);
  if (!covers_compact(from, dependencies) || items_[item].kind == Kind::packets) {
    for (std::uint32_t i = 0; i < dependencies.count; ++i) after(item, dependencies.first + i);
    return;
  }
  groups_[from].edges = new_group_edge(
      GroupEdge{dependencies.first, dependencies.count, item, kNoGroup, groups_[from].edges, kNoItem, true});
  Item& it = items_[item];
  if (it.deps == 0) unblocked_[item / 64] &= ~(std::uint64_t{1} << (item % 64));
  it.deps += static_cast<std::int32_t>(dependencies.count);
}

}  // namespace wavel::sim
