// Executability checks of MeshIR schedules (the SRAM-per-PE model they share with the cost model: sram.cpp).
#include "wavel/meshir/verify.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "detail/saturating.hpp"

namespace wavel::meshir {
using namespace detail;  // saturating arithmetic on sizes read from files

namespace {


// Supported ranges (docs/cli.md, Input limits), so that what reaches the cost model and the simulator
// is bounded: no billion-round loop, no op whose figures overflow when multiplied by a few.
constexpr std::int64_t kMaxSidePes = 100000;
constexpr std::int64_t kMaxLayers = std::int64_t{1} << 20;
constexpr std::int64_t kMaxWafers = 1024;
constexpr std::int64_t kMaxRounds = 64;
constexpr std::int64_t kMaxGroup = std::int64_t{1} << 20;
constexpr std::int64_t kMaxWork = std::int64_t{1} << 60;
constexpr std::int64_t kMaxHeads = std::int64_t{1} << 20;
constexpr std::int64_t kMaxScalarPerElement = 1024;
constexpr std::size_t kMaxOverlappingRegionPairs = 100000;

bool inside(const Rect& inner, const Rect& outer) {
  return inner.x >= outer.x && inner.y >= outer.y && end_of(inner.x, inner.w) <= end_of(outer.x, outer.w) &&
         end_of(inner.y, inner.h) <= end_of(outer.y, outer.h);
}


bool holds(const Rect& r, std::int64_t px, std::int64_t py) {
  return px >= r.x && py >= r.y && px < end_of(r.x, r.w) && py < end_of(r.y, r.h);
}

// "a", "a and b", "a, b and c": the kernels whose row has `trait`.
template <class Trait>
std::string kernels_that(Trait trait) {
  std::vector<std::string_view> names;
  for (const KernelInfo& k : kernel_table()) {
    if (trait(k)) names.push_back(k.name);
  }
  std::string out;
  for (std::size_t j = 0; j < names.size(); ++j) {
    out += j == 0 ? "" : j + 1 == names.size() ? " and " : ", ";
    out += names[j];
  }
  return out;
}

std::string rect_text(const Rect& r) {
  return std::to_string(r.x) + "," + std::to_string(r.y) + "," + std::to_string(r.w) + "," + std::to_string(r.h);
}

/// The part of a layout a consumer must match, as the text form writes it.
std::string placement_text(const Layout& l) {
  return "x:" + std::string(to_string(l.on_x)) + ",y:" + std::string(to_string(l.on_y)) +
         ",part:" + std::to_string(l.part_x) + "x" + std::to_string(l.part_y);
}

/// Collects diagnostics located by the source lines of the schedule's parts.
class Checker {
 public:
  Checker(const Schedule& s, const VerifyOptions& o) : s_(s), o_(o) {}

  std::vector<Diagnostic> run();

 private:
  static int line_of(const std::vector<int>& lines, std::size_t index) {
    return index < lines.size() ? lines[index] : 0;
  }
  int op_line(std::size_t i) const { return line_of(o_.lines.ops, i); }
  int region_line(std::size_t r) const { return line_of(o_.lines.regions, r); }
  int header_line(const std::string& key) const {
    const auto it = o_.lines.header.find(key);
    return it == o_.lines.header.end() ? 0 : it->second;
  }
  void add(int line, const std::string& key_path, const std::string& message) {
    // A hostile file can have a problem for every pair of regions: list the first ones only.
    if (diagnostics_.size() >= kMaxDiagnostics) {
      ++unlisted_;
      return;
    }
    diagnostics_.push_back(Diagnostic{o_.file_label, line, 0, key_path, message});
  }
  void op_error(std::size_t i, const std::string& field, const std::string& message) {
    add(op_line(i), "ops[" + std::to_string(i) + "]" + (field.empty() ? "" : "." + field),
        "op '" + s_.ops[i].name + "': " + message);
  }
  bool region_ok(int r) const { return r >= 0 && static_cast<std::size_t>(r) < s_.regions.size(); }
  bool grid_contains(const Rect& r) const {
    return r.x >= 0 && r.y >= 0 && end_of(r.x, r.w) <= s_.grid_w_pes && end_of(r.y, r.h) <= s_.grid_h_pes;
  }

  void check_header();
  void check_regions();
  void check_op(std::size_t i);
  void check_layout(std::size_t i, const char* field, const Layout& l);
  void check_steps_disjoint();
  void check_sram();
  void check_edges();

  static constexpr std::size_t kMaxDiagnostics = 1000;
  const Schedule& s_;
  const VerifyOptions& o_;
  std::vector<Diagnostic> diagnostics_;
  std::size_t unlisted_ = 0;
};

void Checker::check_header() {
  auto positive = [&](const char* key, std::int64_t value, std::int64_t min, std::int64_t max) {
    if (value < min) {
      add(header_line(key), key, std::string(key) + " is " + std::to_string(value) + ", must be at least " +
                                     std::to_string(min));
    } else if (value > max) {
      add(header_line(key), key, std::string(key) + " is " + std::to_string(value) + ", the supported maximum is " +
                                     std::to_string(max));
    }
  };
  if (s_.grid_w_pes < 1 || s_.grid_h_pes < 1 || s_.grid_w_pes > kMaxSidePes || s_.grid_h_pes > kMaxSidePes) {
    add(header_line("grid"), "grid",
        "grid is " + std::to_string(s_.grid_w_pes) + " x " + std::to_string(s_.grid_h_pes) +
            " PEs, both sides must be from 1 to " + std::to_string(kMaxSidePes));
  }
  positive("sram_per_pe_bytes", s_.sram_per_pe_bytes, 1, std::int64_t{1} << 30);
  if (s_.sram_reserved_per_pe_bytes < 0 || s_.sram_reserved_per_pe_bytes >= s_.sram_per_pe_bytes) {
    add(header_line("sram_reserved_per_pe_bytes"), "sram_reserved_per_pe_bytes",
        "must be at least 0 and below sram_per_pe_bytes (" + std::to_string(s_.sram_per_pe_bytes) + "), got " +
            std::to_string(s_.sram_reserved_per_pe_bytes));
  }
  positive("colours", s_.colours, 0, 1024);
  positive("requests", s_.concurrent_requests, 1, std::int64_t{1} << 20);
  positive("microbatches", s_.microbatches, 1, std::int64_t{1} << 20);
  positive("prompt_chunks", s_.prompt_chunks, 1, std::int64_t{1} << 20);
  if (s_.layers_total > kMaxLayers) {
    add(header_line("layers"), "layers", "layers is " + std::to_string(s_.layers_total) +
                                             ", the supported maximum is " + std::to_string(kMaxLayers));
  }
  if (s_.layer_scale > kMaxLayers) {
    add(header_line("layers"), "layers.scale", "layer scale is " + std::to_string(s_.layer_scale) +
                                                   ", the supported maximum is " + std::to_string(kMaxLayers));
  }
  if (s_.concurrent_requests >= 1 && s_.microbatches > s_.concurrent_requests) {
    add(header_line("microbatches"), "microbatches",
        std::to_string(s_.microbatches) + " microbatches for " + std::to_string(s_.concurrent_requests) +
            " requests: a microbatch would be empty");
  }
  positive("wafers", s_.wafers, 1, kMaxWafers);
  if (s_.wafers > 1) {
    // 1 B/s to 1 PB/s; up to one second per crossing.
    positive("link_bytes_per_s", s_.link_bytes_per_s, 1, std::int64_t{1} << 50);
    positive("link_latency_ns", s_.link_latency_ns, 0, 1'000'000'000);
  }
  if (s_.layers_total < 0) add(header_line("layers"), "layers", "layers is negative");
  if (s_.layer_scale < 1) {
    add(header_line("layers"), "layers.scale",
        "layer scale is " + std::to_string(s_.layer_scale) + ", must be at least 1");
  }
  // A layer subset stands for the whole depth: the subset holds layers / scale whole layers.
  if (s_.layer_scale > 1 && s_.layers_total > 0 && s_.layer_scale <= kMaxLayers &&
      (s_.layers_total < s_.layer_scale || s_.layers_total % s_.layer_scale != 0)) {
    add(header_line("layers"), "layers.scale",
        "layer scale " + std::to_string(s_.layer_scale) + " for a model of " + std::to_string(s_.layers_total) +
            " layers: the subset must hold a whole number of layers (layers a multiple of the scale)");
  }
}

void Checker::check_regions() {
  for (std::size_t r = 0; r < s_.regions.size(); ++r) {
    const Rect& rect = s_.regions[r];
    const std::string path = "regions[" + std::to_string(r) + "]";
    if (rect.w < 1 || rect.h < 1) {
      add(region_line(r), path, "region " + std::to_string(r) + " (" + rect_text(rect) + ") is empty");
      continue;
    }
    if (!grid_contains(rect)) {
      add(region_line(r), path,
          "region " + std::to_string(r) + " (x,y,w,h " + rect_text(rect) + ") lies outside the " +
              std::to_string(s_.grid_w_pes) + " x " + std::to_string(s_.grid_h_pes) + " grid");
    }
    // A region may hold defective PEs: only the used rectangles of its ops must avoid them (below).
    if (const std::int64_t w = wafer_of(s_, static_cast<int>(r)); w < 0 || w >= std::max<std::int64_t>(1, s_.wafers)) {
      add(region_line(r), path + ".wafer",
          "region " + std::to_string(r) + " lies on wafer " + std::to_string(w) + " of a schedule over " +
              std::to_string(s_.wafers) + " wafer(s) (0 to " + std::to_string(std::max<std::int64_t>(1, s_.wafers) - 1) + ")");
    }
  }
}

void Checker::check_layout(std::size_t i, const char* field, const Layout& l) {
  const PlacedOp& op = s_.ops[i];
  const std::string f = field;
  bool factors_ok = true;
  const std::pair<const char*, std::int64_t> factors[] = {
      {"part_x", l.part_x}, {"part_y", l.part_y}, {"repl_x", l.repl_x}, {"repl_y", l.repl_y}};
  for (const auto& [name, value] : factors) {
    if (value < 1) {
      op_error(i, f + (name[0] == 'p' ? ".part" : ".repl"),
               f + " layout has " + name + " = " + std::to_string(value) + ", must be at least 1");
      factors_ok = false;
    }
  }
  if (l.tile_rows < 0 || l.tile_cols < 0) {
    op_error(i, f + ".tile",
             f + " layout has a negative tile " + std::to_string(l.tile_rows) + "x" + std::to_string(l.tile_cols));
  }
  if (!factors_ok || op.used.w < 1 || op.used.h < 1) return;
  // A mover's output lies in its destination region, whatever part of the source it reads.
  Rect over = op.used;
  const char* where = " used";
  if (f == "out" && moves_between_regions(op.kernel) && region_ok(op.to_region)) {
    over = s_.regions[static_cast<std::size_t>(op.to_region)];
    where = " of its destination region";
  }
  if (saturating_mul(l.part_x, l.repl_x) > over.w) {
    op_error(i, f + ".part",
             f + " layout spreads over part_x * repl_x = " + std::to_string(l.part_x) + " * " +
                 std::to_string(l.repl_x) + " PEs along X, more than the " + std::to_string(over.w) + where);
  }
  if (saturating_mul(l.part_y, l.repl_y) > over.h) {
    op_error(i, f + ".part",
             f + " layout spreads over part_y * repl_y = " + std::to_string(l.part_y) + " * " +
                 std::to_string(l.repl_y) + " PEs along Y, more than the " + std::to_string(over.h) + where);
  }
}

void Checker::check_op(std::size_t i) {
  const PlacedOp& op = s_.ops[i];
  const bool mover = moves_between_regions(op.kernel);

  // (g) structure.
  if (!region_ok(op.region)) {
    op_error(i, "region",
             "region " + std::to_string(op.region) + " does not exist (the schedule has " +
                 std::to_string(s_.regions.size()) + " regions)");
  }
  if (mover && !region_ok(op.to_region)) {
    op_error(i, "to_region",
             std::string(to_string(op.kernel)) + " needs a destination region, but to_region " +
                 std::to_string(op.to_region) + " does not exist");
  } else if (mover && op.kernel != Kernel::transfer && wafer_of(s_, op.region) != wafer_of(s_, op.to_region)) {
    op_error(i, "to_region",
             std::string(to_string(op.kernel)) + " to region " + std::to_string(op.to_region) +
                 " on another wafer: only a transfer crosses the link between systems");
  } else if (!mover && op.to_region != -1) {
    op_error(i, "to_region",
             "to_region is " + std::to_string(op.to_region) + ", must be -1 for a " +
                 std::string(to_string(op.kernel)) + " op, which stays in its region");
  }
  if (op.group < 0) op_error(i, "group", "group size " + std::to_string(op.group) + " is negative");
  if (op.group > kMaxGroup) {
    op_error(i, "group", "group size " + std::to_string(op.group) + " exceeds the maximum " + std::to_string(kMaxGroup));
  }
  if (op.rounds < 1) op_error(i, "rounds", "needs at least 1 allreduce round, got " + std::to_string(op.rounds));
  if (op.rounds > kMaxRounds) {
    op_error(i, "rounds", std::to_string(op.rounds) + " allreduce rounds, the supported maximum is " +
                              std::to_string(kMaxRounds));
  }
  if (op.step < 0) op_error(i, "step", "step " + std::to_string(op.step) + " is negative");
  if (op.stage < 0) op_error(i, "stage", "stage " + std::to_string(op.stage) + " is negative");
  if (i > 0 && op.step < s_.ops[i - 1].step) {
    op_error(i, "step",
             "step " + std::to_string(op.step) + " comes after step " + std::to_string(s_.ops[i - 1].step) +
                 " of op '" + s_.ops[i - 1].name + "'; steps must not decrease in op order");
  }
  for (const int p : op.inputs) {
    if (p < 0 || static_cast<std::size_t>(p) >= i) {
      op_error(i, "inputs",
               "input " + std::to_string(p) + " is not an earlier op (inputs must name ops 0 to " +
                   std::to_string(static_cast<long long>(i) - 1) + ")");
    }
  }
  const std::pair<const char*, std::int64_t> work[] = {
      {"batch", op.work.batch},   {"m", op.work.m},
      {"k", op.work.k},           {"n", op.work.n},
      {"flops", op.work.flops},   {"weight_bytes", op.work.weight_bytes},
      {"input_bytes", op.work.input_bytes}, {"output_bytes", op.work.output_bytes},
      {"kv_cache_bytes", op.work.kv_cache_bytes}};
  for (const auto& [name, value] : work) {
    if (value < 0) op_error(i, std::string("work.") + name, std::string(name) + " is negative");
    if (value > kMaxWork) {
      op_error(i, std::string("work.") + name, std::string(name) + " is " + std::to_string(value) +
                                                   ", the supported maximum is 2^60");
    }
  }
  // Heads are counted, not sized: a model has thousands at most, and the attention costs multiply them.
  for (const auto& [name, value] : {std::pair<const char*, std::int64_t>{"heads", op.work.heads}, {"kv_heads", op.work.kv_heads}}) {
    if (value < 0) op_error(i, std::string("work.") + name, std::string(name) + " is negative");
    if (value > kMaxHeads) {
      op_error(i, std::string("work.") + name,
               std::string(name) + " is " + std::to_string(value) + ", the supported maximum is 2^20");
    }
  }
  // Per-element counts of a scalar loop are instructions of one element's code: a few dozen at most.
  for (const auto& [name, value] : {std::pair<const char*, std::int64_t>{"scalar_instructions", op.work.scalar_instructions},
                                    {"scalar_divisions", op.work.scalar_divisions}}) {
    if (value < 0 || value > kMaxScalarPerElement) {
      op_error(i, std::string("work.") + name,
               std::string(name) + " is " + std::to_string(value) + ", expected 0 to " + std::to_string(kMaxScalarPerElement));
    }
  }
  for (const auto& f : wafer::vector_forms()) {
    const std::int64_t count = op.work.vector[static_cast<std::size_t>(f.form)];
    if (count == 0) continue;
    const std::string key = "work.vec_" + std::string(f.name);
    if (count < 0 || count > kMaxScalarPerElement) {
      op_error(i, key, "vec_" + std::string(f.name) + " is " + std::to_string(count) + ", expected 0 to " +
                           std::to_string(kMaxScalarPerElement));
    } else if (!kernel_info(op.kernel).vector_mix) {
      op_error(i, key, "only " + kernels_that([](const KernelInfo& k) { return k.vector_mix; }) +
                           " ops run a vector instruction mix, this op is " + std::string(to_string(op.kernel)));
    }
  }
  if (op.work.scalar_elements < 0 || op.work.scalar_elements > kMaxWork) {
    op_error(i, "work.scalar_elements", "scalar_elements is " + std::to_string(op.work.scalar_elements) +
                                            ", expected 0 to 2^60");
  }
  if (op.work.products < 1 || op.work.products > kMaxProducts) {
    op_error(i, "work.products", "products is " + std::to_string(op.work.products) + ", expected 1 to 2^20");
  } else if (op.work.products > 1 && !kernel_info(op.kernel).grouped_products) {
    op_error(i, "work.products", "only a " + kernels_that([](const KernelInfo& k) { return k.grouped_products; }) +
                                     " runs products one after another, this op is " + std::string(to_string(op.kernel)));
  }
  if (!op.work.product_rows.empty()) {
    const auto& rows = op.work.product_rows;
    std::int64_t sum = 0;
    bool negative = false;
    for (const std::int64_t r : rows) {
      negative = negative || r < 0;
      if (r >= 0) sum = r > kMaxWork ? kMaxWork + 1 : std::min(kMaxWork + 1, sum + r);  // no overflow
    }
    if (static_cast<std::int64_t>(rows.size()) != op.work.products) {
      op_error(i, "work.product_rows", "gives " + std::to_string(rows.size()) + " products' rows, products is " +
                                           std::to_string(op.work.products));
    } else if (negative || sum != op.work.m) {
      op_error(i, "work.product_rows", "each product's rows must be at least 0 and sum to m (" +
                                           std::to_string(op.work.m) + "), they sum to " + std::to_string(sum) +
                                           (negative ? " with a negative count" : ""));
    }
  }
  if (op.work.fused < 1 || op.work.fused > kMaxHeads) {
    op_error(i, "work.fused", "fused is " + std::to_string(op.work.fused) + ", expected 1 to 2^20");
  } else if (op.work.fused > 1 && !kernel_info(op.kernel).fused_products) {
    op_error(i, "work.fused", "only a " + kernels_that([](const KernelInfo& k) { return k.fused_products; }) +
                                  " fuses products into one reduction, this op is " + std::string(to_string(op.kernel)));
  }
  if (op.input_skewed && !kernel_info(op.kernel).skewable) {
    op_error(i, "skewed", "only a " + kernels_that([](const KernelInfo& k) { return k.skewable; }) +
                              " skips its alignment shifts, this op is " + std::string(to_string(op.kernel)));
  }
  if (op.kernel == Kernel::allgather) {
    // Features split over both axes in, gathered along its axis: out holds them on the other axis only.
    const Layout& in = op.in_layout;
    const Layout& out = op.out_layout;
    const bool kept_x = op.reduce_axis == Axis::y;
    if (!in.features_on_both() || out.features_on_both() || !out.narrows_to(in) ||
        (out.on_x == Dim::features) != kept_x) {
      op_error(i, "out",
               "an allgather along " + std::string(to_string(op.reduce_axis)) + " takes features split over both axes (" +
                   placement_text(in) + ") and leaves them on " + (kept_x ? "x" : "y") + " only, not " +
                   placement_text(out));
    }
  }
  // Token rows (batch x m) are multiplied by tile sizes in the cost model and the simulator.
  if (op.work.batch > 0 && op.work.m > 0 && op.work.batch > kMaxWork / op.work.m) {
    op_error(i, "work", "batch x m is more than 2^60 token rows");
  }
  // Attention lays heads x head_dim features (and heads x context scores) over the region.
  if (op.attention != AttentionRole::none && op.work.heads > 0 && op.work.heads <= kMaxHeads &&
      (op.work.k > kMaxWork / op.work.heads || op.work.n > kMaxWork / op.work.heads)) {
    op_error(i, "work", "heads x k or heads x n is more than 2^60");
  }
  // An attention role means something only on the kernels that compute attention.
  if (op.attention != AttentionRole::none) {
    const auto can = [](AttentionFit fit) { return [fit](const KernelInfo& k) { return k.attention == fit; }; };
    const AttentionFit needed = op.attention == AttentionRole::softmax ? AttentionFit::softmax : AttentionFit::products;
    if (kernel_info(op.kernel).attention != needed) {
      op_error(i, "attn",
               "attn=" + std::string(to_string(op.attention)) + " means nothing on a " + std::string(to_string(op.kernel)) +
                   " op (scores and values: " + kernels_that(can(AttentionFit::products)) +
                   "; softmax: " + kernels_that(can(AttentionFit::softmax)) + ")");
    }
  }
  // Chunked prefill: a chunk of m tokens attends to the keys of its own and the earlier chunks, so
  // its (mean) context lies between m and prompt_chunks x m.
  if (op.attention != AttentionRole::none && s_.prompt_chunks > 1 && op.work.m > 0) {
    const std::int64_t keys = op.attention == AttentionRole::values ? op.work.k : op.work.n;
    const std::int64_t rows = op.work.m;
    if (keys < rows || (keys - 1) / s_.prompt_chunks >= rows) {  // the second: keys > chunks x rows, without overflow
      op_error(i, "work",
               "attends to " + std::to_string(keys) + " keys with chunks of " + std::to_string(rows) + " tokens in " +
                   std::to_string(s_.prompt_chunks) + " chunks: a chunk's keys are those of chunks 0 to its own, " +
                   std::to_string(rows) + " to " + std::to_string(s_.prompt_chunks) + " x " + std::to_string(rows));
    }
  }

  // (a) and (b) placement.
  if (op.used.w < 1 || op.used.h < 1) {
    op_error(i, "used", "used rectangle " + rect_text(op.used) + " is empty");
  } else {
    if (!grid_contains(op.used)) {
      op_error(i, "used",
               "used rectangle (x,y,w,h " + rect_text(op.used) + ") lies outside the " +
                   std::to_string(s_.grid_w_pes) + " x " + std::to_string(s_.grid_h_pes) + " grid");
    } else if (region_ok(op.region)) {
      const Rect& region = s_.regions[static_cast<std::size_t>(op.region)];
      if (!inside(op.used, region)) {
        op_error(i, "used",
                 "used rectangle (x,y,w,h " + rect_text(op.used) + ") is not inside its region " +
                     std::to_string(op.region) + " (" + rect_text(region) + ")");
      }
    }
    // The PEs an op computes on must work; a defective PE elsewhere in the region stays idle, and its
    // router still forwards (the wafer model), so routes may cross it.
    for (const auto& [x, y] : s_.defective_pes) {
      if (holds(op.used, x, y)) {
        op_error(i, "used",
                 "used rectangle (x,y,w,h " + rect_text(op.used) + ") contains the defective PE (" +
                     std::to_string(x) + "," + std::to_string(y) + ")");
      }
    }
  }
  check_layout(i, "in", op.in_layout);
  check_layout(i, "out", op.out_layout);

  // (f) routing colours.
  if (o_.colours_needed) {
    const int needed = o_.colours_needed(op);
    if (needed > s_.colours) {
      op_error(i, "kernel",
               std::string(to_string(op.kernel)) + " needs " + std::to_string(needed) +
                   " routing colours per PE, more than the " + std::to_string(s_.colours) + " available");
    }
  }
}

// (c): within a step, each distinct region is compared once with the regions seen before it.
void Checker::check_steps_disjoint() {
  std::map<int, std::vector<std::pair<int, std::size_t>>> regions_by_step;  // step -> (region, first op)
  for (std::size_t i = 0; i < s_.ops.size(); ++i) {
    const PlacedOp& op = s_.ops[i];
    if (!region_ok(op.region)) continue;
    auto& seen = regions_by_step[op.step];
    const bool known = std::any_of(seen.begin(), seen.end(), [&](const auto& e) { return e.first == op.region; });
    if (known) continue;
    const Rect& mine = s_.regions[static_cast<std::size_t>(op.region)];
    for (const auto& [other, j] : seen) {
      if (wafer_of(s_, other) == wafer_of(s_, op.region) && overlap(mine, s_.regions[static_cast<std::size_t>(other)])) {
        add(op_line(i), "ops[" + std::to_string(i) + "].region",
            "op '" + op.name + "' (step " + std::to_string(op.step) + ") in region " + std::to_string(op.region) +
                " overlaps region " + std::to_string(other) + " of op '" + s_.ops[j].name +
                "' running in the same step");
      }
    }
    seen.emplace_back(op.region, i);
  }
}

// (d)
void Checker::check_sram() {
  const std::vector<RegionSram> all = region_sram_per_pe_all(s_);
  const std::int64_t data = s_.sram_per_pe_bytes - s_.sram_reserved_per_pe_bytes;
  for (std::size_t r = 0; r < all.size(); ++r) {
    const RegionSram& use = all[r];
    if (use.total_bytes() > data) {
      add(region_line(r), "regions[" + std::to_string(r) + "]",
          "needs " + std::to_string(use.total_bytes()) + " bytes of SRAM per PE in region " + std::to_string(r) +
              " (" + std::to_string(use.resident_bytes) + " of weights and KV cache, " +
              std::to_string(use.buffer_bytes) + " of activation buffers), more than the " + std::to_string(data) +
              " available for data (" + std::to_string(s_.sram_per_pe_bytes) + " less " +
              std::to_string(s_.sram_reserved_per_pe_bytes) + " reserved)");
    }
  }
}

// (e)
void Checker::check_edges() {
  for (std::size_t i = 0; i < s_.ops.size(); ++i) {
    const PlacedOp& c = s_.ops[i];
    if (!region_ok(c.region)) continue;
    for (const int pi : c.inputs) {
      if (pi < 0 || static_cast<std::size_t>(pi) >= i) continue;
      const PlacedOp& p = s_.ops[static_cast<std::size_t>(pi)];
      if (!region_ok(p.region)) continue;
      const std::string producer = "op '" + p.name + "'";
      if (moves_between_regions(p.kernel)) {
        if (region_ok(p.to_region) && p.to_region != c.region) {
          op_error(i, "inputs",
                   "runs in region " + std::to_string(c.region) + " but reads " + std::string(to_string(p.kernel)) +
                       " " + producer + ", which delivers to region " + std::to_string(p.to_region));
          continue;
        }
      } else if (p.region != c.region) {
        op_error(i, "inputs",
                 "runs in region " + std::to_string(c.region) + " but reads " + producer + " of region " +
                     std::to_string(p.region) +
                     " directly; data crosses regions only through a transfer, moe_dispatch or moe_combine op");
        continue;
      }
      if (c.kernel == Kernel::relayout || moves_between_regions(c.kernel)) continue;
      if (kernel_info(p.kernel).resident_state) continue;  // the KV cache keeps its own layout
      if (!p.out_layout.narrows_to(c.in_layout)) {
        op_error(i, "in",
                 "expects its input in layout " + placement_text(c.in_layout) + " but " + producer +
                     " produces " + placement_text(p.out_layout) + ", with no relayout between them");
      }
    }
  }
}

std::vector<Diagnostic> Checker::run() {
  check_header();
  check_regions();
  std::map<std::string, std::size_t> names;
  for (std::size_t i = 0; i < s_.ops.size(); ++i) {
    const std::string& name = s_.ops[i].name;
    if (name.empty()) {
      add(op_line(i), "ops[" + std::to_string(i) + "].name", "op " + std::to_string(i) + " has an empty name");
    } else if (const auto [it, fresh] = names.emplace(name, i); !fresh) {
      op_error(i, "name", "name already used by op " + std::to_string(it->second));
    }
    check_op(i);
  }
  check_steps_disjoint();
  // Each overlapping pair of regions costs the SRAM check a sweep: past a budget a file could make it
  // run for minutes (every region nested in every other), so it is refused instead.
  std::size_t pairs = 0;
  for (std::size_t a = 0; a < s_.regions.size() && pairs <= kMaxOverlappingRegionPairs; ++a) {
    for (std::size_t b = a + 1; b < s_.regions.size(); ++b) {
      if (wafer_of(s_, static_cast<int>(a)) == wafer_of(s_, static_cast<int>(b)) && overlap(s_.regions[a], s_.regions[b])) {
        ++pairs;
      }
    }
  }
  if (pairs > kMaxOverlappingRegionPairs) {
    add(0, "regions", "more than " + std::to_string(kMaxOverlappingRegionPairs) +
                          " pairs of regions overlap (the tool's schedules nest a few strips in their block's "
                          "region); SRAM was not checked");
  } else {
    check_sram();
  }
  check_edges();
  std::stable_sort(diagnostics_.begin(), diagnostics_.end(),
                   [](const Diagnostic& a, const Diagnostic& b) { return a.line < b.line; });
  if (unlisted_ > 0) {
    diagnostics_.push_back(Diagnostic{o_.file_label, 0, 0, "", "and " + std::to_string(unlisted_) + " more problems"});
  }
  return std::move(diagnostics_);
}

}  // namespace

std::vector<Diagnostic> verify(const Schedule& schedule, const VerifyOptions& options) {
  return Checker(schedule, options).run();
}

std::vector<Diagnostic> verify(const Schedule& schedule, const std::string& file_label,
                               const std::vector<int>& op_line_numbers, const ColoursNeeded& colours_needed) {
  VerifyOptions options;
  options.file_label = file_label;
  options.lines.ops = op_line_numbers;
  options.colours_needed = colours_needed;
  return verify(schedule, options);
}

void verify_or_throw(const Schedule& schedule, const VerifyOptions& options) {
  auto diagnostics = verify(schedule, options);
  if (!diagnostics.empty()) throw DataError(std::move(diagnostics));
}

}  // namespace wavel::meshir
