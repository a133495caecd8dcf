// Shared by the MeshIR tests: the decode schedule, layouts, round-trip checks and diagnostics helpers.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "wavel/common/error.hpp"
#include "wavel/meshir/schedule.hpp"
#include "wavel/meshir/text.hpp"
#include "wavel/meshir/verify.hpp"
using wavel::Diagnostic;
using wavel::meshir::Axis;
using wavel::meshir::Dim;
using wavel::meshir::Kernel;
using wavel::meshir::Layout;
using wavel::meshir::PlacedOp;
using wavel::meshir::Rect;
using wavel::meshir::Schedule;

namespace meshir_fixtures {


// Activation with its features split over Y and copied along X (WaferLLM's decode input layout).
inline Layout features_on_y(std::int64_t side) {
  Layout l;
  l.on_x = Dim::none;
  l.on_y = Dim::features;
  l.part_x = 1;
  l.part_y = side;
  l.repl_x = side;
  l.repl_y = 1;
  l.tile_rows = 16;
  l.tile_cols = 16;
  return l;
}

// The transposed layout, which a meshgemv reducing along Y produces.
inline Layout features_on_x(std::int64_t side, std::int64_t copies_y) {
  Layout l;
  l.on_x = Dim::features;
  l.on_y = Dim::none;
  l.part_x = side;
  l.part_y = 1;
  l.repl_x = 1;
  l.repl_y = copies_y;
  l.tile_rows = 16;
  l.tile_cols = 16;
  return l;
}

inline PlacedOp make_op(const std::string& name, Kernel kernel, int region, Rect used, int step, int stage,
                 std::vector<int> inputs, Layout in, Layout out) {
  PlacedOp op;
  op.name = name;
  op.kernel = kernel;
  op.region = region;
  op.used = used;
  op.step = step;
  op.stage = stage;
  op.inputs = std::move(inputs);
  op.in_layout = in;
  op.out_layout = out;
  return op;
}

// Two 10 x 10 regions side by side on a 21 x 10 grid (the last column holds a defective PE), a
// two-stage decode pipeline of six ops. SRAM per PE, worked out by hand:
//   region 0: resident 25600*10/100 = 2560 (embed) + ceil(8192*10/100) = 820 (q_proj) = 3380;
//             buffers 2 * max(ceil(512/100), ceil(1024/100), ceil(1024/100)) = 2 * 11 = 22; total 3402
//   region 1: resident 20000*10/100 = 2000 (attn KV) + ceil(8192*5/50) = 820 (up_proj) = 2820;
//             buffers 2 * max(ceil(2560/100), ceil(4096/100), ceil(3072/50)) = 2 * 62 = 124; total 2944
inline Schedule decode_schedule() {
  Schedule s;
  s.name = "decode-test";
  s.grid_w_pes = 21;
  s.grid_h_pes = 10;
  s.sram_per_pe_bytes = 49152;
  s.colours = 24;
  s.concurrent_requests = 4;
  s.microbatches = 2;
  s.layers_total = 2;
  s.layer_scale = 1;
  s.defective_pes = {{20, 5}};
  s.regions = {Rect{0, 0, 10, 10}, Rect{10, 0, 10, 10}};
  const Rect r0{0, 0, 10, 10};
  const Rect r1{10, 0, 10, 10};

  PlacedOp embed = make_op("embed", Kernel::lookup, 0, r0, 0, 0, {}, features_on_y(10), features_on_y(10));
  embed.once = true;  // round-trips as repeat=once
  embed.work = {4, 4, 0, 64, 0, 25600, 0, 512, 0};

  PlacedOp q = make_op("layer.0.q_proj", Kernel::meshgemv, 0, r0, 1, 0, {0}, features_on_y(10), features_on_x(10, 10));
  q.reduce_axis = Axis::y;
  q.group = 5;
  q.work = {4, 4, 64, 64, 32768, 8192, 512, 512, 0};

  PlacedOp xfer =
      make_op("xfer.0-1", Kernel::transfer, 0, r0, 2, 0, {1}, features_on_x(10, 10), features_on_x(10, 10));
  xfer.to_region = 1;
  xfer.work = {4, 4, 0, 64, 0, 0, 512, 512, 0};

  PlacedOp attn = make_op("layer.1.attn", Kernel::meshgemv, 1, r1, 3, 1, {2}, features_on_x(10, 10), features_on_y(10));
  attn.group = 5;
  attn.work = {4, 4, 64, 2048, 1048576, 0, 512, 2048, 20000};

  PlacedOp relayout =
      make_op("layer.1.relayout", Kernel::relayout, 1, r1, 4, 1, {3}, features_on_y(10), features_on_x(10, 5));
  relayout.work = {4, 4, 0, 64, 0, 0, 2048, 2048, 0};

  Layout up_out = features_on_y(5);
  up_out.repl_x = 10;
  PlacedOp up = make_op("layer.1.up_proj", Kernel::meshgemv, 1, Rect{10, 0, 10, 5}, 5, 1, {4}, features_on_x(10, 5),
                        up_out);
  up.reduce_axis = Axis::y;
  up.group = 5;
  up.work = {4, 4, 64, 64, 32768, 8192, 2048, 1024, 0};

  s.ops = {embed, q, xfer, attn, relayout, up};
  return s;
}

// meshgemv needs 3 colours, every other kernel 1: a stand-in for cost::colours_needed.
inline int test_colours(const PlacedOp& op) { return op.kernel == Kernel::meshgemv ? 3 : 1; }

inline void check_same_layout(const Layout& a, const Layout& b) {
  CHECK(a.on_x == b.on_x);
  CHECK(a.on_y == b.on_y);
  CHECK(a.part_x == b.part_x);
  CHECK(a.part_y == b.part_y);
  CHECK(a.repl_x == b.repl_x);
  CHECK(a.repl_y == b.repl_y);
  CHECK(a.tile_rows == b.tile_rows);
  CHECK(a.tile_cols == b.tile_cols);
}

// Field by field, every field.
inline void check_same(const Schedule& a, const Schedule& b) {
  CHECK(a.name == b.name);
  CHECK(a.grid_w_pes == b.grid_w_pes);
  CHECK(a.grid_h_pes == b.grid_h_pes);
  CHECK(a.sram_per_pe_bytes == b.sram_per_pe_bytes);
  CHECK(a.colours == b.colours);
  CHECK(a.defective_pes == b.defective_pes);
  CHECK(a.regions == b.regions);
  CHECK(a.concurrent_requests == b.concurrent_requests);
  CHECK(a.microbatches == b.microbatches);
  CHECK(a.layer_scale == b.layer_scale);
  CHECK(a.layers_total == b.layers_total);
  REQUIRE(a.ops.size() == b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    INFO("op " << i);
    const PlacedOp& x = a.ops[i];
    const PlacedOp& y = b.ops[i];
    CHECK(x.name == y.name);
    CHECK(x.kernel == y.kernel);
    CHECK(x.region == y.region);
    CHECK(x.used == y.used);
    check_same_layout(x.in_layout, y.in_layout);
    check_same_layout(x.out_layout, y.out_layout);
    CHECK(x.reduce_axis == y.reduce_axis);
    CHECK(x.group == y.group);
    CHECK(x.to_region == y.to_region);
    CHECK(x.once == y.once);
    CHECK(x.attention == y.attention);
    CHECK(x.inputs == y.inputs);
    CHECK(x.step == y.step);
    CHECK(x.stage == y.stage);
    CHECK(x.work.batch == y.work.batch);
    CHECK(x.work.m == y.work.m);
    CHECK(x.work.k == y.work.k);
    CHECK(x.work.n == y.work.n);
    CHECK(x.work.flops == y.work.flops);
    CHECK(x.work.weight_bytes == y.work.weight_bytes);
    CHECK(x.work.input_bytes == y.work.input_bytes);
    CHECK(x.work.output_bytes == y.work.output_bytes);
    CHECK(x.work.kv_cache_bytes == y.work.kv_cache_bytes);
    CHECK(x.work.heads == y.work.heads);
    CHECK(x.work.kv_heads == y.work.kv_heads);
  }
}

inline void check_round_trip(const Schedule& s) {
  const std::string text = wavel::meshir::print(s);
  const Schedule back = wavel::meshir::parse(text, "round-trip.meshir");
  check_same(s, back);
  CHECK(wavel::meshir::print(back) == text);
}

/// 1-based line and column of the first occurrence of `needle` in `text`.
struct Where {
  int line = 0;
  int column = 0;
};
inline Where locate(const std::string& text, const std::string& needle) {
  const auto at = text.find(needle);
  REQUIRE_MESSAGE(at != std::string::npos, "no '" << needle << "' in the text");
  Where w{1, 1};
  for (std::size_t i = 0; i < at; ++i) {
    if (text[i] == '\n') {
      ++w.line;
      w.column = 1;
    } else {
      ++w.column;
    }
  }
  return w;
}

/// Line of `op INDEX` (or `region INDEX`) in printed text.
inline int line_of(const std::string& text, const std::string& kind, int index) {
  return locate(text, "\n" + kind + " " + std::to_string(index) + " ").line + 1;
}

inline std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, "no '" << from << "' in the text");
  return text.replace(at, from.size(), to);
}

inline std::vector<Diagnostic> parse_errors(const std::string& text) {
  try {
    (void)wavel::meshir::parse(text, "bad.meshir");
  } catch (const wavel::DataError& e) {
    CHECK(e.code() == wavel::ExitCode::data_error);
    return e.diagnostics();
  }
  FAIL("the text parsed without errors");
  return {};
}

/// The diagnostic whose message contains `fragment`; fails if there is none.
inline Diagnostic find(const std::vector<Diagnostic>& diagnostics, const std::string& fragment) {
  for (const auto& d : diagnostics) {
    if (d.message.find(fragment) != std::string::npos) return d;
  }
  std::string all;
  for (const auto& d : diagnostics) all += "\n  " + d.format();
  FAIL("no diagnostic says '" << fragment << "'; got:" << all);
  return {};
}

/// Prints `s`, parses it back with lines and verifies it, as the tool does with a schedule file.
struct Verified {
  std::string text;
  std::vector<Diagnostic> diagnostics;
};
inline Verified verify_text(const Schedule& s) {
  Verified v;
  v.text = wavel::meshir::print(s);
  const auto parsed = wavel::meshir::parse_with_lines(v.text, "s.meshir");
  wavel::meshir::VerifyOptions options;
  options.file_label = "s.meshir";
  options.lines = parsed.lines;
  options.colours_needed = test_colours;
  v.diagnostics = wavel::meshir::verify(parsed.schedule, options);
  return v;
}

inline std::string formatted(const std::vector<Diagnostic>& diagnostics) {
  std::string all;
  for (const auto& d : diagnostics) all += d.format() + "\n";
  return all;
}

/// Expects exactly one diagnostic, on `line`, whose message contains `fragment`.
inline void expect_one(const Verified& v, int line, const std::string& fragment) {
  INFO(formatted(v.diagnostics));
  REQUIRE(v.diagnostics.size() == 1);
  CHECK(v.diagnostics[0].line == line);
  CHECK(v.diagnostics[0].file == "s.meshir");
  CHECK(v.diagnostics[0].message.find(fragment) != std::string::npos);
}

}  // namespace meshir_fixtures
