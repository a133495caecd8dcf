// Event-driven mesh model: PE compute tasks, 5-port routers, links with occupancy, cut-through transport.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "wavel/sim/detail/raw_array.hpp"

namespace wavel::sim {

/// Identifies a task, message or join inside one Network (dense, in creation order).
using ItemId = std::uint32_t;

/// "No item": an absent dependency.
inline constexpr ItemId kNoItem = ~ItemId{0};

/// Items with consecutive ids: lane i is item first + i. Network::tasks and Network::sends make
/// them as one lane group, which Network::after can link to other items with one record per call.
struct Lanes {
  ItemId first = kNoItem;
  std::uint32_t count = 0;
  [[nodiscard]] ItemId at(std::int64_t i) const { return first + static_cast<ItemId>(i); }
  /// Lanes [from, from + n) of these.
  [[nodiscard]] Lanes sub(std::int64_t from, std::int64_t n) const {
    return Lanes{first + static_cast<ItemId>(from), static_cast<std::uint32_t>(n)};
  }
};

/// Unit of transport on the links.
enum class Fidelity {
  message,  ///< a whole message is one unit per link (fast; exact when nothing contends)
  packet,   ///< a message is split into packets of NetworkConfig::packet_wavelets wavelets
  wavelet,  ///< every 32-bit wavelet is its own unit (for small regions only)
};

/// "message", "packet" or "wavelet".
std::string_view to_string(Fidelity fidelity);

/// The inverse of to_string, or std::nullopt.
std::optional<Fidelity> parse_fidelity(std::string_view text);

/// Ports of a router: four mesh links and the two directions of the ramp to its PE. Each (PE, port)
/// is one channel with its own occupancy; mesh links are named by the router they leave.
enum class Port : std::uint8_t {
  east,      ///< to x + 1
  west,      ///< to x - 1
  north,     ///< to y - 1 (y grows down, as on the wafer grid)
  south,     ///< to y + 1
  ramp_in,   ///< PE to router (injection)
  ramp_out,  ///< router to PE (ejection)
};

/// Channels per PE: the four links it drives and its two ramp directions.
inline constexpr int kChannelsPerPe = 6;

/// What a recorded span of the timeline stands for.
enum class SpanKind : std::uint8_t {
  launch,    ///< starting an op on a PE (its tasks, colours and DSDs)
  compute,   ///< local work: vector loops
  overhead,  ///< per-task activation (a MeshGEMM step)
  message,   ///< a message from injection to delivery of its last wavelet
};

/// "launch", "compute", "overhead" or "message".
std::string_view to_string(SpanKind kind);

/// The mesh and its timing. Times are in cycles of the wafer clock.
struct NetworkConfig {
  std::int64_t width_pes = 1;
  std::int64_t height_pes = 1;
  double hop_cycles = 0;                 ///< head latency per link on a pre-configured route (the wafer's)
  double stream_latency_cycles = 3.0;    ///< a streamed wavelet's way down a PE's ramp, through its add, and back up
  double relay_cycles = 19.0;            ///< extra latency of a software relay at a router out of colours
  std::int64_t link_bytes_per_cycle = 0; ///< per link and per ramp (the wafer's; at least 1)
  std::int64_t routable_colours = 0;     ///< distinct colours a router carries (the wafer's); a route past that is relayed
  Fidelity fidelity = Fidelity::message;
  std::int64_t packet_wavelets = 16;     ///< packet size at Fidelity::packet
  bool model_ramps = true;               ///< ramps are channels with occupancy (false: free and instant)
  bool record_spans = false;             ///< keep a Span per task and message (for traces)
  std::int64_t max_items = std::int64_t{1} << 24;  ///< more work items than this is a std::domain_error
};

/// One message. It follows the dimension-ordered route (X first, then Y) from src to dst. `folded_hops`
/// (0, 1 or 2; only with src == dst) sends it through the unsimulated axis of a sampled line and back:
/// it crosses src's own north and south channels, which a line along X never uses otherwise. A sample
/// uses this to stand for a perpendicular ring whose other PEs are not simulated (see kernels.hpp).
struct SendSpec {
  std::int64_t src_pe = 0;
  std::int64_t dst_pe = 0;
  std::int64_t bytes = 0;
  int colour = 0;          ///< 0..63; counted at every router the route crosses
  int folded_hops = 0;
  bool inject = true;      ///< crosses src's injection ramp (false: a router-made copy, as in multicast)
  bool eject = true;       ///< crosses dst's ejection ramp
};

/// A task or message as it ran (recorded with NetworkConfig::record_spans).
struct Span {
  ItemId item = kNoItem;
  std::int32_t pe = 0;        ///< the task's PE, or the message's source
  std::int32_t peer_pe = -1;  ///< the message's destination; -1 for tasks
  SpanKind kind = SpanKind::compute;
  double start_cycles = 0;
  double end_cycles = 0;
};

/// Counters of one run.
struct NetworkStats {
  std::int64_t events = 0;        ///< event steps processed (task starts, channel acquisitions, joins)
  std::int64_t tasks = 0;
  std::int64_t messages = 0;      ///< messages as sent (before splitting into packets)
  std::int64_t units = 0;         ///< transport units: messages, packets or wavelets by fidelity
  std::int64_t wavelet_hops = 0;  ///< wavelets x mesh links crossed (folded hops included, ramps not)
  std::int64_t relays = 0;        ///< routes relayed in software because a router ran out of colours
  std::int64_t lanes_swept = 0;   ///< items run a whole lane group at a time (nothing contended)
};

/// A mesh of width x height PEs and the work placed on it. Build the work first (task, send, join,
/// after, release_at), then run() once. Semantics:
///  - An item starts when all its dependencies have finished and its release time has come.
///  - A task occupies its PE: tasks on one PE run one at a time, in order of (ready time, item id).
///  - A message of B bytes holds each channel on its path for S = ceil(B / link_bytes_per_cycle)
///    cycles. Its head enters a channel at max(arrival, channel free) and reaches the next router
///    hop_cycles later (ramps: 0), while the body streams behind (virtual cut-through: routers
///    buffer a blocked message, so a stalled head does not hold the links behind it). It is
///    delivered when its last wavelet leaves the last channel: a lone message over H links is
///    delivered H*hop_cycles + S cycles after it is sent.
///  - Requests for a channel are served in order of (time, item id): this is the contention rule.
///  - Pending events are processed in (time, item id) order; each item has at most one pending
///    event, so the order is total and every run is bit-identical.
///  - An item that contends for nothing (a join, a task alone on its PE, a message alone on every
///    channel of its path) is processed as soon as its last dependency finishes, without the queue:
///    its times cannot depend on the order. Such a message is delivered in closed form (each channel
///    is free when its head arrives; the events still count one step per channel). A kernel without
///    contention is then a sweep of its dependency graph.
///  - Streaming (stream()): a message that forwards what an upstream message delivers (a reduction
///    step: receive wavelet i, add, send wavelet i) may enter its first channel once the upstream's
///    first wavelet is delivered plus stream_latency, and its last wavelet leaves no earlier than the
///    upstream's last plus stream_latency. So a chain of P streamed steps costs about
///    S + P * (hops * hop + stream_latency), not P * S.
///  - Colours: every router a route crosses (both ends included) records the route's colour. A router
///    that would carry more than routable_colours does not take the colour: the route is relayed
///    there in software (relay_cycles more latency; counted in NetworkStats::relays).
///  - Lane groups (tasks(), sends(), the Lanes forms of after()) are a way to build, not a different
///    model: a group's lanes are the items the single calls would make, with the same ids. A group
///    stays compact (no per-lane record) until a single-item call names one of its lanes. When
///    nothing in the network contends (no PE with two tasks, no channel with two units), run() is a
///    sweep of the dependency graph that runs each compact group whole, lane by lane in closed form
///    (NetworkStats::lanes_swept); otherwise every group becomes items first. A group whose lanes
///    wait, through other items, for others of its lanes cannot run whole: the sweep makes it items
///    when it stalls. Either way every time is bit-identical to the single calls' (tests/test_sim_lanes.cpp).
///  - Sizes past 64 bits or more than max_items work items throw std::domain_error.
class Network {
 public:
  /// Throws wavel::InternalError on a non-positive size or bandwidth.
  explicit Network(const NetworkConfig& config);
  /// Leaves the network's arrays, emptied, to the next network this thread builds (see Spare).
  ~Network();
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;

  [[nodiscard]] const NetworkConfig& config() const { return config_; }
  [[nodiscard]] std::int64_t pes() const { return config_.width_pes * config_.height_pes; }
  /// PE index of (x, y): y * width + x.
  [[nodiscard]] std::int64_t pe_at(std::int64_t x, std::int64_t y) const;

  /// Work on `pe` taking `duration_cycles`.
  ItemId task(std::int64_t pe, double duration_cycles, SpanKind kind = SpanKind::compute);
  /// `count` tasks, lane i on PE first_pe + i * pe_stride: the same items as `count` calls of task(),
  /// made as one lane group.
  Lanes tasks(std::int64_t first_pe, std::int64_t pe_stride, std::int64_t count, double duration_cycles,
              SpanKind kind = SpanKind::compute);
  /// A task on the PE of task `previous`, after it (the edge is added): work the PE's previous task
  /// sets up, such as taking in a message that task's launch prepared. When `previous` is the last
  /// task placed on its PE the two cannot overlap, so they do not make the PE shared (only tasks of
  /// one PE that may overlap contend for its core).
  ItemId task_after(ItemId previous, double duration_cycles, SpanKind kind = SpanKind::compute);
  /// task_after for every lane of `previous` (task lanes): one lane group when their PEs are affine.
  Lanes tasks_after(Lanes previous, double duration_cycles, SpanKind kind = SpanKind::compute);
  /// `count` messages like `first`, lane i from first.src_pe + i * src_stride to first.dst_pe +
  /// i * dst_stride: the same items as `count` calls of send(), made as one lane group. Each must be
  /// one transport unit (single_unit(first.bytes)); throws wavel::InternalError otherwise.
  Lanes sends(const SendSpec& first, std::int64_t count, std::int64_t src_stride, std::int64_t dst_stride);
  /// Whether a message of `bytes` is one transport unit at this fidelity (so sends() can make it).
  [[nodiscard]] bool single_unit(std::int64_t bytes) const;
  /// Finishes as soon as all its dependencies have (no resource, no time).
  ItemId join();
  /// Sends a message; returns the item that finishes when all of it has been delivered.
  ItemId send(const SendSpec& spec);

  /// `item` starts only after `dependency` has finished; kNoItem is ignored.
  void after(ItemId item, ItemId dependency);
  /// Lane i of `items` after lane i of `dependencies` (equal counts). One record when the
  /// dependencies are lanes of one group, else an edge per lane.
  void after(Lanes items, Lanes dependencies);
  /// Every lane of `items` after `dependency` (kNoItem is ignored): one record.
  void after(Lanes items, ItemId dependency);
  /// `item` after every lane of `dependencies`. One record when they are lanes of one group.
  void after(ItemId item, Lanes dependencies);
  /// Message `item` streams what message `upstream` delivers (see the class comment); it also counts
  /// as a dependency. Throws wavel::InternalError unless both are messages.
  void stream(ItemId item, ItemId upstream);
  /// `item` starts no earlier than `time_cycles`.
  void release_at(ItemId item, double time_cycles);

  /// Processes every event. Throws wavel::InternalError if called twice or if some item never became
  /// ready (a dependency cycle).
  void run();

  /// When `item` finished (after run()).
  [[nodiscard]] double finish_cycles(ItemId item) const;
  /// The latest finish of any item.
  [[nodiscard]] double makespan_cycles() const { return makespan_cycles_; }
  [[nodiscard]] const NetworkStats& stats() const { return stats_; }
  /// Recorded spans by start time, then item (empty unless record_spans).
  [[nodiscard]] const std::vector<Span>& spans() const { return spans_; }
  /// Distinct colours at the busiest router.
  [[nodiscard]] int colours_max() const;
  [[nodiscard]] std::size_t items() const { return items_.size(); }
  /// Pre-sizes the item and edge arrays (an estimate; they grow as needed).
  void reserve(std::size_t items, std::size_t edges);

 private:
  enum class Kind : std::uint8_t { task, join, message, packets };
  enum Flag : std::uint8_t { inject = 1, eject = 2, x_minus = 4, y_minus = 8, streamed = 16, relayed = 32 };
  static constexpr std::uint32_t kNoGroup = ~std::uint32_t{0};

  // Everything one event touches about its item sits in one cache line: scheduling state, the
  // first successor (most items have one), and the task or message it stands for.
  struct alignas(64) Item {
    double ready = 0;               // max(release, dependencies' finish)
    double finish = 0;
    ItemId successor = kNoItem;     // first successor
    std::uint32_t edges = kNoItem;  // further successors: head of a list in edges_
    std::int32_t deps = 0;          // unfinished dependencies; -1 once finished
    Kind kind = Kind::join;
    std::uint8_t flags = 0;         // messages: Flag bits
    std::uint8_t folded = 0;        // messages: folded hops
    SpanKind span = SpanKind::compute;
    double length = 0;              // task: duration; message: serialisation cycles S
    std::int32_t a = 0;             // task: PE; message: source; packets: first packet
    std::int32_t b = 0;             // message: destination; packets: how many
    std::int32_t corner = 0;        // message: PE where the X leg turns into the Y leg
    std::int32_t nx = 0, ny = 0;    // message: hops along X and Y
  };
  // A line of like items made by one tasks() or sends() call. It starts compact: its ids are taken
  // but its items are not written (their slots in items_ are holes). A compact group that nothing
  // contends with is run as a whole, in closed form (run_group); otherwise, or once a single-item
  // call names one of its lanes, it is materialised: its items are written and run one by one.
  struct LaneGroup {
    ItemId first = 0;
    std::uint32_t count = 0;
    std::uint32_t edges = kNoItem;     // records from its lanes (GroupEdge::next)
    std::uint32_t in_edges = kNoItem;  // records into it made while compact (GroupEdge::next_in)
    std::int32_t waiting = 0;          // compact: records into it not yet notified
    bool compact = true;
    Kind kind = Kind::task;
    SpanKind span = SpanKind::compute;
    std::uint8_t folded = 0;
    bool inject = true, eject = true;
    bool uniform = false;              // message lanes all have lane 0's route shape
    std::int64_t links = 0;            // uniform: mesh links each lane crosses
    double length_cycles = 0;          // task duration or message serialisation
    double ready_all_cycles = 0;       // compact: latest finish notified to every lane at once
    std::int64_t a = 0, a_stride = 0;  // lane 0's PE (task) or source (message), and the step per lane
    std::int64_t b = 0, b_stride = 0;  // message: lane 0's destination and the step per lane
  };
  // A dependency record over lanes. On a compact group's list: lanes [from, from + count) notify `to`
  // (all of them, when to_one) or to + (lane - from); when the group is materialised, its records
  // become the lanes' edges. On an item's edge list (Edge::to with kGroupBit): the item notifies
  // lanes [to, to + count). to_group: the group of the lanes notified (kNoGroup: items).
  struct GroupEdge {
    ItemId from;
    std::uint32_t count;
    ItemId to;
    std::uint32_t to_group;
    std::uint32_t next;
    std::uint32_t next_in;
    bool to_one;
    bool notified = false;  // into a compact group: applied by the sweep already
  };
  struct Edge {
    ItemId to;  // the high bit marks a stream edge
    std::uint32_t next;
  };
  static constexpr ItemId kStreamBit = ItemId{1} << 31;
  // Marks an Edge whose `to` indexes group_edges_ (item ids stay below 2^30: see max_items).
  static constexpr ItemId kGroupBit = ItemId{1} << 30;
  // Not the bit pattern of any time (it is a NaN): marks empty table slots and "no current time".
  static constexpr std::uint64_t kNoTime = ~std::uint64_t{0};
  // Times are never negative, so their IEEE-754 bit patterns order like the times and serve as
  // exact keys for the time buckets.
  struct Event {
    std::uint64_t time_bits;
    ItemId item;
    std::uint32_t step;  // messages: index of the next channel on the path
  };
  struct Pending {
    ItemId item;
    std::uint32_t step;
  };
  struct TimeSlot {
    std::uint64_t time_bits;
    std::uint32_t bucket;
  };

  // A thread's arrays from its last network, empty but with their capacity, so that the next network
  // reuses pages the kernel has already mapped (network.cpp).
  struct Spare;
  static Spare& spare();
  template <class F>
  void pair_arrays(Spare& kept, F&& f);  // f(member array, the spare one) for every pooled array
  ItemId new_item(const Item& item);
  // The checks' error paths, out of line: each throws.
  [[noreturn]] void refuse_item() const;
  void refuse_task(std::int64_t pe, double duration_cycles) const;  // throws if the task is invalid
  void refuse_edge(ItemId item, ItemId dependency) const;          // throws if the edge is invalid
  void refuse_send(const SendSpec& spec) const;                    // throws if the message is invalid
  void after_packets(ItemId item, ItemId dependency);
  // A message's dimension-ordered route: hops along X then Y, their directions, and the turn.
  struct Route {
    std::int64_t nx = 0, ny = 0;
    std::int64_t corner = 0;  // PE where the X leg turns into the Y leg
    bool x_minus = false, y_minus = false;
  };
  [[nodiscard]] Route route_of(const SendSpec& spec) const;
  ItemId new_message(const SendSpec& spec, const Route& r, double serial_cycles);
  void depend(ItemId to);  // one more unfinished dependency of `to`
  void add_edge(ItemId from, ItemId to);
  void link(ItemId from, ItemId to);  // add_edge without counting the dependency (counted already)
  void check_lanes(Lanes lanes) const;                      // throws unless they are existing items
  std::uint32_t new_group_edge(const GroupEdge& edge);
  void add_in_record(std::uint32_t record, std::uint32_t group);  // the compact group waits for it
  LaneGroup& new_group(std::int64_t count);                 // takes the ids of a compact group
  [[nodiscard]] std::uint32_t group_of(ItemId id) const;    // the group whose lane `id` is, or kNoGroup
  [[nodiscard]] bool covers_compact(std::uint32_t group, Lanes lanes) const;  // all its lanes, compact
  [[nodiscard]] bool is_hole(ItemId id) const { return (holes_[id / 64] >> (id % 64) & 1U) != 0; }
  void unhole(ItemId id) {         // materialises the group of `id` if it is a compact lane
    if (is_hole(id)) materialize(group_of(id));
  }
  void unhole(Lanes lanes);        // materialises every compact group among the lanes
  void materialize(std::uint32_t group);  // and, in turn, the compact groups its lanes notify
  [[nodiscard]] Item task_item(std::int64_t pe, double duration_cycles, SpanKind kind) const;
  [[nodiscard]] std::int64_t task_pe(ItemId task) const;  // the PE of a task item or task lane
  [[nodiscard]] Item message_item(const SendSpec& spec, const Route& r, double serial_cycles) const;
  [[nodiscard]] SendSpec lane_spec(const LaneGroup& g, std::uint32_t lane) const;
  void run_group(std::uint32_t group);  // a compact group that contends for nothing, all lanes at once
  void sweep();                         // run() when nothing contends
  void finish_run();                    // checks that every item ran; orders the spans
  [[nodiscard]] std::int64_t wavelets_of(std::int64_t bytes) const;         // ceil(bytes / link width)
  [[nodiscard]] std::int64_t unit_wavelets(std::int64_t wavelets) const;    // a transport unit at this fidelity
  void mark_relays(ItemId id, int relays);                                   // software relay latency
  // Colours and channel users of `lanes` like messages, `stride` PEs apart; adds each one's relays.
  template <bool kLanes>
  void note_route(const SendSpec& spec, const Route& r, std::int64_t units, std::int64_t lanes, std::int64_t stride,
                  int* relays);
  [[nodiscard]] bool same_route(const SendSpec& first, std::int64_t count, std::int64_t src_stride,
                                std::int64_t dst_stride) const;  // every lane has lane 0's route shape
  std::size_t channel_of(const Item& m, std::int64_t step, double& latency) const;
  void add_stream_edge(ItemId from, ItemId to);
  void process(Event ev);      // a queued event, taken from the queue in its order
  void run_alone(ItemId id);   // an item that contends for nothing, as soon as it is ready
  void finish_task(ItemId id, const Item& it, double start);
  void stretch_for_stream(ItemId id, Item& m, double start);
  void deliver(ItemId id, const Item& m, double first_start, double head, double extra);
  void complete(ItemId id, double finish, double head);
  [[gnu::noinline]] void notify_record(std::uint32_t record, double finish);           // an item's record over lanes
  void notify(ItemId to, double finish);
  void become_ready(ItemId id);  // queued if it contends for something, else run outside the queue
  [[nodiscard]] bool contested(const Item& it) const;
  [[nodiscard]] bool path_shared(const Item& m) const;  // some channel of message m's path is shared
  [[nodiscard]] static int path_of(const Item& m);  // channels a message crosses, ramps included
  void drain_uncontested();
  void push(Event ev);  // by value: a reference made the callers' field stores stall its wide loads
  Event pop();
  [[nodiscard]] bool empty() const;
  [[nodiscard]] bool is_next(const Event& ev) const;
  std::uint32_t bucket_for(std::uint64_t time_bits);
  static std::uint64_t bits_of(double time);
  static double time_of(std::uint64_t bits);

  NetworkConfig config_;
  detail::RawArray<Item> items_;
  std::vector<Edge> edges_;
  std::vector<LaneGroup> groups_;
  std::vector<GroupEdge> group_edges_;
  std::vector<std::uint64_t> holes_;   // bit per id: a lane of a compact group (no item written)
  bool compact_groups_ = false;        // some group was ever compact (holes_ is consulted)
  std::vector<double> lane_time_;      // sweep: compact lanes' ready time, then their finish
  // The event queue: pending events in (time, item) order. Kernels run in lock-step, so many events
  // share a time: each distinct future time has a bucket (found through an open-addressing table and
  // ordered by a small heap of times); the bucket of the current time is sorted by item when it
  // becomes current, and events pushed at the current time meanwhile wait in a heap by item.
  std::vector<std::vector<Pending>> buckets_;
  std::vector<std::uint32_t> free_buckets_;
  std::vector<TimeSlot> times_;             // binary min-heap by time
  std::vector<std::uint64_t> table_keys_;   // time bits -> bucket; kNoTime marks an empty slot
  std::vector<std::uint32_t> table_buckets_;
  std::size_t table_used_ = 0;
  std::uint64_t cached_time_bits_ = ~std::uint64_t{0};  // push: the time of the last bucket found (none: a NaN)
  std::uint32_t cached_bucket_ = 0;
  std::vector<Pending> current_;            // events at now_bits_, ascending by item from current_next_
  std::size_t current_next_ = 0;
  std::vector<Pending> late_;               // events pushed at now_bits_ while it is current (heap by item)
  std::uint64_t now_bits_ = ~std::uint64_t{0};
  std::vector<double> channel_free_;   // per (PE, port), if shared_channels_: when the channel is next free
  std::vector<double> pe_free_;        // per PE, if a PE has two tasks: when its core is next free
  std::vector<std::uint8_t> pe_tasks_; // per PE: tasks placed on it that may overlap, saturated at 2
  std::vector<ItemId> pe_last_;        // per PE: the last task placed on it (kNoItem: none)
  // Ready items that use no contested resource, waiting to be processed before the next event.
  std::vector<ItemId> uncontested_;
  std::vector<std::uint64_t> colours_; // per PE: colour bit set of its router
  std::vector<std::uint8_t> colour_count_;   // per PE: bits set in colours_
  // Per channel: transport units whose path crosses it, saturated at 2. A channel only one unit
  // ever crosses is never contended, so that unit takes it without waiting for its turn.
  std::vector<std::uint8_t> channel_users_;
  std::vector<double> first_start_;    // record_spans: when each message entered its first channel
  std::vector<double> head_;           // has_packets_: when each message's first wavelet was delivered
  std::vector<double> tail_min_;       // has_streams_: a streamed message's earliest last-wavelet delivery
  std::vector<double> extra_;          // relayed messages: software relay latency (sized to the last one)
  std::vector<std::uint64_t> unblocked_;  // bit per item: no dependency yet
  std::size_t completed_ = 0;          // items finished by run()
  std::uint64_t width_reciprocal_ = 0; // 2^64 / width rounded up (0 for width 1): see route_of
  int link_shift_ = -1;                // log2(link_bytes_per_cycle) when a power of two
  bool has_packets_ = false;           // some message was split into packets
  bool shared_channels_ = false;       // some channel is crossed by more than one unit
  bool has_streams_ = false;           // some message streams another
  std::vector<Span> spans_;
  NetworkStats stats_;
  double makespan_cycles_ = 0;
  bool ran_ = false;
};

// The builder's calls, made once per task, message and edge, are inline; their error paths are not.

inline ItemId Network::new_item(const Item& item) {
  if (ran_ || static_cast<std::int64_t>(items_.size()) >= config_.max_items) refuse_item();
  const auto id = static_cast<ItemId>(items_.size());
  items_.push_back(item);
  // Ready from the start until it gets a dependency.
  if (id % 64 == 0) {
    unblocked_.push_back(0);
    holes_.push_back(0);
  }
  unblocked_[id / 64] |= std::uint64_t{1} << (id % 64);
  return id;
}

inline ItemId Network::task(std::int64_t pe, double duration_cycles, SpanKind kind) {
  if (pe < 0 || pe >= pes() || !(duration_cycles >= 0.0)) refuse_task(pe, duration_cycles);
  const ItemId id = new_item(task_item(pe, duration_cycles, kind));
  auto& placed = pe_tasks_[static_cast<std::size_t>(pe)];
  if (placed < 2) ++placed;
  pe_last_[static_cast<std::size_t>(pe)] = id;
  ++stats_.tasks;
  return id;
}

inline ItemId Network::join() { return new_item(Item{}); }

inline Network::Item Network::task_item(std::int64_t pe, double duration_cycles, SpanKind kind) const {
  Item it;
  it.kind = Kind::task;
  it.a = static_cast<std::int32_t>(pe);
  it.length = duration_cycles;
  it.span = kind;
  return it;
}

inline void Network::depend(ItemId to) {
  if (items_[to].deps++ == 0) unblocked_[to / 64] &= ~(std::uint64_t{1} << (to % 64));
}

inline void Network::link(ItemId from, ItemId to) {
  Item& source = items_[from];
  if (source.successor == kNoItem) {
    source.successor = to;
  } else {
    edges_.push_back(Edge{to, source.edges});
    source.edges = static_cast<std::uint32_t>(edges_.size() - 1);
  }
}

inline void Network::add_edge(ItemId from, ItemId to) {
  link(from, to);
  depend(to);
}

inline void Network::after(ItemId item, ItemId dependency) {
  if (dependency == kNoItem) return;
  if (ran_ || item >= items_.size() || dependency >= items_.size()) refuse_edge(item, dependency);
  if (compact_groups_) {
    unhole(item);
    unhole(dependency);
  }
  if (items_[item].kind == Kind::packets) {
    after_packets(item, dependency);
  } else {
    add_edge(dependency, item);
  }
}

}  // namespace wavel::sim
