// Tests of MeshIR text: enum names, the round trip both ways, and parse errors with exact positions.
#include <doctest/doctest.h>

#include "meshir_fixtures.hpp"

using namespace meshir_fixtures;  // NOLINT: the fixtures are this file's vocabulary

TEST_CASE("meshir: enum names round-trip") {
  for (int k = 0; k < static_cast<int>(wavel::meshir::kernel_table().size()); ++k) {
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
  for (int k = 0; k < static_cast<int>(wavel::meshir::kernel_table().size()); ++k) {
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


TEST_CASE("meshir text: what a run costed a schedule with round-trips; malformed lines are located (issue 40)") {
  Schedule s = decode_schedule();
  s.costed_on = "wse2";
  s.costed_params = {{"alpha_cycles_per_hop", 1.25}, {"sim_timing.task_launch_cycles", 70.85}, {"gemm_k_cycles", 0.1 + 0.2}};
  const std::string text = wavel::meshir::print(s);
  CHECK(text.find("\ncosted_on wse2\nparam alpha_cycles_per_hop 1.25\n"
                  "param sim_timing.task_launch_cycles 70.85\nparam gemm_k_cycles 0.30000000000000004\n") != std::string::npos);
  const auto back = wavel::meshir::parse_with_lines(text, "x.meshir");
  CHECK(back.schedule.costed_on == "wse2");
  REQUIRE(back.schedule.costed_params.size() == 3);
  CHECK(back.schedule.costed_params[2].value == 0.1 + 0.2);  // exactly: the shortest round-trip digits
  CHECK(back.lines.costed_params[1] == locate(text, "param sim_timing").line);
  CHECK(wavel::meshir::print(back.schedule) == text);
  CHECK(wavel::meshir::print(decode_schedule()).find("costed_on") == std::string::npos);  // absent unless recorded

  const std::string good = wavel::meshir::print(decode_schedule());
  const auto first_error = [](const std::string& t) { return parse_errors(t).at(0).format(); };
  CHECK(first_error(good + "param alpha_cycles_per_hop 1e999\n").find("expected a finite number, got '1e999'") !=
        std::string::npos);
  CHECK(first_error(good + "param alpha_cycles_per_hop 1.5x\n").find("param[0].alpha_cycles_per_hop") != std::string::npos);
  CHECK(first_error(good + "param a 1\nparam a 2\n").find("duplicate parameter 'a' (first on line") != std::string::npos);
  CHECK(first_error(good + "param Alpha 1\n").find("expected a parameter name, got 'Alpha'") != std::string::npos);
  CHECK(first_error(good + "param a\n").find("param NAME VALUE") != std::string::npos);
  CHECK(first_error(good + "costed_on wse3\ncosted_on wse2\n").find("duplicate 'costed_on' line") != std::string::npos);
  std::string many = good;
  for (int i = 0; i < 300; ++i) many += "param p" + std::to_string(i) + " 1\n";
  CHECK(first_error(many).find("more than 256 'param' lines") != std::string::npos);
}

TEST_CASE("meshir text: a vector instruction mix round-trips; bad counts are located") {
  Schedule s = decode_schedule();
  const int elementwise = 1;  // the text form does not look at the kernel; the verifier does
  auto& mix = s.ops[static_cast<std::size_t>(elementwise)].work.vector;
  mix[static_cast<std::size_t>(wavel::wafer::VectorForm::fp16_vs)] = 3;
  mix[static_cast<std::size_t>(wavel::wafer::VectorForm::fp16_max)] = 1;
  const std::string text = wavel::meshir::print(s);
  CHECK(text.find(",vec_fp16_vs:3,vec_fp16_max:1") != std::string::npos);
  const auto back = wavel::meshir::parse_with_lines(text, "x.meshir");
  CHECK(back.schedule.ops[static_cast<std::size_t>(elementwise)].work.vector == mix);
  CHECK(wavel::meshir::print(back.schedule) == text);
  std::string bad = text;
  bad.replace(bad.find("vec_fp16_max:1"), 14, "vec_fp16_max:-2");
  CHECK(parse_errors(bad).at(0).format().find("vec_fp16_max") != std::string::npos);
  std::string typo = text;
  typo.replace(typo.find("vec_fp16_max:1"), 14, "vec_fp16_mux:1");
  CHECK(parse_errors(typo).at(0).format().find("did you mean 'vec_fp16_max'") != std::string::npos);
}

TEST_CASE("meshir text: a grouped GEMM's products round-trip; the verifier keeps them to MeshGEMMs") {
  Schedule s = decode_schedule();
  s.ops[1].work.products = 4;
  const std::string text = wavel::meshir::print(s);
  CHECK(text.find(",products:4") != std::string::npos);
  CHECK(wavel::meshir::parse(text, "x.meshir").ops[1].work.products == 4);
  CHECK(wavel::meshir::print(decode_schedule()).find("products") == std::string::npos);
}
