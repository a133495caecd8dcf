// Names of MeshIR kernels, dimensions and axes, as printed in the text form and in results.
#include "wavel/meshir/schedule.hpp"

#include "wavel/common/names.hpp"
#include "wavel/meshir/kernels.hpp"

#include <algorithm>
#include <array>
#include <tuple>
#include <utility>

namespace wavel::meshir {

namespace {

// One table per enum keeps to_string and parse_* from drifting apart (kernels: kernels.cpp).
constexpr NameTable<Dim, 3> dim_names{{
    {Dim::none, "none"},
    {Dim::tokens, "tokens"},
    {Dim::features, "features"},
}};

constexpr NameTable<Axis, 2> axis_names{{
    {Axis::x, "x"},
    {Axis::y, "y"},
}};

constexpr NameTable<AttentionRole, 4> attention_names{{
    {AttentionRole::none, "none"},
    {AttentionRole::scores, "scores"},
    {AttentionRole::softmax, "softmax"},
    {AttentionRole::values, "values"},
}};

constexpr NameTable<Edge, 4> edge_names{{
    {Edge::west, "west"},
    {Edge::east, "east"},
    {Edge::north, "north"},
    {Edge::south, "south"},
}};

}  // namespace

std::string_view to_string(Kernel kernel) { return kernel_info(kernel).name; }
std::string_view to_string(Dim dim) { return name_of(dim_names, dim); }
std::string_view to_string(Axis axis) { return name_of(axis_names, axis); }
std::string_view to_string(AttentionRole role) { return name_of(attention_names, role); }
std::optional<AttentionRole> parse_attention_role(std::string_view text) { return value_of(attention_names, text); }

std::optional<Dim> parse_dim(std::string_view text) { return value_of(dim_names, text); }
std::optional<Axis> parse_axis(std::string_view text) { return value_of(axis_names, text); }
std::string_view to_string(Edge edge) { return name_of(edge_names, edge); }
std::optional<Edge> parse_edge(std::string_view text) { return value_of(edge_names, text); }

std::int64_t wafer_of(const Schedule& schedule, int region) {
  if (region < 0 || static_cast<std::size_t>(region) >= schedule.region_wafers.size()) return 0;
  return schedule.region_wafers[static_cast<std::size_t>(region)];
}

bool crosses_wafers(const Schedule& schedule, const PlacedOp& op) {
  return op.kernel == Kernel::transfer && wafer_of(schedule, op.region) != wafer_of(schedule, op.to_region);
}

Rect io_rect(const Schedule& schedule, const Rect& from) {
  return io_rect(schedule.io_edge, schedule.grid_w_pes, schedule.grid_h_pes, from);
}

Rect io_rect(Edge edge, std::int64_t grid_w, std::int64_t grid_h, const Rect& from) {
  Rect r = from;
  switch (edge) {
    case Edge::west: r.x = 0; break;
    case Edge::east: r.x = grid_w - from.w; break;
    case Edge::north: r.y = 0; break;
    case Edge::south: r.y = grid_h - from.h; break;
  }
  return r;
}

Rect used_part(const Schedule& schedule, int region) {
  bool any = false;
  std::int64_t x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  for (const PlacedOp& op : schedule.ops) {
    if (op.region != region || op.used.w < 1 || op.used.h < 1) continue;
    x0 = any ? std::min(x0, op.used.x) : op.used.x;
    y0 = any ? std::min(y0, op.used.y) : op.used.y;
    x1 = any ? std::max(x1, op.used.x + op.used.w) : op.used.x + op.used.w;
    y1 = any ? std::max(y1, op.used.y + op.used.h) : op.used.y + op.used.h;
    any = true;
  }
  if (any) return Rect{x0, y0, x1 - x0, y1 - y0};
  if (region < 0 || static_cast<std::size_t>(region) >= schedule.regions.size()) return Rect{};
  return schedule.regions[static_cast<std::size_t>(region)];
}

std::vector<Rect> used_parts(const Schedule& schedule) {
  std::vector<Rect> parts(schedule.regions);
  std::vector<char> any(parts.size(), 0);
  for (const PlacedOp& op : schedule.ops) {
    if (op.region < 0 || static_cast<std::size_t>(op.region) >= parts.size() || op.used.w < 1 || op.used.h < 1) continue;
    Rect& r = parts[static_cast<std::size_t>(op.region)];
    if (any[static_cast<std::size_t>(op.region)] == 0) {
      r = op.used;
      any[static_cast<std::size_t>(op.region)] = 1;
      continue;
    }
    const std::int64_t x1 = std::max(r.x + r.w, op.used.x + op.used.w), y1 = std::max(r.y + r.h, op.used.y + op.used.h);
    r.x = std::min(r.x, op.used.x);
    r.y = std::min(r.y, op.used.y);
    r.w = x1 - r.x;
    r.h = y1 - r.y;
  }
  return parts;
}

std::optional<Exchange> exchange_of(const Schedule& schedule, const PlacedOp& op) {
  if (op.kernel != Kernel::moe_dispatch && op.kernel != Kernel::moe_combine) return std::nullopt;
  return exchange_of(schedule, op, used_part(schedule, op.to_region));
}

std::optional<Exchange> exchange_of(const Schedule& schedule, const PlacedOp& op, const Rect& to_part) {
  if (op.kernel != Kernel::moe_dispatch && op.kernel != Kernel::moe_combine) return std::nullopt;
  if (op.to_region < 0 || static_cast<std::size_t>(op.to_region) >= schedule.regions.size()) return std::nullopt;
  if (crosses_wafers(schedule, op)) return std::nullopt;
  Exchange e;
  e.into_strip = op.kernel == Kernel::moe_dispatch;
  e.outer = e.into_strip ? op.used : to_part;
  e.strip = e.into_strip ? to_part : op.used;
  const Rect& o = e.outer;
  const Rect& s = e.strip;
  if (s.w < 1 || s.h < 1 || s.x < o.x || s.y < o.y || s.x + s.w > o.x + o.w || s.y + s.h > o.y + o.h) return std::nullopt;
  if (s.h == o.h && s.w < o.w) {
    e.axis = Axis::x;
  } else if (s.w == o.w && s.h < o.h) {
    e.axis = Axis::y;
  } else {
    return std::nullopt;
  }
  return e;
}

Schedule empty_on(const std::string& name, const wafer::WaferParams& wafer) {
  Schedule s;
  s.name = name;
  s.grid_w_pes = wafer.grid_w_pes;
  s.grid_h_pes = wafer.grid_h_pes;
  s.sram_per_pe_bytes = wafer.sram_per_pe_bytes;
  s.sram_reserved_per_pe_bytes = wafer.sram_reserved_per_pe_bytes;
  s.colours = wafer.routable_colours;
  for (const auto& pe : wafer.defective_pes) s.defective_pes.emplace_back(pe.x, pe.y);
  return s;
}

Schedule empty_like(const std::string& name, const Schedule& frame) {
  // The wafer a schedule lies on, the fields empty_on fills.
  const auto wafer_fields = [](auto& x) {
    return std::tie(x.grid_w_pes, x.grid_h_pes, x.sram_per_pe_bytes, x.sram_reserved_per_pe_bytes, x.colours,
                    x.defective_pes);
  };
  Schedule s;
  s.name = name;
  wafer_fields(s) = wafer_fields(frame);
  return s;
}

}  // namespace wavel::meshir
