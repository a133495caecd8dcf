// Streamed K-tree allreduce, multicast and interleaved-ring shift as message graphs on a Network.
#include <algorithm>
#include <array>
#include <cmath>

#include "wavel/common/error.hpp"
#include "wavel/sim/detail/kernels.hpp"

namespace wavel::sim {

namespace {

ItemId item_at(const std::vector<ItemId>& items, std::int64_t i) {
  return items.empty() ? kNoItem : items[static_cast<std::size_t>(i)];
}

// What a PE combines before it forwards: its own partial (a plain dependency) and the streams it
// receives (stream dependencies). A K-tree PE receives at most four: two chains at each level.
struct Inputs {
  ItemId partial = kNoItem;
  std::array<ItemId, 4> streams{};
  std::size_t count = 0;
  void add(ItemId stream) {
    if (count == streams.size()) throw InternalError("sim::ktree_allreduce: a PE receives more than four streams");
    streams[count++] = stream;
  }
};

ItemId send_streamed(Network& net, std::int64_t src, std::int64_t dst, std::int64_t bytes, int colour,
                     const Inputs& in, bool inject = true) {
  SendSpec spec;
  spec.src_pe = src;
  spec.dst_pe = dst;
  spec.bytes = bytes;
  spec.colour = colour;
  spec.inject = inject;
  const ItemId m = net.send(spec);
  net.after(m, in.partial);
  for (std::size_t i = 0; i < in.count; ++i) net.stream(m, in.streams[i]);
  return m;
}

// Reduces positions[0..centre] and positions[centre..end] (line positions, ascending) into
// positions[centre] as two streamed chains; returns what the centre combines. extra[i] (if given):
// streams position i already receives (the level-1 sums arriving at a group root).
Inputs reduce_into(Network& net, const Line& line, const std::vector<std::int64_t>& positions,
                   const std::vector<ItemId>& partial, std::size_t centre, const std::vector<Inputs>* extra,
                   std::int64_t bytes, int colour) {
  auto own = [&](std::size_t i) {
    Inputs in = extra != nullptr ? (*extra)[i] : Inputs{};
    in.partial = partial[i];
    return in;
  };
  Inputs at_centre = own(centre);
  auto chain = [&](std::size_t from, std::size_t to, int dir) {
    ItemId incoming = kNoItem;
    for (std::size_t i = from; i != to; i = static_cast<std::size_t>(static_cast<std::int64_t>(i) + dir)) {
      Inputs in = own(i);
      if (incoming != kNoItem) in.add(incoming);
      const auto next = static_cast<std::size_t>(static_cast<std::int64_t>(i) + dir);
      incoming = send_streamed(net, line.at(positions[i]), line.at(positions[next]), bytes, colour, in);
    }
    if (incoming != kNoItem) at_centre.add(incoming);
  };
  if (centre > 0) chain(0, centre, +1);
  if (centre + 1 < positions.size()) chain(positions.size() - 1, centre, -1);
  return at_centre;
}

}  // namespace

std::int64_t interleaved_next(std::int64_t pos, std::int64_t n) {
  if (n <= 1) return 0;
  if (pos % 2 == 0) {
    if (pos + 2 <= n - 1) return pos + 2;
    return (n - 1) % 2 == 1 ? n - 1 : n - 2;  // the last even position turns to the last odd one
  }
  return pos - 2 >= 1 ? pos - 2 : 0;
}

TreeShape ktree_shape(std::int64_t pes, std::int64_t group) {
  TreeShape t;
  if (pes <= 1) return t;
  t.group = group > 0 ? std::min(group, pes)
                      : std::max<std::int64_t>(1, std::llround(std::sqrt(static_cast<double>(pes))));
  t.groups = ceil_div(pes, t.group);
  const std::int64_t central = t.groups / 2;
  const std::int64_t size = std::min(t.group, pes - central * t.group);
  t.root = central * t.group + size / 2;
  t.broadcast_hops = std::max(t.root, pes - 1 - t.root);
  return t;
}

ItemId ktree_allreduce(Network& net, const Line& line, std::int64_t group, std::int64_t bytes,
                       const std::vector<ItemId>& ready, int colour_base) {
  const std::int64_t p = line.count;
  const ItemId done = net.join();
  if (p <= 1) {
    if (p == 1) net.after(done, item_at(ready, 0));
    return done;
  }
  const TreeShape shape = ktree_shape(p, group);
  // Level 1: every group streams into its centre.
  std::vector<std::int64_t> roots;
  std::vector<ItemId> root_partial;
  std::vector<Inputs> root_inputs;
  std::vector<std::int64_t> positions;
  std::vector<ItemId> partial;
  for (std::int64_t j = 0; j < shape.groups; ++j) {
    const std::int64_t lo = j * shape.group;
    const std::int64_t size = std::min(shape.group, p - lo);
    positions.clear();
    partial.clear();
    for (std::int64_t i = lo; i < lo + size; ++i) {
      positions.push_back(i);
      partial.push_back(item_at(ready, i));
    }
    const auto centre = static_cast<std::size_t>(size / 2);
    roots.push_back(lo + size / 2);
    root_partial.push_back(partial[centre]);
    root_inputs.push_back(reduce_into(net, line, positions, partial, centre, nullptr, bytes, colour_base));
  }
  // Level 2: the group roots stream their sums into the central root.
  const auto central = static_cast<std::size_t>(shape.groups / 2);
  const Inputs final_in =
      reduce_into(net, line, roots, root_partial, central, &root_inputs, bytes, colour_base + 1);
  // Multicast of the sum from the root as it forms: one injection, the routers copy both ways.
  bool injected = false;
  for (std::int64_t end : {std::int64_t{0}, p - 1}) {
    if (end == shape.root) continue;
    const ItemId m = send_streamed(net, line.at(shape.root), line.at(end), bytes, colour_base + 2, final_in, !injected);
    injected = true;
    net.after(done, m);
  }
  return done;
}

ItemId multicast(Network& net, const Line& line, std::int64_t bytes, ItemId ready, int colour) {
  const ItemId done = net.join();
  net.after(done, ready);
  const std::int64_t n = line.count;
  if (n <= 1) return done;
  const std::int64_t root = n / 2;
  bool injected = false;
  for (std::int64_t end : {std::int64_t{0}, n - 1}) {
    if (end == root) continue;
    SendSpec spec;
    spec.src_pe = line.at(root);
    spec.dst_pe = line.at(end);
    spec.bytes = bytes;
    spec.colour = colour;
    spec.inject = !injected;
    injected = true;
    const ItemId m = net.send(spec);
    net.after(m, ready);
    net.after(done, m);
  }
  return done;
}

std::vector<ItemId> ring_shift(Network& net, const Line& line, std::int64_t bytes, const std::vector<ItemId>& ready,
                               int colour_base) {
  const std::int64_t n = line.count;
  std::vector<ItemId> arrival(static_cast<std::size_t>(std::max<std::int64_t>(0, n)), kNoItem);
  if (n <= 1) return arrival;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t j = interleaved_next(i, n);
    SendSpec spec;
    spec.src_pe = line.at(i);
    spec.dst_pe = line.at(j);
    spec.bytes = bytes;
    spec.colour = colour_base + (j > i ? 0 : 1);
    const ItemId m = net.send(spec);
    net.after(m, item_at(ready, i));
    arrival[static_cast<std::size_t>(j)] = m;
  }
  return arrival;
}

}  // namespace wavel::sim
