// Tests of the MeshIR verifier, each of its checks, and the SRAM model.
#include <doctest/doctest.h>

#include <set>

#include "meshir_fixtures.hpp"

using namespace meshir_fixtures;  // NOLINT: the fixtures are this file's vocabulary

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
    // Issue 24 (items 6 and 7): what the attention costs cannot hold or that means nothing.
    SUBCASE("negative heads") {
      s.ops[3].work.heads = -4;
      i = 3;
    }
    SUBCASE("heads past 2^20") {
      s.ops[3].work.heads = 1000000000000000000;
      i = 3;
    }
    SUBCASE("token rows past 2^60") {
      s.ops[1].work.batch = std::int64_t{1} << 60;
      s.ops[1].work.m = 16;
      i = 1;
    }
    SUBCASE("an attention role on a relayout") {
      s.ops[4].attention = wavel::meshir::AttentionRole::scores;
      i = 4;
    }
    SUBCASE("softmax on a GEMV") {
      s.ops[3].attention = wavel::meshir::AttentionRole::softmax;
      s.ops[3].work.heads = 2;
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

TEST_CASE("meshir verify (g): a layer subset holds a whole number of layers") {
  Schedule s = decode_schedule();
  s.layers_total = 4;
  s.layer_scale = 8;
  Verified v = verify_text(s);
  INFO(formatted(v.diagnostics));
  REQUIRE(v.diagnostics.size() == 1);
  CHECK(v.diagnostics[0].message.find("layer scale 8 for a model of 4 layers") != std::string::npos);
  s.layers_total = 6;
  s.layer_scale = 4;
  CHECK(verify_text(s).diagnostics.size() == 1);
  s.layers_total = 8;
  CHECK(verify_text(s).diagnostics.empty());
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


TEST_CASE("meshir verify: a vector instruction mix only on local work, each count bounded") {
  using wavel::meshir::Kernel;
  using wavel::wafer::VectorForm;
  Schedule s = decode_schedule();
  const std::size_t local = s.ops.size() - 1, product = 1;
  s.ops[local].kernel = Kernel::elementwise;
  REQUIRE(s.ops[product].kernel == Kernel::meshgemv);
  INFO(formatted(verify_text(s).diagnostics));
  CHECK(verify_text(s).diagnostics.empty());
  s.ops[local].work.vector[static_cast<std::size_t>(VectorForm::fp16_sum)] = 2;
  CHECK(verify_text(s).diagnostics.empty());
  s.ops[product].work.vector[static_cast<std::size_t>(VectorForm::fp16_vv)] = 1;
  const Verified v = verify_text(s);
  REQUIRE(v.diagnostics.size() == 1);
  CHECK(v.diagnostics[0].key_path.find("work.vec_fp16_vv") != std::string::npos);
  s.ops[product].work.vector = {};
  s.ops[local].work.vector[static_cast<std::size_t>(VectorForm::fp16_sum)] = 5000;
  CHECK(formatted(verify_text(s).diagnostics).find("vec_fp16_sum is 5000") != std::string::npos);
}

TEST_CASE("meshir verify: data fits the SRAM a PE has after its reserve; the reserve round-trips") {
  Schedule s = decode_schedule();  // region 0 needs 3,402 bytes per PE
  s.sram_per_pe_bytes = 4000;
  CHECK(verify_text(s).diagnostics.empty());
  s.sram_reserved_per_pe_bytes = 598;  // 3,402 left: still fits
  CHECK(verify_text(s).diagnostics.empty());
  const std::string text = wavel::meshir::print(s);
  CHECK(text.find("\nsram_reserved_per_pe_bytes 598\n") != std::string::npos);
  CHECK(wavel::meshir::parse(text, "s.meshir").sram_reserved_per_pe_bytes == 598);
  CHECK(wavel::meshir::print(decode_schedule()).find("sram_reserved") == std::string::npos);  // absent when 0
  s.sram_reserved_per_pe_bytes = 599;
  const std::string errors = formatted(verify_text(s).diagnostics);
  CHECK(errors.find("needs 3402 bytes of SRAM per PE in region 0") != std::string::npos);
  CHECK(errors.find("3401 available for data (4000 less 599 reserved)") != std::string::npos);
  s.sram_reserved_per_pe_bytes = 4000;
  CHECK(formatted(verify_text(s).diagnostics).find("must be at least 0 and below sram_per_pe_bytes") != std::string::npos);
}

TEST_CASE("meshir verify: products only on a MeshGEMM") {
  Schedule s = decode_schedule();
  s.ops[1].work.products = 2;  // a meshgemv
  CHECK(formatted(verify_text(s).diagnostics).find("only a meshgemm runs products one after another") != std::string::npos);
  s.ops[1].work.products = 0;
  CHECK(formatted(verify_text(s).diagnostics).find("products is 0") != std::string::npos);
}

TEST_CASE("meshir kernel table: one row per kernel, in enum order, names round-trip") {
  using namespace wavel::meshir;
  const auto& table = kernel_table();
  REQUIRE(table.size() == static_cast<std::size_t>(Kernel::allgather) + 1);
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < table.size(); ++i) {
    const KernelInfo& k = table[i];
    CHECK(static_cast<std::size_t>(k.kernel) == i);
    CHECK(names.insert(k.name).second);
    CHECK(parse_kernel(k.name) == k.kernel);
    CHECK(to_string(k.kernel) == k.name);
    CHECK(&kernel_info(k.kernel) == &k);
    if (k.moves_between_regions) CHECK_FALSE(k.holds_weights);  // a mover keeps nothing resident
    CHECK(k.route_colours >= 0);
  }
  CHECK_FALSE(parse_kernel("meshgemm ").has_value());
  // The verifier's messages name the kernels the table allows.
  Schedule s = decode_schedule();
  s.ops[0].work.products = 2;
  CHECK(formatted(verify(s, VerifyOptions{"t", {}, {}})).find("only a meshgemm runs products") != std::string::npos);
}
