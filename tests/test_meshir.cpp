// Tests of MeshIR: text round trip, located parse errors, each verifier check, and the SRAM model.
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

namespace {

// Activation with its features split over Y and copied along X (WaferLLM's decode input layout).
Layout features_on_y(std::int64_t side) {
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
Layout features_on_x(std::int64_t side, std::int64_t copies_y) {
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

PlacedOp make_op(const std::string& name, Kernel kernel, int region, Rect used, int step, int stage,
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
Schedule decode_schedule() {
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
int test_colours(const PlacedOp& op) { return op.kernel == Kernel::meshgemv ? 3 : 1; }

void check_same_layout(const Layout& a, const Layout& b) {
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
void check_same(const Schedule& a, const Schedule& b) {
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

void check_round_trip(const Schedule& s) {
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
Where locate(const std::string& text, const std::string& needle) {
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
int line_of(const std::string& text, const std::string& kind, int index) {
  return locate(text, "\n" + kind + " " + std::to_string(index) + " ").line + 1;
}

std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, "no '" << from << "' in the text");
  return text.replace(at, from.size(), to);
}

std::vector<Diagnostic> parse_errors(const std::string& text) {
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
Diagnostic find(const std::vector<Diagnostic>& diagnostics, const std::string& fragment) {
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
Verified verify_text(const Schedule& s) {
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

std::string formatted(const std::vector<Diagnostic>& diagnostics) {
  std::string all;
  for (const auto& d : diagnostics) all += d.format() + "\n";
  return all;
}

/// Expects exactly one diagnostic, on `line`, whose message contains `fragment`.
void expect_one(const Verified& v, int line, const std::string& fragment) {
  INFO(formatted(v.diagnostics));
  REQUIRE(v.diagnostics.size() == 1);
  CHECK(v.diagnostics[0].line == line);
  CHECK(v.diagnostics[0].file == "s.meshir");
  CHECK(v.diagnostics[0].message.find(fragment) != std::string::npos);
}

}  // namespace

TEST_CASE("meshir: enum names round-trip") {
  for (int k = 0; k <= static_cast<int>(Kernel::moe_combine); ++k) {
    const auto kernel = static_cast<Kernel>(k);
    CHECK(wavel::meshir::parse_kernel(wavel::meshir::to_string(kernel)) == kernel);
  }
  CHECK(wavel::meshir::to_string(Kernel::gemm_t) == "gemm_t");
  CHECK(wavel::meshir::to_string(Kernel::moe_dispatch) == "moe_dispatch");
  CHECK(wavel::meshir::to_string(Dim::features) == "features");
  CHECK(wavel::meshir::to_string(Axis::y) == "y");
  CHECK(wavel::meshir::parse_dim("tokens") == Dim::tokens);
  CHECK(wavel::meshir::parse_axis("x") == Axis::x);
  CHECK_FALSE(wavel::meshir::parse_kernel("MeshGEMV").has_value());
  CHECK_FALSE(wavel::meshir::parse_dim("").has_value());
  CHECK_FALSE(wavel::meshir::parse_axis("z").has_value());
}

TEST_CASE("meshir text: the decode schedule round-trips both ways") {
  Schedule s = decode_schedule();
  check_round_trip(s);
}

TEST_CASE("meshir text: printed form") {
  const std::string text = wavel::meshir::print(decode_schedule());
  CHECK(text.rfind("meshir 2\nschedule \"decode-test\"\ngrid 21 10\nsram_per_pe_bytes 49152\ncolours 24\n"
                   "requests 4\nmicrobatches 2\nlayers 2 scale 1\ndefect 20 5\n",
                   0) == 0);
  CHECK(text.find("\nregion 1 10 0 10 10\n") != std::string::npos);
  CHECK(text.find("\nop 1 \"layer.0.q_proj\" kernel=meshgemv region=0 used=0,0,10,10 step=1 stage=0 inputs=0 "
                  "in=x:none,y:features,part:1x10,repl:10x1,tile:16x16 "
                  "out=x:features,y:none,part:10x1,repl:1x10,tile:16x16 reduce=y group=5 rounds=1 to_region=-1 "
                  "repeat=layers attn=none work=batch:4,m:4,k:64,n:64,flops:32768,weight_bytes:8192,input_bytes:512,output_bytes:512,"
                  "kv_cache_bytes:0,heads:0,kv_heads:0\n") != std::string::npos);
  CHECK(text.find("\nop 0 \"embed\" kernel=lookup region=0 used=0,0,10,10 step=0 stage=0 inputs=- ") !=
        std::string::npos);
  CHECK(wavel::meshir::print(decode_schedule()) == text);  // deterministic
}

TEST_CASE("meshir text: odd names, every kernel and dim, extreme values round-trip") {
  Schedule s;
  s.name = "odd \"schedule\" name # not a comment \\ back";
  s.grid_w_pes = 755;
  s.grid_h_pes = 1174;
  s.sram_per_pe_bytes = 49152;
  s.colours = 24;
  s.concurrent_requests = 16;
  s.microbatches = 3;
  s.layers_total = 80;
  s.layer_scale = 40;
  s.defective_pes = {{3, 4}, {0, 0}, {754, 1173}, {3, 4}};
  s.regions = {Rect{0, 0, 360, 360}, Rect{360, 0, 360, 360}, Rect{0, 360, 755, 814}};
  const std::vector<std::string> names = {
      "layer.0.q_proj", "with space", "with \"quotes\"", "back\\slash\\", "hash#tag", "tab\there",
      "new\nline", "ctrl\x01\x7f", "micro\xc2\xb5s", "=key=value=", "-"};
  const Dim dims[] = {Dim::none, Dim::tokens, Dim::features};
  for (int k = 0; k <= static_cast<int>(Kernel::moe_combine); ++k) {
    PlacedOp op;
    op.name = names[static_cast<std::size_t>(k) % names.size()] + "." + std::to_string(k);
    op.kernel = static_cast<Kernel>(k);
    op.region = k % 3;
    op.used = Rect{k, 2 * k, 100 + k, 200 - k};
    op.in_layout.on_x = dims[k % 3];
    op.in_layout.on_y = dims[(k + 1) % 3];
    op.in_layout.part_x = k + 1;
    op.in_layout.part_y = 2;
    op.in_layout.repl_x = 3;
    op.in_layout.repl_y = k + 4;
    op.in_layout.tile_rows = 128 * k;
    op.in_layout.tile_cols = 7;
    op.out_layout.on_x = dims[(k + 2) % 3];
    op.out_layout.on_y = dims[k % 3];
    op.out_layout.part_x = 360;
    op.reduce_axis = k % 2 == 0 ? Axis::x : Axis::y;
    op.group = k == 2 ? 30 : 0;
    op.to_region = k == 7 ? 2 : -1;
    for (int p = 0; p < k % 4; ++p) op.inputs.push_back(k - 1 - p);
    op.step = k;
    op.stage = k / 4;
    op.work = {k + 1, 2 * k, 4096, 14336, std::numeric_limits<std::int64_t>::max(), 1LL << 40,
               -5, 0, std::numeric_limits<std::int64_t>::min()};
    s.ops.push_back(op);
  }
  check_round_trip(s);

  SUBCASE("a schedule with nothing in it") { check_round_trip(Schedule{}); }
}

TEST_CASE("meshir text: comments, blank lines, CRLF and field order are free in input") {
  const std::string text =
      "# a hand-written schedule\r\n"
      "\n"
      "meshir 2   # version\n"
      "layers 1 scale 1\n"
      "schedule \"hand # made\"\n"
      "   grid 20 10\n"
      "sram_per_pe_bytes 49152\n"
      "colours 24\n"
      "requests 1\n"
      "microbatches 1\n"
      "region 0 0 0 10 10  # index x y w h\n"
      "op 0 \"a\" work=kv_cache_bytes:0,batch:1,m:1,k:2,n:3,flops:4,weight_bytes:5,input_bytes:6,output_bytes:7,kv_heads:0,heads:0 "
      "to_region=-1 repeat=once attn=none rounds=1 group=0 reduce=y out=tile:0x0,repl:1x1,part:1x1,y:none,x:tokens "
      "in=x:none,y:features,part:1x10,repl:10x1,tile:2x2 inputs=- stage=0 step=0 used=0,0,10,10 region=0 "
      "kernel=elementwise\n";
  const auto parsed = wavel::meshir::parse_with_lines(text, "hand.meshir");
  const Schedule& s = parsed.schedule;
  CHECK(s.name == "hand # made");
  CHECK(s.grid_w_pes == 20);
  REQUIRE(s.ops.size() == 1);
  CHECK(s.ops[0].kernel == Kernel::elementwise);
  CHECK(s.ops[0].reduce_axis == Axis::y);
  CHECK(s.ops[0].out_layout.on_x == Dim::tokens);
  CHECK(s.ops[0].in_layout.part_y == 10);
  CHECK(s.ops[0].work.output_bytes == 7);
  CHECK(s.ops[0].once);
  CHECK(parsed.lines.ops == std::vector<int>{12});
  CHECK(parsed.lines.regions == std::vector<int>{11});
  CHECK(parsed.lines.header.at("grid") == 6);
  CHECK(parsed.lines.header.at("meshir") == 3);
  check_round_trip(s);
}

TEST_CASE("meshir text: parse errors carry exact line and column") {
  const std::string good = wavel::meshir::print(decode_schedule());
  REQUIRE_NOTHROW(wavel::meshir::parse(good, "good.meshir"));

  SUBCASE("unknown kernel, with a suggestion") {
    const std::string text = replace_once(good, "kernel=meshgemv region=0", "kernel=mesh_gemv region=0");
    const auto errors = parse_errors(text);
    REQUIRE(errors.size() == 1);
    const Where at = locate(text, "mesh_gemv");
    CHECK(errors[0].file == "bad.meshir");
    CHECK(errors[0].line == at.line);
    CHECK(errors[0].column == at.column);
    CHECK(errors[0].key_path == "ops[1].kernel");
    CHECK(errors[0].message == "unknown kernel 'mesh_gemv' (did you mean 'meshgemv'?)");
    CHECK(errors[0].format() == "bad.meshir:" + std::to_string(at.line) + ":" + std::to_string(at.column) +
                                    ": error: ops[1].kernel: unknown kernel 'mesh_gemv' (did you mean 'meshgemv'?)");
  }
  SUBCASE("a missing field") {
    const std::string text = replace_once(good, " group=5 rounds=1 to_region=-1 repeat=layers attn=none work=batch:4,m:4,k:64,n:64,flops:32768",
                                          " rounds=1 to_region=-1 repeat=layers attn=none work=batch:4,m:4,k:64,n:64,flops:32768");
    const auto errors = parse_errors(text);
    REQUIRE(errors.size() == 1);
    CHECK(errors[0].line == line_of(good, "op", 1));
    CHECK(errors[0].key_path == "ops[1].group");
    CHECK(errors[0].message == "missing field 'group'");
  }
  SUBCASE("a non-integer") {
    const std::string text = replace_once(good, "step=4", "step=four");
    const auto errors = parse_errors(text);
    REQUIRE(errors.size() == 1);
    const Where at = locate(text, "four");
    CHECK(errors[0].line == at.line);
    CHECK(errors[0].column == at.column);
    CHECK(errors[0].key_path == "ops[4].step");
    CHECK(errors[0].message == "expected an integer, got 'four'");
  }
  SUBCASE("an op index out of order") {
    const std::string text = replace_once(good, "\nop 2 ", "\nop 7 ");
    const auto errors = parse_errors(text);
    REQUIRE(errors.size() == 1);
    CHECK(errors[0].line == line_of(good, "op", 2));
    CHECK(errors[0].column == 4);
    CHECK(errors[0].message == "op index 7 out of order: this is op 2");
  }
  SUBCASE("a region index out of order") {
    const std::string text = replace_once(good, "\nregion 1 ", "\nregion 0 ");
    const auto errors = parse_errors(text);
    REQUIRE(errors.size() == 1);
    CHECK(errors[0].line == line_of(good, "region", 1));
    CHECK(errors[0].column == 8);
    CHECK(errors[0].key_path == "regions[1].index");
  }
  SUBCASE("layout and work sub-fields") {
    std::string text = replace_once(good, "in=x:none,y:features,part:1x10", "in=x:nnoe,y:features,part:1y10");
    text = replace_once(text, "flops:32768,weight_bytes:8192", "flops:32768,wieght_bytes:8192");
    const auto errors = parse_errors(text);
    REQUIRE(errors.size() == 4);
    const Where dim = locate(text, "nnoe");
    const Diagnostic d = find(errors, "unknown dimension 'nnoe'");
    CHECK(d.line == dim.line);
    CHECK(d.column == dim.column);
    CHECK(d.key_path == "ops[0].in.x");
    CHECK(d.message.find("did you mean 'none'") != std::string::npos);
    const Diagnostic p = find(errors, "expected two integers as AxB, got '1y10'");
    CHECK(p.column == locate(text, "1y10").column);
    CHECK(p.key_path == "ops[0].in.part");
    const Diagnostic w = find(errors, "unknown field 'wieght_bytes' (did you mean 'weight_bytes'?)");
    CHECK(w.line == locate(text, "wieght_bytes").line);
    CHECK(w.column == locate(text, "wieght_bytes").column);
    CHECK(find(errors, "missing field 'weight_bytes'").key_path == "ops[1].work.weight_bytes");
  }
  SUBCASE("header lines, names and escapes") {
    const std::string text =
        "meshir 2\n"                      // 1
        "schedule \"a\\qb\"\n"            // 2: bad escape at column 13
        "grid 20 ten\n"                   // 3: column 9
        "colours 24\n"                    // 4
        "colours 25\n"                    // 5: duplicate
        "requests 1 2\n"                  // 6: extra value at column 12
        "layers 2 scal 1\n"               // 7: column 10
        "regoin 0 0 0 10 10\n"            // 8: unknown line
        "op 0 \"unterminated kernel=x\n"  // 9: open quote at column 6
        "op 1 bare kernel=lookup\n";      // 10: unquoted name at column 6, missing fields at column 24
    const auto errors = parse_errors(text);
    const Diagnostic escape = find(errors, "unknown escape '\\q'");
    CHECK(escape.line == 2);
    CHECK(escape.column == 12);
    const Diagnostic grid = find(errors, "expected an integer, got 'ten'");
    CHECK(grid.line == 3);
    CHECK(grid.column == 9);
    CHECK(grid.key_path == "grid.h");
    const Diagnostic twice = find(errors, "duplicate 'colours' line (first on line 4)");
    CHECK(twice.line == 5);
    const Diagnostic extra = find(errors, "unexpected '2'");
    CHECK(extra.line == 6);
    CHECK(extra.column == 12);
    const Diagnostic scale = find(errors, "expected 'scale', got 'scal'");
    CHECK(scale.line == 7);
    CHECK(scale.column == 10);
    const Diagnostic unknown = find(errors, "unknown line 'regoin'");
    CHECK(unknown.line == 8);
    CHECK(unknown.column == 1);
    CHECK(unknown.message.find("did you mean 'region'") != std::string::npos);
    const Diagnostic open = find(errors, "unterminated quoted string");
    CHECK(open.line == 9);
    CHECK(open.column == 6);
    const Diagnostic bare = find(errors, "expected a quoted name");
    CHECK(bare.line == 10);
    CHECK(bare.column == 6);
    // The line with the open quote reports nothing else, so its missing fields go unmentioned.
    CHECK(std::count_if(errors.begin(), errors.end(), [](const Diagnostic& d) { return d.line == 9; }) == 1);
    const Diagnostic missing_work = find(errors, "missing field 'work'");
    CHECK(missing_work.line == 10);
    CHECK(missing_work.column == 24);
    CHECK(missing_work.key_path == "ops[1].work");
    const Diagnostic no_grid_w = find(errors, "missing 'sram_per_pe_bytes' line");
    CHECK(no_grid_w.line == 0);
    // Sorted by position, missing header lines (line 0) first.
    for (std::size_t i = 1; i < errors.size(); ++i) CHECK(errors[i - 1].line <= errors[i].line);
  }
  SUBCASE("version and first line") {
    auto errors = parse_errors(replace_once(good, "meshir 2", "meshir 3"));
    REQUIRE(errors.size() == 1);
    CHECK(errors[0].line == 1);
    CHECK(errors[0].column == 8);
    CHECK(errors[0].message == "unsupported MeshIR version 3 (this tool reads version 2)");
    errors = parse_errors("# no header\n\ngrid 1 1\n");
    const Diagnostic first = find(errors, "must start with 'meshir 2'");
    CHECK(first.line == 3);
    CHECK(first.column == 1);
  }
  SUBCASE("every problem of an op line at once") {
    std::string text = replace_once(good, "\nop 3 ", "\nop 9 ");
    text = replace_once(text, "kernel=relayout", "kernel=relay");
    text = replace_once(text, "inputs=3 ", "inputs=3,x ");
    text = replace_once(text, "to_region=1", "to_region=99999999999");
    text = replace_once(text, "reduce=y group=5 rounds=1 to_region=-1 repeat=layers attn=none work=batch:4,m:4,k:64,n:64,flops:32768,weight_bytes:8192,"
                              "input_bytes:2048",
                        "reduce=z group=5 group=6 rounds=1 to_region=-1 repeat=layers attn=none colour=3 work=batch:4,m:4,k:64,n:64,"
                        "flops:32768,weight_bytes:8192,input_bytes:2048");
    const auto errors = parse_errors(text);
    INFO(formatted(errors));
    CHECK(errors.size() == 7);
    CHECK(find(errors, "op index 9 out of order").line == line_of(good, "op", 3));
    CHECK(find(errors, "unknown kernel 'relay'").line == line_of(good, "op", 4));
    CHECK(find(errors, "expected an integer, got 'x'").column == locate(text, "inputs=3,x").column + 9);
    CHECK(find(errors, "integer 99999999999 is out of range").key_path == "ops[2].to_region");
    CHECK(find(errors, "expected axis x or y, got 'z'").line == line_of(good, "op", 5));
    CHECK(find(errors, "field 'group' given twice").column == locate(text, "group=6").column);
    CHECK(find(errors, "unknown field 'colour'").key_path == "ops[5].colour");
  }
}

TEST_CASE("meshir SRAM model: hand-computed bytes per PE") {
  Schedule s = decode_schedule();
  const auto r0 = wavel::meshir::region_sram_per_pe(s, 0);
  CHECK(r0.resident_bytes == 3380);
  CHECK(r0.buffer_bytes == 22);
  CHECK(wavel::meshir::resident_bytes_per_pe(s, 0) == 3402);
  const auto r1 = wavel::meshir::region_sram_per_pe(s, 1);
  CHECK(r1.resident_bytes == 2820);
  CHECK(r1.buffer_bytes == 124);
  CHECK(wavel::meshir::resident_bytes_per_pe(s, 1) == 2944);
  CHECK(wavel::meshir::resident_bytes_per_pe_max(s) == 3402);

  // Movers and relayouts hold no weights, even when their work says otherwise.
  s.ops[2].work.weight_bytes = 1000000;
  s.ops[4].work.kv_cache_bytes = 1000000;
  CHECK(wavel::meshir::resident_bytes_per_pe(s, 0) == 3402);
  CHECK(wavel::meshir::resident_bytes_per_pe(s, 1) == 2944);

  // A region without ops needs nothing; a bad region index is a bug in the caller.
  s.regions.push_back(Rect{20, 0, 1, 1});
  CHECK(wavel::meshir::resident_bytes_per_pe(s, 2) == 0);
  CHECK_THROWS_AS(wavel::meshir::resident_bytes_per_pe(s, 4), wavel::InternalError);
  // A region inside another (an expert strip) holds that region's bytes on its PEs too, and the
  // outer region adds the most loaded cell of what lies inside it.
  s.regions.push_back(Rect{0, 0, 1, 1});
  CHECK(wavel::meshir::resident_bytes_per_pe(s, 3) == 3402);
  CHECK(wavel::meshir::resident_bytes_per_pe(s, 0) == 3402);
  s.ops[1].region = 3;  // move one weight-holding op into the inner region
  s.ops[1].used = Rect{0, 0, 1, 1};
  const auto inner = wavel::meshir::region_sram_per_pe(s, 3).resident_bytes;
  const auto outer = wavel::meshir::region_sram_per_pe(s, 0).resident_bytes;
  CHECK(inner == outer);  // the one PE of region 3 carries both regions' resident bytes
  CHECK(inner > 3380);
  CHECK_THROWS_AS(wavel::meshir::resident_bytes_per_pe(s, -1), wavel::InternalError);

  // Doubling the replication doubles the resident share: 8192 * 20 / 100 = 1638.4 -> 1639.
  Schedule t = decode_schedule();
  t.ops[1].in_layout.repl_y = 2;
  CHECK(wavel::meshir::region_sram_per_pe(t, 0).resident_bytes == 2560 + 1639);
}

TEST_CASE("meshir verify: the decode schedule is accepted") {
  const Verified v = verify_text(decode_schedule());
  INFO(formatted(v.diagnostics));
  CHECK(v.diagnostics.empty());
  wavel::meshir::VerifyOptions options;
  options.colours_needed = test_colours;
  CHECK_NOTHROW(wavel::meshir::verify_or_throw(decode_schedule(), options));

  // Ops of one step on disjoint regions run together.
  Schedule s = decode_schedule();
  s.ops[3].step = 2;
  CHECK(verify_text(s).diagnostics.empty());
  // A relayout re-maps by nature, so its input layout need not match its producer's.
  s = decode_schedule();
  s.ops[4].in_layout = features_on_x(10, 10);
  CHECK(verify_text(s).diagnostics.empty());
}

TEST_CASE("meshir verify (a): rectangles off the grid or outside their region") {
  Schedule s = decode_schedule();
  SUBCASE("a region off the grid") {
    s.regions[1].h = 11;
    const Verified v = verify_text(s);
    expect_one(v, line_of(v.text, "region", 1), "region 1 (x,y,w,h 10,0,10,11) lies outside the 21 x 10 grid");
    CHECK(v.diagnostics[0].key_path == "regions[1]");
  }
  SUBCASE("a used rectangle off the grid") {
    s.ops[5].used = Rect{15, 0, 10, 5};
    const Verified v = verify_text(s);
    expect_one(v, line_of(v.text, "op", 5),
               "op 'layer.1.up_proj': used rectangle (x,y,w,h 15,0,10,5) lies outside the 21 x 10 grid");
  }
  SUBCASE("a used rectangle outside its region") {
    s.ops[1].used = Rect{5, 0, 10, 10};
    const Verified v = verify_text(s);
    expect_one(v, line_of(v.text, "op", 1),
               "used rectangle (x,y,w,h 5,0,10,10) is not inside its region 0 (0,0,10,10)");
    CHECK(v.diagnostics[0].key_path == "ops[1].used");
  }
}

TEST_CASE("meshir verify (b): defective PEs") {
  Schedule s = decode_schedule();
  SUBCASE("inside the used rectangles of a region's ops") {
    s.defective_pes.emplace_back(3, 4);
    const Verified v = verify_text(s);
    INFO(formatted(v.diagnostics));
    REQUIRE(v.diagnostics.size() == 3);  // embed, q_proj and the transfer compute on region 0's PEs
    for (int op = 0; op < 3; ++op) {
      CHECK(v.diagnostics[static_cast<std::size_t>(op)].line == line_of(v.text, "op", op));
      CHECK(v.diagnostics[static_cast<std::size_t>(op)].message.find(
                "used rectangle (x,y,w,h 0,0,10,10) contains the defective PE (3,4)") != std::string::npos);
      CHECK(v.diagnostics[static_cast<std::size_t>(op)].key_path == "ops[" + std::to_string(op) + "].used");
    }
  }
  SUBCASE("in a region, outside every used rectangle: accepted, and routes may cross it") {
    // Region 1 widens to the grid's last column and its ops move one column right, leaving its first
    // column idle: the defect there, at (10,5), is on row 5, which carries the transfer from region 0.
    s.regions[1] = Rect{10, 0, 11, 10};
    s.defective_pes = {{10, 5}};
    for (std::size_t i = 3; i < s.ops.size(); ++i) s.ops[i].used.x = 11;
    const Verified v = verify_text(s);
    INFO(formatted(v.diagnostics));
    CHECK(v.diagnostics.empty());
    // The transfer lands on the used part of region 1, not on the region's centre.
    CHECK(wavel::meshir::used_part(s, 1) == Rect{11, 0, 10, 10});
    CHECK(wavel::meshir::used_part(s, 0) == Rect{0, 0, 10, 10});
    // A used rectangle that covers a defective PE of its region is refused.
    s.ops[5].used = Rect{10, 5, 10, 5};
    const Verified bad = verify_text(s);
    expect_one(bad, line_of(bad.text, "op", 5),
               "op 'layer.1.up_proj': used rectangle (x,y,w,h 10,5,10,5) contains the defective PE (10,5)");
  }
  SUBCASE("inside a used rectangle that strays from its region") {
    s.ops[5].used = Rect{11, 5, 10, 5};
    const Verified v = verify_text(s);
    INFO(formatted(v.diagnostics));
    REQUIRE(v.diagnostics.size() == 2);
    CHECK(find(v.diagnostics, "contains the defective PE (20,5)").line == line_of(v.text, "op", 5));
    CHECK(find(v.diagnostics, "is not inside its region 1").line == line_of(v.text, "op", 5));
  }
}

TEST_CASE("meshir verify (c): overlapping regions in one step") {
  Schedule s = decode_schedule();
  s.regions[1] = Rect{5, 0, 10, 10};
  for (std::size_t i = 3; i < 6; ++i) s.ops[i].used.x = 5;
  CHECK(verify_text(s).diagnostics.empty());  // overlapping regions in different steps are fine
  s.ops[3].step = 2;
  const Verified v = verify_text(s);
  expect_one(v, line_of(v.text, "op", 3),
             "op 'layer.1.attn' (step 2) in region 1 overlaps region 0 of op 'xfer.0-1' running in the same step");
}

TEST_CASE("meshir verify (d): SRAM per PE exceeded") {
  Schedule s = decode_schedule();
  s.sram_per_pe_bytes = 3000;
  const Verified v = verify_text(s);
  expect_one(v, line_of(v.text, "region", 0),
             "needs 3402 bytes of SRAM per PE in region 0 (3380 of weights and KV cache, 22 of activation buffers), "
             "more than the 3000 available");
  s.sram_per_pe_bytes = 3402;  // exactly full fits
  CHECK(verify_text(s).diagnostics.empty());
}

TEST_CASE("meshir verify (e): region crossings and layout alignment") {
  Schedule s = decode_schedule();
  SUBCASE("reading another region directly") {
    s.ops[3].inputs = {1};
    const Verified v = verify_text(s);
    expect_one(v, line_of(v.text, "op", 3),
               "runs in region 1 but reads op 'layer.0.q_proj' of region 0 directly; data crosses regions only "
               "through a transfer, moe_dispatch or moe_combine op");
  }
  SUBCASE("a transfer delivering elsewhere") {
    s.ops[2].to_region = 0;
    const Verified v = verify_text(s);
    expect_one(v, line_of(v.text, "op", 3), "reads transfer op 'xfer.0-1', which delivers to region 0");
  }
  SUBCASE("a layout mismatch without relayout") {
    s.ops[1].in_layout = features_on_x(10, 10);
    const Verified v = verify_text(s);
    expect_one(v, line_of(v.text, "op", 1),
               "op 'layer.0.q_proj': expects its input in layout x:features,y:none,part:10x1 but op 'embed' produces "
               "x:none,y:features,part:1x10, with no relayout between them");
    CHECK(v.diagnostics[0].key_path == "ops[1].in");
  }
  SUBCASE("the layout after a transfer must match too") {
    s.ops[2].out_layout = features_on_y(10);
    const Verified v = verify_text(s);
    expect_one(v, line_of(v.text, "op", 3), "but op 'xfer.0-1' produces x:none,y:features,part:1x10");
  }
}

TEST_CASE("meshir verify (f): routing colours") {
  Schedule s = decode_schedule();
  s.colours = 2;
  const Verified v = verify_text(s);
  INFO(formatted(v.diagnostics));
  REQUIRE(v.diagnostics.size() == 3);
  CHECK(v.diagnostics[0].line == line_of(v.text, "op", 1));
  CHECK(v.diagnostics[1].line == line_of(v.text, "op", 3));
  CHECK(v.diagnostics[2].line == line_of(v.text, "op", 5));
  CHECK(v.diagnostics[0].message ==
        "op 'layer.0.q_proj': meshgemv needs 3 routing colours per PE, more than the 2 available");
  // Without a colour function the budget is not checked.
  CHECK(wavel::meshir::verify(s, "s.meshir", {}, nullptr).empty());
}

TEST_CASE("meshir verify (g): structural faults") {
  Schedule s = decode_schedule();
  const int op_index = [&] {
    int i = 0;
    SUBCASE("an input that is not earlier") {
      s.ops[2].inputs = {3};
      i = 2;
    }
    SUBCASE("decreasing steps") {
      s.ops[4].step = 2;
      i = 4;
    }
    SUBCASE("a region that does not exist") {
      s.ops[1].region = 7;
      i = 1;
    }
    SUBCASE("to_region on a kernel that stays") {
      s.ops[3].to_region = 0;
      i = 3;
    }
    SUBCASE("a mover without a destination") {
      s.ops[2].to_region = -1;
      i = 2;
    }
    SUBCASE("a negative group") {
      s.ops[5].group = -1;
      i = 5;
    }
    SUBCASE("a zero replication factor") {
      s.ops[0].out_layout.repl_y = 0;
      i = 0;
    }
    SUBCASE("a layout wider than the used rectangle") {
      s.ops[5].in_layout.repl_y = 10;
      i = 5;
    }
    SUBCASE("a repeated name") {
      s.ops[4].name = "layer.1.attn";
      i = 4;
    }
    SUBCASE("negative work") {
      s.ops[3].work.flops = -1;
      i = 3;
    }
    return i;
  }();
  const Verified v = verify_text(s);
  INFO(formatted(v.diagnostics));
  REQUIRE(v.diagnostics.size() == 1);
  CHECK(v.diagnostics[0].line == line_of(v.text, "op", op_index));
  CHECK(v.diagnostics[0].key_path.rfind("ops[" + std::to_string(op_index) + "]", 0) == 0);
}

TEST_CASE("meshir verify (g): messages of structural faults") {
  Schedule s = decode_schedule();
  s.ops[2].inputs = {3};
  s.ops[5].in_layout.repl_y = 10;
  s.ops[1].region = 7;
  s.grid_w_pes = 0;
  s.microbatches = 5;
  const Verified v = verify_text(s);
  INFO(formatted(v.diagnostics));
  CHECK(find(v.diagnostics, "input 3 is not an earlier op (inputs must name ops 0 to 1)").line ==
        line_of(v.text, "op", 2));
  CHECK(find(v.diagnostics, "in layout spreads over part_y * repl_y = 1 * 10 PEs along Y, more than the 5 used")
            .key_path == "ops[5].in.part");
  CHECK(find(v.diagnostics, "region 7 does not exist (the schedule has 2 regions)").line ==
        line_of(v.text, "op", 1));
  CHECK(find(v.diagnostics, "grid is 0 x 10 PEs").line == 3);
  CHECK(find(v.diagnostics, "5 microbatches for 4 requests: a microbatch would be empty").line == 7);
}

TEST_CASE("meshir verify: verify_or_throw and unknown lines") {
  Schedule s = decode_schedule();
  s.colours = 2;
  s.sram_per_pe_bytes = 3000;
  wavel::meshir::VerifyOptions options;
  options.file_label = "mem";
  options.colours_needed = test_colours;
  try {
    wavel::meshir::verify_or_throw(s, options);
    FAIL("verify_or_throw accepted a bad schedule");
  } catch (const wavel::DataError& e) {
    CHECK(e.diagnostics().size() == 4);
    for (const auto& d : e.diagnostics()) CHECK(d.line == 0);
    CHECK(std::string(e.what()).find("mem: error: regions[0]: needs 3402 bytes") != std::string::npos);
  }
  // Op lines alone, as from the short overload.
  const auto diagnostics = wavel::meshir::verify(s, "x", {10, 11, 12, 13, 14, 15}, test_colours);
  CHECK(find(diagnostics, "meshgemv needs 3").line == 11);
}

TEST_CASE("meshir text: every truncation either parses or throws DataError") {
  const std::string text = wavel::meshir::print(decode_schedule());
  int parsed = 0;
  for (std::size_t n = 0; n <= text.size(); ++n) {
    try {
      (void)wavel::meshir::parse(text.substr(0, n), "cut.meshir");
      ++parsed;
    } catch (const wavel::DataError& e) {
      CHECK_FALSE(e.diagnostics().empty());
    }
  }
  CHECK(parsed >= 2);  // the whole text, with and without its final newline
}

TEST_CASE("meshir verify: extreme numbers are reported, not overflowed") {
  constexpr std::int64_t huge = std::numeric_limits<std::int64_t>::max();
  Schedule s = decode_schedule();
  s.regions[1] = Rect{10, 0, huge, 10};
  s.ops[5].used = Rect{huge, 0, huge, 5};
  s.ops[3].work.weight_bytes = huge;
  s.ops[3].in_layout.repl_y = 1;
  const Verified v = verify_text(s);
  INFO(formatted(v.diagnostics));
  CHECK(find(v.diagnostics, "region 1 (x,y,w,h 10,0," + std::to_string(huge) + ",10) lies outside").line ==
        line_of(v.text, "region", 1));
  CHECK(find(v.diagnostics, "used rectangle (x,y,w,h " + std::to_string(huge) + ",0,").line ==
        line_of(v.text, "op", 5));
  CHECK(find(v.diagnostics, " bytes of SRAM per PE in region 1 (").line ==
        line_of(v.text, "region", 1));
}

TEST_CASE("meshir verify (g): figures past their documented maxima are refused (issue 15)") {
  Schedule s = decode_schedule();
  s.ops[0].rounds = 1000000000;  // once a billion-round loop and a bad_alloc in the simulator
  expect_one(verify_text(s), line_of(verify_text(s).text, "op", 0), "rounds");
  s = decode_schedule();
  s.ops[0].work.flops = std::int64_t{1} << 62;
  expect_one(verify_text(s), line_of(verify_text(s).text, "op", 0), "maximum is 2^60");
  s = decode_schedule();
  s.layer_scale = std::int64_t{1} << 40;
  CHECK(formatted(verify_text(s).diagnostics).find("layer scale") != std::string::npos);
  s = decode_schedule();
  s.concurrent_requests = std::int64_t{1} << 40;
  CHECK(formatted(verify_text(s).diagnostics).find("requests is") != std::string::npos);
}
