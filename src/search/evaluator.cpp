// The block evaluator: per-block costs from cost::evaluate, memoized, and plans scored from them
// with the cost model's own transfer and pipeline rules (so a plan scores exactly as its MeshIR).
#include "wavel/search/detail/evaluator.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <tuple>

#include "wavel/common/error.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/cost/params.hpp"
#include "wavel/meshir/placer.hpp"
#include "wavel/meshir/verify.hpp"

namespace wavel::search {

namespace detail {

using meshir::Axis;
using meshir::Rect;

std::vector<meshir::Tune> tune_choices(bool decode, const std::vector<double>& scales, std::int64_t experts,
                                       const std::vector<std::int64_t>& expert_groups, TuneKinds kinds) {
  std::vector<meshir::Tune> tunes;
  if (decode) {
    for (Axis entry : {Axis::x, Axis::y}) {
      for (double sx : scales) {
        for (double sy : scales) tunes.push_back(meshir::Tune{sx, sy, entry});
      }
    }
  } else {
    for (double sx : scales) tunes.push_back(meshir::Tune{sx, 1.0, Axis::x});  // prefill reduces along X only
  }
  std::vector<meshir::Tune> out;
  for (std::int64_t g : expert_groups) {
    if (g > 1 && (experts < g || experts % g != 0)) continue;
    if (g > 1 && experts < 2) continue;
    for (auto t : tunes) {
      t.expert_groups = g;
      out.push_back(t);
    }
  }
  if (out.empty()) out = tunes;
  out = meshir::with_kinds(std::move(out), kinds.fusion, kinds.split_epilogues && decode, kinds.concurrent_branches);
  // Split heads (prefill): each choice so far again with every head-group count above 1.
  if (decode) return out;
  const std::size_t plain = out.size();
  for (const std::int64_t g : kinds.head_groups) {
    if (g < 2) continue;
    for (std::size_t i = 0; i < plain; ++i) {
      meshir::Tune t = out[i];
      t.head_groups = g;
      if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
    }
  }
  return out;
}

std::vector<std::int64_t> used_sides(std::int64_t side, const std::vector<double>& fractions) {
  std::vector<std::int64_t> sides;
  for (double f : fractions) {
    const auto s = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::ceil(f * static_cast<double>(side))), 1, side);
    if (std::find(sides.begin(), sides.end(), s) == sides.end()) sides.push_back(s);
  }
  return sides;
}

std::pair<std::int64_t, std::int64_t> sram_family_size(int family, std::int64_t k, std::int64_t w, std::int64_t h,
                                                       std::int64_t step_pes) {
  const std::int64_t free_side = std::max<std::int64_t>(1, k * step_pes);
  if (family == 0) return {w, std::min(h, free_side)};
  if (family == 1) return {std::min(w, free_side), h};
  // The region's aspect: the longer side in steps, the shorter in proportion (rounded up).
  if (w >= h) {
    const std::int64_t uw = std::min(w, free_side);
    return {uw, std::clamp<std::int64_t>((uw * h + w - 1) / w, 1, h)};
  }
  const std::int64_t uh = std::min(h, free_side);
  return {std::clamp<std::int64_t>((uh * w + h - 1) / h, 1, w), uh};
}

std::int64_t sram_family_members(int family, std::int64_t w, std::int64_t h, std::int64_t step_pes) {
  if (step_pes < 1) return 0;
  const std::int64_t side = family == 0 ? h : family == 1 ? w : std::max(w, h);
  return (side + step_pes - 1) / step_pes;
}

namespace {

std::vector<int> identity_columns(int tunes) {
  if (tunes < 1) throw InternalError("cost table with " + std::to_string(tunes) + " TUNE choices");
  std::vector<int> columns(static_cast<std::size_t>(tunes));
  for (int t = 0; t < tunes; ++t) columns[static_cast<std::size_t>(t)] = t;
  return columns;
}

}  // namespace

CostTable::CostTable(int tunes) : CostTable(identity_columns(tunes)) {}

CostTable::CostTable(std::vector<int> column_of) : column_of_(std::move(column_of)) {
  if (column_of_.empty()) throw InternalError("cost table with no TUNE choices");
  const int columns = *std::max_element(column_of_.begin(), column_of_.end()) + 1;
  std::vector<bool> used(static_cast<std::size_t>(std::max(0, columns)), false);
  for (const int c : column_of_) {
    if (c < 0) throw InternalError("cost table column " + std::to_string(c));
    used[static_cast<std::size_t>(c)] = true;
  }
  if (std::find(used.begin(), used.end(), false) != used.end()) throw InternalError("cost table with an unused column");
  columns_ = static_cast<std::size_t>(columns);
}

void CostTable::emplace(std::int64_t w, std::int64_t h, int tune, const BlockCost& cost) {
  constexpr std::int64_t kMaxSide = std::int64_t{1} << 31;
  if (w < 1 || h < 1 || w >= kMaxSide || h >= kMaxSide || tune < 0 || tune >= tunes() || std::isnan(cost.cycles)) {
    throw InternalError("cost table entry " + std::to_string(w) + "x" + std::to_string(h) + " TUNE " +
                        std::to_string(tune) + " out of range");
  }
  if ((rows_ + 1) * 8 > slots_.size() * 5) {  // above 5/8 full: double
    std::vector<Slot> old(std::max<std::size_t>(64, slots_.size() * 2));
    old.swap(slots_);
    for (const auto& s : old) {
      if (s.key == 0) continue;
      std::size_t i = slot_of(s.key);
      while (slots_[i].key != 0) i = (i + 1) & (slots_.size() - 1);
      slots_[i] = s;
    }
  }
  const std::uint64_t key = row_key(w, h);
  std::size_t i = slot_of(key);
  while (slots_[i].key != 0 && slots_[i].key != key) i = (i + 1) & (slots_.size() - 1);
  if (slots_[i].key == 0) {
    BlockCost absent;
    absent.cycles = std::numeric_limits<double>::quiet_NaN();
    slots_[i] = Slot{key, rows_++};
    costs_.resize(costs_.size() + columns_, absent);
  }
  BlockCost& c = costs_[slots_[i].row * columns_ + static_cast<std::size_t>(column_of_[static_cast<std::size_t>(tune)])];
  if (!std::isnan(c.cycles)) return;
  c = cost;
  ++size_;
}

std::shared_ptr<CostTable> BlockCostCache::table(const std::string& content, int tunes) {
  return table(content, identity_columns(tunes));
}

std::shared_ptr<CostTable> BlockCostCache::table(const std::string& content, const std::vector<int>& column_of) {
  if (const auto it = index_.find(content); it != index_.end()) {
    if (it->second->second->column_of() != column_of) throw InternalError("a shared cost table's TUNE columns differ");
    order_.splice(order_.begin(), order_, it->second);
    return it->second->second;
  }
  order_.emplace_front(content, std::make_shared<CostTable>(column_of));
  index_.emplace(content, order_.begin());
  return order_.front().second;
}

void BlockCostCache::trim() {
  std::size_t entries = 0;
  for (const auto& e : order_) entries += e.second->cost_slots();
  for (auto it = order_.end(); it != order_.begin() && entries > max_entries_;) {
    --it;
    if (it->second.use_count() > 1) continue;  // an evaluator still fills or reads it
    entries -= it->second->cost_slots();
    index_.erase(it->first);
    it = order_.erase(it);
  }
}

}  // namespace detail

using detail::BlockCost;
using meshir::Axis;
using meshir::Rect;

namespace {

bool same_but_scales(meshir::Tune a, const meshir::Tune& b) {
  a.group_scale_x = b.group_scale_x;
  a.group_scale_y = b.group_scale_y;
  return a == b;
}

}  // namespace

PlanEvaluator::Impl::Impl(const workload::Workload& w, const wafer::WaferParams& wf, const cost::CostParams& p,
                          std::int64_t mb, const std::vector<double>& group_scales,
                          const std::vector<std::int64_t>& expert_groups, TuneKinds kinds)
    : wafer(wf), params(p), decode(w.shape.phase == workload::Phase::decode), requests(w.shape.concurrent_requests),
      prompt_tokens(w.shape.input_tokens), microbatches(mb), prompt_chunks(w.shape.prompt_chunks),
      layers_total(w.model.num_layers * w.layer_scale),
      layer_scale(w.layer_scale), routing(w.moe) {
  // One micro-batch's op graph; the KV cache of every request stays resident.
  blocks = split_blocks(workload::split_requests(w, mb));
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    if (blocks[i].type >= static_cast<int>(representative.size())) representative.push_back(static_cast<int>(i));
    block_scale.push_back(blocks[i].ops.decoder ? static_cast<double>(std::max<std::int64_t>(1, layer_scale)) : 1.0);
  }
  for (const auto& b : blocks) block_type.push_back(b.type);
  // Fusion is a TUNE choice only where some block has operators to fuse.
  bool fusable = false;
  if (kinds.fusion) {
    for (const auto& b : blocks) {
      fused_blocks.push_back(workload::fuse_shared_inputs(b.ops, w.shape.phase));
      fusable = fusable || workload::has_fusion(b.ops, w.shape.phase);
    }
  }
  // Split epilogues likewise, only where some block has one.
  bool splittable = false;
  if (kinds.split_epilogues) {
    for (const auto& b : blocks) splittable = splittable || meshir::has_split_epilogue(b.ops, decode);
  }
  // Concurrent branches likewise, only where an MoE block has ops beside its routed experts.
  bool branchable = false;
  if (kinds.concurrent_branches) {
    for (const auto& b : blocks) branchable = branchable || meshir::has_concurrent_branch(b.ops);
  }
  // Split heads likewise, only the counts some block's attention takes.
  std::vector<std::int64_t> head_groups;
  for (const std::int64_t g : kinds.head_groups) {
    bool any = false;
    for (const auto& b : blocks) any = any || meshir::splits_heads(b.ops, decode, g);
    if (any) head_groups.push_back(g);
  }
  // Sibling branches likewise, only where some block (fused or not) has a merged matmul.
  for (std::size_t i = 0; i < blocks.size() && kinds.sibling_branches && !sibling_branches; ++i) {
    sibling_branches = meshir::has_sibling_branches(blocks[i].ops) ||
                       (!fused_blocks.empty() && meshir::has_sibling_branches(fused_blocks[i]));
  }
  tunes = detail::tune_choices(decode, group_scales, w.model.moe ? w.model.moe->num_experts : 0, expert_groups,
                               TuneKinds{fusable, splittable, branchable, head_groups});
  for (std::size_t k = 0; k < tunes.size(); ++k) {
    std::size_t first = 0;
    while (!same_but_scales(tunes[first], tunes[k])) ++first;
    scale_variant_of.push_back(static_cast<int>(first));
  }
  // A choice the placer ignores for a block's ops gives that block the placement of the TUNE without it.
  for (const int rep : representative) {
    const auto i = static_cast<std::size_t>(rep);
    const bool fuse_changes = !fused_blocks.empty() && workload::has_fusion(blocks[i].ops, w.shape.phase);
    const auto& ops = blocks[i].ops.ops;
    const bool cuts = std::any_of(ops.begin(), ops.end(), [](const workload::Op& op) {
      return op.kind == workload::OpKind::moe_dispatch && op.experts > 1;
    });
    std::vector<int> same(tunes.size());
    for (std::size_t k = 0; k < tunes.size(); ++k) {
      meshir::Tune c = tunes[k];
      if (c.fuse && !fuse_changes) c.fuse = false;
      if (c.split_epilogues && !meshir::has_split_epilogue(ops_of(i, c), decode)) c.split_epilogues = false;
      if (c.expert_groups > 1 && !cuts) c.expert_groups = 1;
      if (c.concurrent_branches && !meshir::has_concurrent_branch(ops_of(i, c))) c.concurrent_branches = false;
      if (c.head_groups > 1 && !meshir::splits_heads(ops_of(i, c), decode, c.head_groups)) c.head_groups = 1;
      const auto at = std::find(tunes.begin(), tunes.end(), c);
      same[k] = at == tunes.end() ? static_cast<int>(k) : static_cast<int>(at - tunes.begin());
    }
    same_placement.push_back(std::move(same));
  }
  for (const auto& same : same_placement) {
    tables.push_back(std::make_shared<detail::CostTable>(columns_of(same)));
    std::vector<int> own;
    for (std::size_t k = 0; k < same.size(); ++k) {
      if (same[k] == static_cast<int>(k)) own.push_back(static_cast<int>(k));
    }
    own_placements.push_back(std::move(own));
  }
}

std::vector<int> PlanEvaluator::Impl::columns_of(const std::vector<int>& same) {
  // One column per distinct placement, in order of first use.
  std::vector<int> column(same.size(), -1), out(same.size());
  int next = 0;
  for (std::size_t k = 0; k < same.size(); ++k) {
    int& c = column[static_cast<std::size_t>(same[k])];
    if (c < 0) c = next++;
    out[k] = c;
  }
  return out;
}

void PlanEvaluator::Impl::share_tables(detail::BlockCostCache& cache) {
  if (computed != 0) throw InternalError("share_tables after costs were computed");
  // Everything compute() reads besides the block, at full precision. Not read: the request count
  // and micro-batches (reset there), layers_total (a label) and the prompt length (it only turns
  // prefill cycles into tokens/s; the block's ops carry the lengths), so a decode MLP block is one
  // table whatever the context length.
  std::ostringstream context;
  context.precision(17);
  context << wafer.preset << ' ' << wafer.grid_w_pes << 'x' << wafer.grid_h_pes << ' ' << wafer.sram_per_pe_bytes << '-' << wafer.sram_reserved_per_pe_bytes << ' '
          << wafer.clock_hz << ' ' << wafer.link_bytes_per_cycle << ' '
          << wafer.sram_read_bytes_per_cycle << ' ' << wafer.sram_write_bytes_per_cycle << ' ' << wafer.scalar_division_cycles << ' '
          << wafer.alpha_cycles_per_hop << ' ' << wafer.beta_cycles_per_stage << ' ' << wafer.routable_colours << " d";
  for (const auto& pe : wafer.defective_pes) context << ' ' << pe.x << ',' << pe.y;
  context << " w";
  for (const auto width : wafer.simd_widths) context << ' ' << width;
  context << " p";
  for (const auto& info : cost::param_registry()) context << ' ' << params.*(info.field);
  context << (decode ? " decode " : " prefill ") << layer_scale << ' ' << routing.capacity_factor;
  if (routing.skew != 0) context << " skew " << routing.skew;  // absent at 0: caches written before it still match
  if (sibling_branches) context << " sib";  // a block may take strips: other costs than without
  context << " t";
  for (const auto& t : tunes) {
    context << ' ' << t.group_scale_x << ',' << t.group_scale_y << ',' << static_cast<int>(t.entry_features) << ','
            << t.expert_groups << (t.fuse ? ",f" : "") << (t.split_epilogues ? ",s" : "") << (t.concurrent_branches ? ",b" : "");
    if (t.head_groups > 1) context << ",h" << t.head_groups;  // absent at 1: caches written before it still match
  }
  context << " | ";
  const std::string prefix = context.str();
  for (std::size_t t = 0; t < representative.size(); ++t) {
    tables[t] = cache.table(prefix + block_fingerprint(blocks[static_cast<std::size_t>(representative[t])].ops),
                            columns_of(same_placement[t]));
  }
}

meshir::Schedule PlanEvaluator::Impl::empty() const {
  meshir::Schedule s = meshir::empty_on("wavel", wafer);
  s.concurrent_requests = requests;
  s.microbatches = microbatches;
  s.prompt_chunks = prompt_chunks;
  s.layers_total = layers_total;
  s.layer_scale = layer_scale;
  return s;
}

BlockCost PlanEvaluator::Impl::compute(int type, std::int64_t w, std::int64_t h, int tune) const {
  return compute_scales(type, w, h, {tune}).front();
}

std::vector<BlockCost> PlanEvaluator::Impl::compute_scales(int type, std::int64_t w, std::int64_t h,
                                                           const std::vector<int>& tune_ids) const {
  std::vector<meshir::Tune> ts;
  for (const int id : tune_ids) ts.push_back(tunes[static_cast<std::size_t>(id)]);
  const workload::Layer& block = ops_of(static_cast<std::size_t>(representative[static_cast<std::size_t>(type)]), ts.front());
  std::vector<BlockCost> best = narrowed_costs(block, w, h, ts);
  if (!sibling_branches || !meshir::has_sibling_branches(block)) return best;
  for (auto& t : ts) t.sibling_branches = true;
  const std::vector<BlockCost> strips = narrowed_costs(block, w, h, ts);
  // A leaf charges a route switch where a block's first GEMV on the leaf reduces along another axis
  // than the leaf's last one, at this block's scale or a smaller one (the head's) after it. Moving a
  // GEMV onto strips can change the block's first or last such axis: one switch more at most at
  // either end, so the strips must win by that much to make every leaf holding the block faster.
  const double scale = block_scale[static_cast<std::size_t>(representative[static_cast<std::size_t>(type)])];
  for (std::size_t i = 0; i < best.size(); ++i) {
    const int ends_changed = (strips[i].first_axis != best[i].first_axis ? 1 : 0) + (strips[i].last_axis != best[i].last_axis ? 1 : 0);
    const double worst = strips[i].cycles + params.route_switch_cycles * scale * ends_changed;
    if (worst < best[i].cycles && strips[i].resident <= best[i].resident && strips[i].buffers <= best[i].buffers) {
      best[i] = strips[i];
      best[i].sibling_branches = true;
    }
  }
  return best;
}

std::vector<BlockCost> PlanEvaluator::Impl::narrowed_costs(const workload::Layer& block, std::int64_t w, std::int64_t h,
                                                           const std::vector<meshir::Tune>& ts) const {
  const meshir::Tune& t = ts.front();
  if (!t.concurrent_branches || !meshir::has_concurrent_branch(block)) return placed_costs(block, w, h, ts);
  // The branch's strip: the fastest width that holds the block alone (else the least resident),
  // ties to the wider. The step time is the slower of the branch and the routed strips, one
  // shrinking and the other growing as the strip narrows, so the first width that is no faster ends
  // a TUNE's walk.
  const auto need = [](const BlockCost& c) { return c.resident + c.buffers; };
  const std::int64_t sram = wafer.sram_data_per_pe_bytes();
  std::vector<BlockCost> best(ts.size());
  std::vector<std::size_t> walking(ts.size());  // the TUNEs whose walk goes on
  for (std::size_t i = 0; i < ts.size(); ++i) walking[i] = i;
  bool first = true;
  for (const std::int64_t n : meshir::kBranchNarrowings) {
    std::vector<meshir::Tune> narrowed;
    for (const std::size_t i : walking) {
      narrowed.push_back(ts[i]);
      narrowed.back().branch_narrowing = n;
    }
    const std::vector<BlockCost> costs = placed_costs(block, w, h, narrowed);
    std::vector<std::size_t> next;
    for (std::size_t j = 0; j < walking.size(); ++j) {
      BlockCost c = costs[j];
      c.branch_narrowing = static_cast<int>(n);
      BlockCost& b = best[walking[j]];
      const bool fits = need(c) <= sram, best_fits = need(b) <= sram;
      if (!first && fits && best_fits && c.cycles >= b.cycles) continue;
      if (first || (fits && (!best_fits || c.cycles < b.cycles)) || (!fits && !best_fits && need(c) < need(b))) b = c;
      next.push_back(walking[j]);
    }
    walking = std::move(next);
    first = false;
    if (walking.empty()) break;
  }
  return best;
}

std::vector<BlockCost> PlanEvaluator::Impl::placed_costs(const workload::Layer& block, std::int64_t w, std::int64_t h,
                                                         const std::vector<meshir::Tune>& ts) const {
  meshir::Schedule s = empty();
  const Rect rect{0, 0, w, h};
  s.regions = {rect};
  const meshir::Tune& t = ts.front();
  // Every op, a re-layout per input at most, and an expert CUT's copies: no regrowth while placing.
  s.ops.reserve(block.ops.size() * static_cast<std::size_t>(2 + std::max<std::int64_t>(1, t.expert_groups)));
  meshir::Placer placer(s, decode, routing, /*named=*/false);
  placer.place(block, 0, rect, 0, t);
  s.microbatches = 1;  // the block's own time, not a pipeline round
  s.concurrent_requests = 1;
  // Residency and the first and last allreduce axes do not depend on the group scales.
  const auto sram = meshir::region_sram_per_pe(s, 0);
  BlockCost b;
  b.resident = sram.resident_bytes;
  b.buffers = sram.buffer_bytes;
  for (const auto& op : s.ops) {
    if (op.kernel != meshir::Kernel::meshgemv || op.region != 0) continue;  // route switches are per region
    const int axis = op.reduce_axis == Axis::x ? 0 : 1;
    if (b.first_axis < 0) b.first_axis = axis;
    b.last_axis = axis;
  }
  std::vector<BlockCost> out;
  out.reserve(ts.size());
  for (std::size_t i = 0; i < ts.size(); ++i) {
    if (i > 0) meshir::regroup(s, ts[i]);
    b.cycles = cost::pass_cycles(s, wafer, params);  // scales a decoder block's steps
    out.push_back(b);
  }
  return out;
}

void PlanEvaluator::Impl::ensure(std::vector<detail::TableKey> wanted) {
  // A TUNE that places the block as another shares that TUNE's column: costing it costs both.
  std::vector<detail::TableKey> missing;
  for (const auto& [type, w, h, tune] : wanted) {
    if (has(type, w, h, tune)) continue;
    missing.emplace_back(type, w, h, same_placement[static_cast<std::size_t>(type)][static_cast<std::size_t>(tune)]);
  }
  std::sort(missing.begin(), missing.end());
  missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
  compute_missing(missing);
}

void PlanEvaluator::Impl::compute_missing(const std::vector<detail::TableKey>& missing) {
  if (missing.empty()) return;
  // Entries of one block and size whose TUNEs differ only in group scales share a placement: one
  // task each, its entries in `missing` order.
  std::map<std::tuple<int, std::int64_t, std::int64_t, int>, std::size_t> task_of;
  std::vector<std::vector<std::size_t>> tasks;
  for (std::size_t i = 0; i < missing.size(); ++i) {
    const auto& [type, w, h, tune] = missing[i];
    const auto [it, added] =
        task_of.emplace(std::make_tuple(type, w, h, scale_variant_of[static_cast<std::size_t>(tune)]), tasks.size());
    if (added) tasks.emplace_back();
    tasks[it->second].push_back(i);
  }
  std::vector<BlockCost> out(missing.size());
  // Each task places and costs a whole block: worth a thread from two tasks on.
  detail::on_host_space(serial, tasks.size(), 2, [&](auto space) {
    Kokkos::parallel_for(
        "wavel::search::block_costs",
        Kokkos::RangePolicy<decltype(space)>(space, 0, static_cast<int>(tasks.size())), [&](const int k) {
          const std::vector<std::size_t>& task = tasks[static_cast<std::size_t>(k)];
          const auto& [type, w, h, tune] = missing[task.front()];
          std::vector<int> ids;
          for (const std::size_t i : task) ids.push_back(std::get<3>(missing[i]));
          const std::vector<BlockCost> costs = compute_scales(type, w, h, ids);
          for (std::size_t j = 0; j < task.size(); ++j) out[task[j]] = costs[j];
        });
  });
  for (std::size_t i = 0; i < missing.size(); ++i) {
    const auto& [type, w, h, tune] = missing[i];
    tables[static_cast<std::size_t>(type)]->emplace(w, h, tune, out[i]);
  }
  computed += static_cast<std::int64_t>(missing.size());
}

bool PlanEvaluator::Impl::has(int type, std::int64_t w, std::int64_t h, int tune) const {
  return tables[static_cast<std::size_t>(type)]->find(w, h, tune) != nullptr;
}

const BlockCost& PlanEvaluator::Impl::get(int type, std::int64_t w, std::int64_t h, int tune) const {
  const BlockCost* c = tables[static_cast<std::size_t>(type)]->find(w, h, tune);
  if (c == nullptr) throw InternalError("block cost used before it was computed");
  return *c;
}

// The block costs plus a route switch wherever a GEMV reduces along a different axis than the
// region's previous GEMV (charged in that block's steps, so scaled as they are).
void PlanEvaluator::Impl::add_block(LeafSum& sum, int i, const BlockCost& c) const {
  sum.cycles += c.cycles;
  if (sum.last_axis >= 0 && c.first_axis >= 0 && c.first_axis != sum.last_axis) {
    sum.cycles += params.route_switch_cycles * block_scale[static_cast<std::size_t>(i)];
  }
  if (c.last_axis >= 0) sum.last_axis = c.last_axis;
  sum.resident += c.resident;
  sum.buffers = std::max(sum.buffers, c.buffers);
}

bool PlanEvaluator::Impl::fits(const LeafSum& sum) const {
  return sum.resident + sum.buffers <= wafer.sram_data_per_pe_bytes();
}

PlanEvaluator::Impl::LeafCost PlanEvaluator::Impl::leaf_of(int a, int b, const BlockCost* const* by_type) const {
  LeafSum sum;
  for (int i = a; i < b; ++i) add_block(sum, i, *by_type[block_type[static_cast<std::size_t>(i)]]);
  return LeafCost{sum.cycles, fits(sum)};
}

PlanEvaluator::Impl::LeafCost PlanEvaluator::Impl::leaf(int a, int b, std::int64_t w, std::int64_t h, int tune) const {
  // On the stack for the usual few types: squares call this per TUNE, so no allocation per call.
  constexpr std::size_t kStackTypes = 16;
  const BlockCost* on_stack[kStackTypes] = {};
  std::vector<const BlockCost*> on_heap(representative.size() > kStackTypes ? representative.size() : 0, nullptr);
  const BlockCost** by_type = on_heap.empty() ? on_stack : on_heap.data();
  for (int i = a; i < b; ++i) {
    const int type = block_type[static_cast<std::size_t>(i)];
    if (by_type[type] == nullptr) by_type[type] = &get(type, w, h, tune);
  }
  return leaf_of(a, b, by_type);
}

double PlanEvaluator::Impl::transfer(const Rect& from_used, const Rect& to_used, int after_block) const {
  // The transfer is placed with the receiving block, so it repeats as that block does.
  const double scale = block_scale[static_cast<std::size_t>(after_block) + 1];
  return scale * cost::transfer_cost(from_used, to_used,
                                     static_cast<double>(blocks[static_cast<std::size_t>(after_block)].output_bytes),
                                     wafer, params)
                     .total_cycles;
}

Objectives PlanEvaluator::Impl::objectives(double pass, double bottleneck, std::int64_t pes) const {
  if (pipeline_part) return stage_objectives(pass, bottleneck, pes, wafer.clock_hz);
  const cost::Composition c =
      cost::pipeline(pass, bottleneck, microbatches, prompt_chunks, requests, wafer.clock_hz, decode, prompt_tokens);
  return Objectives{c.tokens_per_s, c.latency_s, pes, 0};
}

meshir::Schedule PlanEvaluator::Impl::build(const std::vector<Leaf>& leaves) const {
  meshir::Schedule s = empty();
  meshir::Placer placer(s, decode, routing);
  for (std::size_t l = 0; l < leaves.size(); ++l) {
    const Leaf& leaf = leaves[l];
    s.regions.push_back(leaf.region);
    const int region = static_cast<int>(s.regions.size()) - 1;  // expert CUTs append strip regions after it
    const Rect used = leaf.used();
    std::map<int, BlockCost> chosen;  // per block type: the branch width and siblings its cost chose
    for (int i = leaf.first_block; i < leaf.end_block; ++i) {
      meshir::Tune tune = tunes[static_cast<std::size_t>(leaf.tune)];
      const workload::Layer& ops = ops_of(static_cast<std::size_t>(i), tune);
      if ((tune.concurrent_branches && meshir::has_concurrent_branch(ops)) ||
          (sibling_branches && meshir::has_sibling_branches(ops))) {
        const int type = blocks[static_cast<std::size_t>(i)].type;
        auto it = chosen.find(type);
        if (it == chosen.end()) {
          // The table's entry where the search costed this leaf, else the same choice made again.
          const BlockCost* known = tables[static_cast<std::size_t>(type)]->find(used.w, used.h, leaf.tune);
          it = chosen.emplace(type, known != nullptr ? *known : compute(type, used.w, used.h, leaf.tune)).first;
        }
        tune.branch_narrowing = it->second.branch_narrowing;
        tune.sibling_branches = it->second.sibling_branches;
      }
      placer.place(ops, region, used, static_cast<int>(l), tune);
    }
  }
  return s;
}

PlanEvaluator::PlanEvaluator(const workload::Workload& workload, const wafer::WaferParams& wafer,
                             const cost::CostParams& params, std::int64_t microbatches,
                             const std::vector<double>& group_scales, const std::vector<std::int64_t>& expert_groups,
                             TuneKinds kinds)
    : impl_(new Impl(workload, wafer, params, microbatches, group_scales, expert_groups, kinds)) {}
PlanEvaluator::~PlanEvaluator() { delete impl_; }
const std::vector<meshir::Tune>& PlanEvaluator::tunes() const { return impl_->tunes; }
int PlanEvaluator::blocks() const { return static_cast<int>(impl_->blocks.size()); }

void PlanEvaluator::prepare(const std::vector<Leaf>& leaves) {
  std::vector<detail::TableKey> wanted;
  for (const auto& leaf : leaves) {
    for (int i = leaf.first_block; i < leaf.end_block; ++i) {
      wanted.emplace_back(impl_->blocks[static_cast<std::size_t>(i)].type, leaf.used_w, leaf.used_h, leaf.tune);
    }
  }
  impl_->ensure(std::move(wanted));
}

Objectives PlanEvaluator::evaluate(const std::vector<Leaf>& leaves) const {
  double pass = 0, bottleneck = 0;
  std::int64_t pes = 0;
  for (std::size_t l = 0; l < leaves.size(); ++l) {
    const Leaf& leaf = leaves[l];
    const auto c = impl_->leaf(leaf.first_block, leaf.end_block, leaf.used_w, leaf.used_h, leaf.tune);
    if (!c.fits) return Objectives{0.0, std::numeric_limits<double>::infinity(), pes, 0};
    if (l > 0) pass += impl_->transfer(leaves[l - 1].used(), leaf.used(), leaf.first_block - 1);
    pass += c.cycles;
    bottleneck = std::max(bottleneck, c.cycles);
    pes += leaf.region.pes();
  }
  return impl_->objectives(pass, bottleneck, pes);
}

meshir::Schedule PlanEvaluator::build(const std::vector<Leaf>& leaves) const { return impl_->build(leaves); }

}  // namespace wavel::search
