// Lane groups (Network::tasks, Network::sends and the lane forms of after) against the same networks
// built one item at a time: every finish time, counter and span must be identical, whether the run
// sweeps compact groups (nothing contends) or materialises them (something does, or a single-item
// call named a lane). Plus one closed form by hand.
#include <doctest/doctest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "wavel/common/error.hpp"
#include "wavel/sim/detail/network.hpp"

using namespace wavel;

namespace {

sim::NetworkConfig lane_mesh(std::int64_t w, std::int64_t h) {
  sim::NetworkConfig c;
  c.width_pes = w;
  c.height_pes = h;
  c.hop_cycles = 1.0;
  c.relay_cycles = 19.0;
  c.link_bytes_per_cycle = 4;
  c.routable_colours = 24;
  c.record_spans = true;
  return c;
}

enum class Variant {
  shift,         // per row: launch, each PE sends one hop towards x = 0 (nothing contends)
  mirror,        // per row: PE x sends to w - 1 - x (the halves cross: links contend)
  named_lane,    // the shift, plus single-item calls that name lanes (materialising their groups)
  relayed,       // the shift with no routable colours: every route relays
};

struct Built {
  sim::ItemId done = sim::kNoItem;
};

// The same network, item for item and id for id, built with lane groups or with single calls.
Built build(sim::Network& net, Variant v, bool lanes) {
  const std::int64_t w = net.config().width_pes, h = net.config().height_pes;
  Built out;
  out.done = net.join();
  const sim::ItemId gate = net.join();
  net.release_at(gate, 7.0);
  for (std::int64_t y = 0; y < h; ++y) {
    const std::int64_t row = y * w;
    const sim::ItemId line_done = net.join();
    net.after(out.done, line_done);
    const double launch_cycles = 5.0 + static_cast<double>(y);  // rows differ, so the test sees rows mixed up
    std::vector<sim::ItemId> launch(static_cast<std::size_t>(w));
    sim::Lanes launch_lanes;
    if (lanes) {
      launch_lanes = net.tasks(row, 1, w, launch_cycles, sim::SpanKind::launch);
      net.after(launch_lanes, gate);
      for (std::int64_t x = 0; x < w; ++x) launch[static_cast<std::size_t>(x)] = launch_lanes.at(x);
    } else {
      for (std::int64_t x = 0; x < w; ++x) {
        launch[static_cast<std::size_t>(x)] = net.task(row + x, launch_cycles, sim::SpanKind::launch);
        net.after(launch[static_cast<std::size_t>(x)], gate);
      }
    }
    // Messages: lane i from `from + i` to `to + i * to_step` (row positions), colour `colour`.
    auto messages = [&](std::int64_t from, std::int64_t n, std::int64_t to, std::int64_t to_step, std::int64_t bytes,
                        int colour) {
      sim::SendSpec spec;
      spec.src_pe = row + from;
      spec.dst_pe = row + to;
      spec.bytes = bytes;
      spec.colour = colour;
      if (lanes) {
        const sim::Lanes sent = net.sends(spec, n, 1, to_step);
        net.after(sent, launch_lanes.sub(from, n));
        net.after(line_done, sent);
        return sent.first;
      }
      const sim::ItemId first = static_cast<sim::ItemId>(net.items());
      for (std::int64_t i = 0; i < n; ++i) {
        spec.src_pe = row + from + i;
        spec.dst_pe = row + to + i * to_step;
        const sim::ItemId m = net.send(spec);
        net.after(m, launch[static_cast<std::size_t>(from + i)]);
        net.after(line_done, m);
      }
      return first;
    };
    switch (v) {
      case Variant::shift:
      case Variant::named_lane:
      case Variant::relayed: {
        if (lanes) {
          net.after(line_done, launch_lanes.sub(0, 1));
        } else {
          net.after(line_done, launch[0]);
        }
        const sim::ItemId first = messages(1, w - 1, 0, 1, 12 + 4 * y, 1);
        if (v == Variant::named_lane && y == 1) {
          // Single-item calls naming lanes: a join after launch lane 2, message lane 3 released late.
          const sim::ItemId extra = net.join();
          net.after(extra, launch[2]);
          net.after(out.done, extra);
          net.release_at(first + 3, 40.0);
        }
        if (v == Variant::named_lane && y == 2) {
          // Only a message lane named: its group becomes items, the launch group feeding it stays compact.
          net.release_at(first + 1, 30.0);
        }
        break;
      }
      case Variant::mirror: {
        const std::int64_t half = w / 2;
        messages(0, half, w - 1, -1, 16, 0);
        messages(w - half, half, half - 1, -1, 16, 1);
        break;
      }
    }
  }
  return out;
}

struct Outcome {
  std::vector<double> finish;
  sim::NetworkStats stats;
  std::vector<sim::Span> spans;
  double makespan = 0;
};

Outcome outcome_of(const sim::Network& net) {
  Outcome o;
  for (std::size_t i = 0; i < net.items(); ++i) o.finish.push_back(net.finish_cycles(static_cast<sim::ItemId>(i)));
  o.stats = net.stats();
  o.spans = net.spans();
  o.makespan = net.makespan_cycles();
  return o;
}

Outcome run(Variant v, bool lanes, std::int64_t w, std::int64_t h, std::int64_t routable = 24) {
  auto config = lane_mesh(w, h);
  config.routable_colours = routable;
  sim::Network net(config);
  build(net, v, lanes);
  net.run();
  return outcome_of(net);
}

void require_same(const Outcome& a, const Outcome& b) {
  REQUIRE(a.finish.size() == b.finish.size());
  for (std::size_t i = 0; i < a.finish.size(); ++i) {
    INFO("item " << i);
    CHECK(a.finish[i] == b.finish[i]);  // bit-identical, not approximately
  }
  CHECK(a.stats.events == b.stats.events);
  CHECK(a.stats.tasks == b.stats.tasks);
  CHECK(a.stats.messages == b.stats.messages);
  CHECK(a.stats.units == b.stats.units);
  CHECK(a.stats.wavelet_hops == b.stats.wavelet_hops);
  CHECK(a.stats.relays == b.stats.relays);
  CHECK(a.makespan == b.makespan);
  REQUIRE(a.spans.size() == b.spans.size());
  for (std::size_t i = 0; i < a.spans.size(); ++i) {
    INFO("span " << i);
    CHECK(a.spans[i].item == b.spans[i].item);
    CHECK(a.spans[i].pe == b.spans[i].pe);
    CHECK(a.spans[i].peer_pe == b.spans[i].peer_pe);
    CHECK(a.spans[i].start_cycles == b.spans[i].start_cycles);
    CHECK(a.spans[i].end_cycles == b.spans[i].end_cycles);
  }
}

// One group over a whole w x h mesh in row-major order: PE p + 1 sends to p, so the lanes at row
// ends turn a corner (their routes differ from the rest) and nothing contends.
Outcome run_wrapped(bool lanes, std::int64_t w, std::int64_t h) {
  sim::Network net(lane_mesh(w, h));
  const std::int64_t n = w * h;
  const sim::ItemId done = net.join();
  sim::SendSpec spec;
  spec.src_pe = 1;
  spec.dst_pe = 0;
  spec.bytes = 20;
  if (lanes) {
    const sim::Lanes launch = net.tasks(0, 1, n, 3.0, sim::SpanKind::launch);
    const sim::Lanes sent = net.sends(spec, n - 1, 1, 1);
    net.after(sent, launch.sub(1, n - 1));
    net.after(done, sent);
  } else {
    std::vector<sim::ItemId> launch;
    for (std::int64_t p = 0; p < n; ++p) launch.push_back(net.task(p, 3.0, sim::SpanKind::launch));
    for (std::int64_t p = 1; p < n; ++p) {
      spec.src_pe = p;
      spec.dst_pe = p - 1;
      const sim::ItemId m = net.send(spec);
      net.after(m, launch[static_cast<std::size_t>(p)]);
      net.after(done, m);
    }
  }
  net.run();
  return outcome_of(net);
}

// Lanes of one group that wait for others of its lanes: through a join (lanes 0-3, then the join,
// then lanes 4-7), and directly (lane i + 1 of a second group after its lane i). Items have no cycle
// here; a group run whole would, so the sweep must take these lanes one by one.
Outcome run_self_waiting(bool lanes) {
  sim::Network net(lane_mesh(8, 2));
  const sim::ItemId middle = net.join();
  std::vector<sim::ItemId> first(8), second(8);
  if (lanes) {
    const sim::Lanes a = net.tasks(0, 1, 8, 4.0);
    const sim::Lanes b = net.tasks(8, 1, 8, 2.0);
    net.after(middle, a.sub(0, 4));
    net.after(a.sub(4, 4), middle);
    net.after(b.sub(1, 7), b.sub(0, 7));
    net.after(b.sub(0, 1), middle);
  } else {
    for (std::int64_t x = 0; x < 8; ++x) first[static_cast<std::size_t>(x)] = net.task(x, 4.0);
    for (std::int64_t x = 0; x < 8; ++x) second[static_cast<std::size_t>(x)] = net.task(8 + x, 2.0);
    for (std::size_t x = 0; x < 4; ++x) net.after(middle, first[x]);
    for (std::size_t x = 4; x < 8; ++x) net.after(first[x], middle);
    for (std::size_t x = 1; x < 8; ++x) net.after(second[x], second[x - 1]);
    net.after(second[0], middle);
  }
  net.run();
  return outcome_of(net);
}

}  // namespace

TEST_CASE("sim: lane groups give the items' times, counters and spans, swept or materialised") {
  SUBCASE("a shift, nothing contends: compact groups are swept whole") {
    const Outcome items = run(Variant::shift, false, 8, 4);
    const Outcome lanes = run(Variant::shift, true, 8, 4);
    require_same(items, lanes);
    CHECK(items.stats.lanes_swept == 0);
    CHECK(lanes.stats.lanes_swept == 4 * (8 + 7));  // every launch and message lane
  }
  SUBCASE("lanes that wrap to the next row have their own routes, still swept") {
    const Outcome items = run_wrapped(false, 6, 4);
    const Outcome lanes = run_wrapped(true, 6, 4);
    require_same(items, lanes);
    CHECK(lanes.stats.lanes_swept == 24 + 23);
    CHECK(items.makespan > 3.0 + 1.0 + 5.0);  // the row-end lanes travel w hops
  }
  SUBCASE("lanes that wait for lanes of their own group, as items would") {
    const Outcome items = run_self_waiting(false);
    const Outcome lanes = run_self_waiting(true);
    require_same(items, lanes);
    // By hand: lanes 0-3 end at 4, the join at 4, lanes 4-7 at 8; the chain 4 + 8 x 2 = 20.
    CHECK(lanes.makespan == 20.0);
    CHECK(lanes.finish[0] == 4.0);
  }
  SUBCASE("a mirror, the halves cross: groups are materialised and queued") {
    const Outcome items = run(Variant::mirror, false, 8, 3);
    const Outcome lanes = run(Variant::mirror, true, 8, 3);
    require_same(items, lanes);
    CHECK(lanes.stats.lanes_swept == 0);
    // An odd row: the middle PE keeps its tile.
    require_same(run(Variant::mirror, false, 7, 2), run(Variant::mirror, true, 7, 2));
  }
  SUBCASE("single-item calls that name lanes materialise just their groups") {
    const Outcome items = run(Variant::named_lane, false, 8, 3);
    const Outcome lanes = run(Variant::named_lane, true, 8, 3);
    require_same(items, lanes);
    // Row 1's launch and message groups are items now, and row 2's message group; row 0 and row 2's
    // launch stay compact (row 2's launch notifies its materialised messages lane by lane).
    CHECK(lanes.stats.lanes_swept == (8 + 7) + 8);
  }
  SUBCASE("routers out of colours relay lanes as they relay items") {
    const Outcome items = run(Variant::relayed, false, 8, 8, 0);
    const Outcome lanes = run(Variant::relayed, true, 8, 8, 0);
    CHECK(items.stats.relays > 0);
    require_same(items, lanes);
  }
}

TEST_CASE("sim: a swept shift by hand, and what lane groups refuse") {
  // One row of 8: launch 5 cycles after a gate released at 7, then PE x sends 12 bytes (3 wavelets)
  // one hop to x - 1: 7 + 5 = 12 at launch, + 1 hop + 3 cycles = 16 when delivered.
  sim::Network net(lane_mesh(8, 1));
  const Built b = build(net, Variant::shift, true);
  net.run();
  CHECK(net.finish_cycles(b.done) == doctest::Approx(16.0));
  CHECK(net.stats().lanes_swept == 15);
  CHECK(net.stats().wavelet_hops == 7 * 3);

  auto packets = lane_mesh(8, 1);
  packets.fidelity = sim::Fidelity::packet;
  packets.packet_wavelets = 2;
  sim::Network p(packets);
  CHECK(p.single_unit(8));
  CHECK_FALSE(p.single_unit(12));
  sim::SendSpec spec;
  spec.src_pe = 1;
  spec.dst_pe = 0;
  spec.bytes = 12;
  CHECK_THROWS_AS(p.sends(spec, 3, 1, 1), InternalError);
  spec.bytes = 4;
  CHECK_THROWS_AS(p.sends(spec, 9, 1, 1), InternalError);   // the last lane would leave the mesh
  CHECK_THROWS_AS(p.tasks(0, 1, -1, 1.0), InternalError);
  CHECK_THROWS_AS(p.tasks(0, 1, 3, -1.0), InternalError);
  const sim::Lanes two = p.tasks(0, 1, 2, 1.0);
  const sim::Lanes three = p.tasks(2, 1, 3, 1.0);
  CHECK_THROWS_AS(p.after(two, three), InternalError);     // lane counts differ
  CHECK_THROWS_AS(p.after(two, sim::Lanes{100, 2}), InternalError);
}

TEST_CASE("a task set up by its PE's previous task does not make the PE shared; otherwise it does (issue 40)") {
  // Per row: launch on every PE, each PE but x = 0 sends one hop west, the receiver takes it in with a
  // task after its own launch. Built three ways: receive lanes chained to the launch lanes, chained
  // one by one, and as plain tasks with both edges (the PE is shared: the queue decides).
  const auto make = [](int how, sim::Network& net) {
    const std::int64_t w = net.config().width_pes, h = net.config().height_pes;
    const sim::ItemId done = net.join();
    for (std::int64_t y = 0; y < h; ++y) {
      const sim::Lanes launch = net.tasks(y * w, 1, w, 5.0 + static_cast<double>(y), sim::SpanKind::launch);
      sim::SendSpec spec;
      spec.src_pe = y * w + 1;
      spec.dst_pe = y * w;
      spec.bytes = 8;
      const sim::Lanes sent = net.sends(spec, w - 1, 1, 1);
      net.after(sent, launch.sub(1, w - 1));
      sim::Lanes got;
      if (how == 0) {
        got = net.tasks_after(launch.sub(0, w - 1), 3.0, sim::SpanKind::overhead);
      } else if (how == 1) {
        got.first = net.task_after(launch.at(0), 3.0, sim::SpanKind::overhead);
        got.count = static_cast<std::uint32_t>(w - 1);
        for (std::int64_t x = 1; x < w - 1; ++x) net.task_after(launch.at(x), 3.0, sim::SpanKind::overhead);
      } else {
        got = net.tasks(y * w, 1, w - 1, 3.0, sim::SpanKind::overhead);
        net.after(got, launch.sub(0, w - 1));
      }
      net.after(got, sent);
      net.after(done, got);
    }
    return done;
  };
  std::vector<double> finish[3];
  sim::NetworkStats stats[3];
  for (int how = 0; how < 3; ++how) {
    sim::Network net(lane_mesh(8, 3));
    const sim::ItemId done = make(how, net);
    net.run();
    for (sim::ItemId i = 0; i < net.items(); ++i) finish[how].push_back(net.finish_cycles(i));
    stats[how] = net.stats();
    CHECK(net.finish_cycles(done) == (5.0 + 2.0) + 1.0 + 2.0 + 3.0);  // row 2: launch, hop, two wavelets, receive
  }
  CHECK(finish[0] == finish[2]);
  CHECK(finish[1] == finish[2]);
  CHECK(stats[0].lanes_swept > 0);   // chained lanes: nothing contends, the run is a sweep
  CHECK(stats[2].lanes_swept == 0);  // unchained: the PE is shared, every lane an item in the queue
  // A task after a PE's earlier (not last) task may overlap the last one: the PE is shared.
  sim::Network net(lane_mesh(2, 1));
  const sim::ItemId a = net.task(0, 4.0);
  const sim::ItemId b = net.task(0, 4.0);
  const sim::ItemId c = net.task_after(a, 1.0);
  net.run();
  CHECK(net.finish_cycles(b) == 8.0);  // a then b, in id order
  CHECK(net.finish_cycles(c) == 9.0);  // after a, but the core is b's until 8
  CHECK_THROWS_AS(sim::Network(lane_mesh(2, 1)).task_after(0, 1.0), wavel::InternalError);
}
