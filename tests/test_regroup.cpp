// Group scales change only the K-tree groups of a placement (meshir::regroup), which lets the search
// place a block once for every scale and cost each by regrouping. Checked on every TUNE the search
// makes for dense and MoE blocks in both phases, against the placement under that TUNE itself.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "cost_fixtures.hpp"
#include "wavel/meshir/placer.hpp"
#include "wavel/meshir/text.hpp"
#include "wavel/search/detail/evaluator.hpp"
#include "wavel/workload/model.hpp"

using namespace wavel;
using wavel::test::one_region;

namespace {

meshir::Schedule placed(const workload::Layer& block, bool decode, std::int64_t w, std::int64_t h,
                        const meshir::Tune& tune) {
  meshir::Schedule s = one_region(w, h);
  s.sram_per_pe_bytes = std::int64_t{1} << 30;  // the layout is tested, not the fit
  meshir::Placer placer(s, decode, workload::MoeRouting{1.25});
  placer.place(block, 0, s.regions.front(), 0, tune);
  return s;
}

}  // namespace

TEST_CASE("a placement regrouped to other group scales equals the placement under them") {
  for (const std::string preset : {"llama3-8b", "deepseek-v2-lite"}) {
    for (const auto phase : {workload::Phase::decode, workload::Phase::prefill}) {
      auto model = *workload::find_model_preset(preset);
      model.num_layers = 1;
      const auto w = workload::build_workload(model, {phase, 4, 256, 64});
      const bool decode = phase == workload::Phase::decode;
      const auto tunes = search::detail::tune_choices(decode, {1.0, 0.5, 2.0},
                                                      model.moe ? model.moe->num_experts : 0, {1, 2},
                                                      search::TuneKinds{true, true, true, {1, 4}});
      std::int64_t compared = 0, groups_differ = 0;
      for (const auto& layer : w.layers) {
        const workload::Layer fused = workload::fuse_shared_inputs(layer, phase);
        for (const auto& tune : tunes) {
          CAPTURE(preset);
          CAPTURE(decode);
          CAPTURE(layer.name);
          const workload::Layer& block = tune.fuse ? fused : layer;
          meshir::Tune plain = tune;
          plain.group_scale_x = plain.group_scale_y = 1.0;
          // 60 x 44: the two axes' groups differ, so a swapped axis shows.
          const meshir::Schedule direct = placed(block, decode, 60, 44, tune);
          meshir::Schedule regrouped = placed(block, decode, 60, 44, plain);
          const std::string before = meshir::print(regrouped);
          meshir::regroup(regrouped, tune);
          CHECK(meshir::print(regrouped) == meshir::print(direct));
          groups_differ += before != meshir::print(direct) ? 1 : 0;
          ++compared;
        }
      }
      CHECK(compared > 20);
      CHECK(groups_differ > 0);  // the scales do change the groups: regroup is not a no-op here
    }
  }
}

TEST_CASE("only collectives have a K-tree group, along their reduce axis") {
  meshir::PlacedOp op;
  op.used = meshir::Rect{0, 0, 64, 16};
  meshir::Tune t;
  t.group_scale_x = 0.5;
  t.group_scale_y = 2.0;
  op.kernel = meshir::Kernel::meshgemv;
  op.reduce_axis = meshir::Axis::x;
  CHECK(meshir::tree_group_for(op, t) == 4);  // round(0.5 sqrt 64)
  op.reduce_axis = meshir::Axis::y;
  CHECK(meshir::tree_group_for(op, t) == 8);  // round(2 sqrt 16)
  op.kernel = meshir::Kernel::allreduce;
  CHECK(meshir::tree_group_for(op, t) == 8);
  op.kernel = meshir::Kernel::elementwise;
  CHECK(meshir::tree_group_for(op, t) == 0);
}
