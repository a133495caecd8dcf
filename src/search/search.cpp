// Search pieces and front assembly: a setting's micro-batch counts, footprints and square layouts
// split into pieces; each piece runs the solver and rebuilds its own front; the setting's front is
// assembled from seeds and pieces in a fixed order.
#include "wavel/search/search.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>

#include "wavel/common/error.hpp"
#include "wavel/common/fields.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/meshir/verify.hpp"
#include "wavel/search/detail/solver.hpp"

namespace wavel::search {

namespace {

using meshir::Rect;

// Weights and KV cache of the whole model: what every footprint must hold (only the SRAM footprints
// need it, so it is not computed without them).
std::int64_t resident_bytes(const workload::Workload& workload, const SearchOptions& options) {
  if (options.sram_footprints.empty()) return 0;
  std::int64_t total = 0;
  for (const auto& b : split_blocks(workload)) total += b.resident_bytes;
  return total;
}

// Footprints the whole schedule may occupy: the grid, or its top-left 3/4, 1/2 or 1/4 per side; and
// for each fill in search.sram_footprints the smallest full-width strip and the smallest rectangle
// of the grid's aspect whose SRAM holds the resident bytes at that fill, so the fewest-PE end of the
// front is not tied to fractions of the grid.
std::vector<Rect> footprints(const wafer::WaferParams& wafer, const SearchOptions& options, std::int64_t resident) {
  std::vector<Rect> roots;
  auto add = [&](const Rect& r) {
    if (r.w >= 1 && r.h >= 1 && std::find(roots.begin(), roots.end(), r) == roots.end()) roots.push_back(r);
  };
  for (int quarters : {4, 3, 2, 1}) {
    add(Rect{0, 0, (wafer.grid_w_pes * quarters + 3) / 4, (wafer.grid_h_pes * quarters + 3) / 4});
  }
  const std::int64_t w = wafer.grid_w_pes, h = wafer.grid_h_pes;
  for (const double fill : options.sram_footprints) {
    if (resident <= 0 || !(fill > 0.0)) continue;
    const double need = std::ceil(static_cast<double>(resident) / (fill * static_cast<double>(wafer.sram_data_per_pe_bytes())));
    if (!(need < static_cast<double>(w) * static_cast<double>(h))) continue;
    const auto pes = static_cast<std::int64_t>(need);
    add(Rect{0, 0, w, (pes + w - 1) / w});
    const double scale = std::sqrt(need / (static_cast<double>(w) * static_cast<double>(h)));
    std::int64_t aw = std::min(w, static_cast<std::int64_t>(std::ceil(static_cast<double>(w) * scale)));
    std::int64_t ah = std::min(h, static_cast<std::int64_t>(std::ceil(static_cast<double>(h) * scale)));
    while (aw * ah < pes) (ah < h ? ah : aw) += 1;
    add(Rect{0, 0, aw, ah});
  }
  return roots;
}

// Sides of the P x P square layouts: every multiple of the step, and the listed sides, that fit.
std::vector<std::int64_t> square_sides(const wafer::WaferParams& wafer, const SearchOptions& options) {
  const std::int64_t largest = std::min(wafer.grid_w_pes, wafer.grid_h_pes);
  std::vector<std::int64_t> sides;
  if (options.square_step_pes > 0) {
    for (std::int64_t p = options.square_step_pes; p <= largest; p += options.square_step_pes) sides.push_back(p);
  }
  for (std::int64_t p : options.square_sides) {
    if (p >= 1 && p <= largest) sides.push_back(p);
  }
  std::sort(sides.begin(), sides.end());
  sides.erase(std::unique(sides.begin(), sides.end()), sides.end());
  return sides;
}

// Micro-batch counts: every exact split of the requests. Serving R requests as R / R' groups of R'
// one after another is never faster than R / R' micro-batches pipelined over the same schedule, so
// trying every divisor keeps the search at least as fast as any grouping of the requests.
std::vector<std::int64_t> microbatch_choices(std::int64_t requests) { return workload::request_divisors(requests); }

}  // namespace

std::unique_ptr<PlanEvaluator> make_evaluator(const workload::Workload& workload, const wafer::WaferParams& wafer,
                                              const cost::CostParams& params, const SearchOptions& options,
                                              std::int64_t microbatches, std::int64_t prompt_chunks) {
  return std::make_unique<PlanEvaluator>(workload::chunk_prompt(workload, prompt_chunks), wafer, params, microbatches,
                                         options.group_scales, options.expert_groups, options.tune_kinds());
}

std::vector<std::int64_t> prompt_chunk_choices(const workload::WorkloadShape& shape, const SearchOptions& options) {
  std::vector<std::int64_t> out{1};
  if (shape.phase != workload::Phase::prefill) return out;
  for (const std::int64_t c : options.prompt_chunks) {
    if (c > 1 && shape.input_tokens % c == 0) out.push_back(c);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<SearchPiece> search_pieces(const workload::Workload& workload, const wafer::WaferParams& wafer,
                                       const SearchOptions& options) {
  const workload::WorkloadShape& shape = workload.shape;
  std::vector<SearchPiece> pieces;
  const int roots = static_cast<int>(footprints(wafer, options, resident_bytes(workload, options)).size());
  const int chunks = static_cast<int>(std::max<std::int64_t>(1, options.root_chunks));
  const int squares = static_cast<int>(std::min<std::size_t>(square_sides(wafer, options).size(),
                                                             static_cast<std::size_t>(chunks)));
  for (std::int64_t pc : prompt_chunk_choices(shape, options)) {
    for (std::int64_t mb : microbatch_choices(shape.concurrent_requests)) {
      for (int f = 0; f < roots; ++f) {
        for (int c = 0; c < chunks; ++c) pieces.push_back(SearchPiece{mb, pc, f, c, chunks});
      }
      for (int c = 0; c < squares; ++c) pieces.push_back(SearchPiece{mb, pc, roots, c, squares});
    }
  }
  return pieces;
}

namespace {

std::int64_t top_cut_options(const workload::Workload& workload, const wafer::WaferParams& wafer,
                             const cost::CostParams& params, const SearchOptions& options, std::int64_t limit) {
  const auto pieces = search_pieces(workload, wafer, options);
  std::int64_t microbatch_counts = 0;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    microbatch_counts += i == 0 || pieces[i].microbatches != pieces[i - 1].microbatches ? 1 : 0;
  }
  // The CUT options do not depend on the microbatch count: count them once, for each.
  PlanEvaluator evaluator(workload, wafer, params, 1, options.group_scales, options.expert_groups, options.tune_kinds());
  detail::Solver solver(evaluator.impl(), options);
  SearchStats stats;
  solver.begin(&stats, std::chrono::steady_clock::now());
  std::int64_t count = 0;
  const std::int64_t per_count = limit / std::max<std::int64_t>(1, microbatch_counts) + 1;
  for (const auto& root : footprints(wafer, options, resident_bytes(workload, options))) {
    count += solver.top_cut_options(root, per_count - count);
    if (count > per_count) break;
  }
  return count * microbatch_counts;
}

}  // namespace

SearchSizeEstimate estimate_search_size(const workload::Workload& workload, const wafer::WaferParams& wafer,
                                        const cost::CostParams& params, const SearchOptions& options,
                                        const SearchOptions& defaults) {
  SearchSizeEstimate size;
  size.pieces = static_cast<std::int64_t>(search_pieces(workload, wafer, options).size());
  constexpr std::int64_t kUnlimited = std::numeric_limits<std::int64_t>::max() / 2;
  size.default_top_cut_options = top_cut_options(workload, wafer, params, defaults, kUnlimited);
  // Counting a huge search would itself take long: it stops past kCountedMultiple x the default.
  const std::int64_t limit = SearchSizeEstimate::kCountedMultiple * std::max<std::int64_t>(1, size.default_top_cut_options);
  size.top_cut_options = top_cut_options(workload, wafer, params, options, limit);
  size.at_least = size.top_cut_options > limit;
  return size;
}

namespace {

// A candidate scored: its own throughput and latency, or a pipeline part's stage_objectives with
// its crossing legs in the pass (as the solver's root points carry them).
SearchCandidate scored(const meshir::Schedule& s, const workload::Workload& w, const wafer::WaferParams& wafer,
                       const cost::CostParams& params, const SearchOptions& options) {
  const bool decode = w.shape.phase == workload::Phase::decode;
  const auto c = cost::evaluate(s, wafer, params, decode, w.shape.input_tokens);
  SearchCandidate cand;
  cand.microbatches = s.microbatches;
  cand.prompt_chunks = s.prompt_chunks;
  cand.sram_headroom = c.sram_headroom;
  cand.pass_cycles = c.pass_cycles;
  cand.stage_cycles = c.bottleneck_stage_cycles;
  if (options.pipeline_part) {
    cand.crossings = part_crossings(s, w, options, wafer, params);
    cand.objectives = stage_objectives(c.pass_cycles + cand.crossings.legs_cycles(), c.bottleneck_stage_cycles,
                                       c.pes_used, wafer.clock_hz);
  } else {
    cand.objectives = Objectives{c.tokens_per_s, c.latency_s, c.pes_used, 0};
  }
  return cand;
}

}  // namespace

PartCrossings part_crossings(const meshir::Schedule& part, const workload::Workload& w, const SearchOptions& options,
                             const wafer::WaferParams& wafer, const cost::CostParams& params) {
  PartCrossings out;
  if (part.ops.empty()) return out;
  const detail::Crossings c = detail::part_crossings(w, options, wafer, part.microbatches,
                                                     part.ops.front().work.input_bytes, part.ops.back().work.output_bytes);
  if (!c.any()) return out;
  out.in_leg_cycles = c.in_leg(meshir::used_part(part, part.ops.front().region), wafer, params);
  out.out_leg_cycles = c.out_leg(part.ops.back().used, wafer, params);
  if (c.out.bytes > 0) out.out_link_cycles = c.latency_cycles + c.out.link_cycles;
  return out;
}

std::vector<SearchCandidate> seed_candidates(const workload::Workload& workload, const wafer::WaferParams& wafer,
                                             const cost::CostParams& params,
                                             const std::vector<std::pair<std::string, meshir::Schedule>>& seeds,
                                             const SearchOptions& options) {
  std::vector<SearchCandidate> out;
  for (const auto& [name, schedule] : seeds) {
    SearchCandidate cand = scored(schedule, workload, wafer, params, options);
    // A seed that does not fit or does not verify (e.g. a used rectangle on a defective PE) is not a schedule.
    if (cand.sram_headroom < 0 ||
        !meshir::verify(schedule, name, {}, [](const meshir::PlacedOp& op) { return cost::colours_needed(op); }).empty()) {
      continue;
    }
    cand.source = "seed:" + name;
    out.push_back(std::move(cand));
  }
  return out;
}

// The cached state of one (setting, micro-batch count): block costs and sub-problem memo stay valid
// for every piece of it, so a rank that runs several pieces of it in a row shares them. Block costs
// also outlive it in `costs`, for the next setting or part with identical blocks.
struct SearchWorkspace::Impl {
  detail::BlockCostCache costs;
  /// Unpruned tree sizes (a statistic) by root and blocks' resident bytes: the same for every
  /// micro-batch count of a part, and as costly to count as a tenth of its search.
  std::map<std::string, double> tree_log10;
  std::string key;
  std::unique_ptr<PlanEvaluator> evaluator;
  std::unique_ptr<detail::Solver> solver;
};

SearchWorkspace::SearchWorkspace() : impl_(std::make_unique<Impl>()) {}
SearchWorkspace::~SearchWorkspace() = default;

PieceResult SearchWorkspace::run(const std::string& setting_key, const workload::Workload& workload,
                                 const wafer::WaferParams& wafer, const cost::CostParams& params,
                                 const SearchOptions& options, const SearchPiece& piece,
                                 const std::vector<Objectives>& incumbents) {
  const auto start = std::chrono::steady_clock::now();
  const std::string key =
      setting_key + "/mb=" + std::to_string(piece.microbatches) + "/pc=" + std::to_string(piece.prompt_chunks);
  if (impl_->key != key || !impl_->solver) {
    impl_->solver.reset();
    impl_->evaluator.reset();
    impl_->costs.trim();
    impl_->evaluator = make_evaluator(workload, wafer, params, options, piece.microbatches, piece.prompt_chunks);
    impl_->evaluator->impl().serial = options.serial;
    impl_->evaluator->impl().pipeline_part = options.pipeline_part;
    const auto& blocks = impl_->evaluator->impl().blocks;
    if (!blocks.empty() && !blocks.front().ops.ops.empty()) {
      impl_->evaluator->impl().crossings =
          detail::part_crossings(workload, options, wafer, piece.microbatches,
                                 blocks.front().ops.ops.front().input_bytes, blocks.back().output_bytes);
    }
    impl_->evaluator->impl().share_tables(impl_->costs);
    impl_->solver = std::make_unique<detail::Solver>(impl_->evaluator->impl(), options);
    impl_->key = key;
  }
  PlanEvaluator& evaluator = *impl_->evaluator;
  PlanEvaluator::Impl& ev = evaluator.impl();
  detail::Solver& solver = *impl_->solver;
  PieceResult out;
  solver.begin(&out.stats, start);
  const std::int64_t computed_before = ev.computed;
  const auto roots = footprints(wafer, options, resident_bytes(workload, options));
  const int squares_index = static_cast<int>(roots.size());
  if (piece.footprint < 0 || piece.footprint > squares_index) {
    throw InternalError("search piece names footprint " + std::to_string(piece.footprint));
  }
  std::vector<detail::Point> points;
  if (piece.footprint < squares_index) {
    const Rect root = roots[static_cast<std::size_t>(piece.footprint)];
    std::int64_t resident = 0;
    for (const auto& b : ev.blocks) resident += b.resident_bytes;
    if (resident > root.pes() * wafer.sram_data_per_pe_bytes()) {
      if (piece.chunk == 0) ++out.stats.pruned_sram;  // the whole footprint, counted once
      return out;
    }
    if (piece.chunk == 0) {
      std::string tree_key = setting_key + '|' + std::to_string(root.w) + 'x' + std::to_string(root.h) + '|' +
                             std::to_string(ev.tunes.size());
      for (const auto& b : ev.blocks) tree_key += ' ' + std::to_string(b.resident_bytes);
      if (impl_->tree_log10.size() > 4096) impl_->tree_log10.clear();  // bounded; only a statistic
      const auto it = impl_->tree_log10.find(tree_key);
      out.stats.exhaustive_tree_log10 =
          it != impl_->tree_log10.end() ? it->second : impl_->tree_log10.emplace(tree_key, solver.tree_log10(root)).first->second;
    }
    points = solver.root_points(root, piece.chunk, piece.chunks, incumbents);
  } else {
    const auto sides = square_sides(wafer, options);
    for (std::size_t i = static_cast<std::size_t>(piece.chunk); i < sides.size();
         i += static_cast<std::size_t>(std::max(1, piece.chunks))) {
      out.stats.exhaustive_tree_log10 =
          detail::log10_add(out.stats.exhaustive_tree_log10, solver.square_tree_log10(sides[i]));
      for (auto& p : solver.square_points(sides[i], incumbents)) points.push_back(p);
    }
  }
  std::vector<Objectives> objs;
  for (std::size_t i = 0; i < points.size(); ++i) {
    Objectives o = ev.objectives(points[i].pass, points[i].stage, points[i].pes);
    o.id = static_cast<std::int64_t>(i);
    objs.push_back(o);
  }
  out.stats.candidates_evaluated = static_cast<std::int64_t>(points.size());
  // Only points on this piece's own front can reach the setting's front: build and score those.
  for (const auto& o : pareto_front(objs, options.objectives)) {
    const auto& p = points[static_cast<std::size_t>(o.id)];
    std::vector<Leaf> leaves;
    solver.leaves_of(p.plan, p.offset, leaves);
    SearchCandidate cand = scored(evaluator.build(leaves), workload, wafer, params, options);
    cand.leaves = std::move(leaves);
    cand.source = "search";
    cand.microbatches = piece.microbatches;
    cand.prompt_chunks = piece.prompt_chunks;
    out.candidates.push_back(std::move(cand));
  }
  out.stats.block_costs = ev.computed - computed_before;
  out.stats.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

void accumulate(SearchStats& total, const SearchStats& part) {
  fields::combine_by_name(part, total, [](const char* name, auto& sum, const auto& add) {
    if constexpr (std::is_same_v<std::decay_t<decltype(sum)>, bool>) {
      sum = sum || add;  // timed out anywhere
    } else if (std::strcmp(name, "exhaustive_tree_log10") == 0) {
      sum = detail::log10_add(sum, add);  // tree sizes add; they are kept as log10
    } else {
      sum += add;
    }
  });
}

SearchResult assemble(const workload::Workload& workload, const wafer::WaferParams& wafer,
                      const cost::CostParams& params, const SearchOptions& options,
                      const std::vector<std::pair<std::string, meshir::Schedule>>& seeds,
                      const std::vector<SearchCandidate>& candidates, const SearchStats& stats) {
  SearchResult result;
  result.stats = stats;
  std::vector<Objectives> all;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    all.push_back(candidates[i].objectives);
    all.back().id = static_cast<std::int64_t>(i);
  }
  const auto front = pareto_front(all, options.objectives);
  // One per (micro-batch count, prompt chunks) on the front.
  std::map<std::pair<std::int64_t, std::int64_t>, std::unique_ptr<PlanEvaluator>> builders;
  for (const auto& o : front) {
    const auto& c = candidates[static_cast<std::size_t>(o.id)];
    FrontPoint p;
    p.objectives = o;
    p.source = c.source;
    p.microbatches = c.microbatches;
    p.prompt_chunks = c.prompt_chunks;
    p.sram_headroom = c.sram_headroom;
    if (c.source == "search") {
      auto& builder = builders[{c.microbatches, c.prompt_chunks}];
      if (!builder) builder = make_evaluator(workload, wafer, params, options, c.microbatches, c.prompt_chunks);
      p.schedule = builder->build(c.leaves);
      p.schedule.name = "wavel";
    } else {
      const std::string name = c.source.substr(5);
      const auto seed = std::find_if(seeds.begin(), seeds.end(), [&](const auto& s) { return s.first == name; });
      if (seed == seeds.end()) throw InternalError("front point from unknown seed " + name);
      p.schedule = seed->second;
      p.schedule.name = name;
    }
    int stages = 0;  // pipeline stages, not regions: the expert CUT's strips belong to their block's stage
    for (const auto& op : p.schedule.ops) stages = std::max(stages, op.stage + 1);
    p.stages = stages;
    result.front.push_back(std::move(p));
  }
  // Reference: zero throughput, twice the slowest front latency, every usable PE.
  double worst_latency = 0;
  for (const auto& p : result.front) worst_latency = std::max(worst_latency, p.objectives.latency_s);
  result.reference = HypervolumeReference{2.0 * worst_latency, wafer.usable_pes()};
  result.hypervolume = normalized_hypervolume(front, result.reference);
  return result;
}

SearchResult search_setting(const workload::Workload& workload, const wafer::WaferParams& wafer,
                            const cost::CostParams& params, const SearchOptions& options,
                            const std::vector<std::pair<std::string, meshir::Schedule>>& seeds) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<SearchCandidate> candidates = seed_candidates(workload, wafer, params, seeds, options);
  SearchStats stats;
  SearchWorkspace workspace;
  for (const auto& piece : search_pieces(workload, wafer, options)) {
    std::vector<Objectives> incumbents;
    for (const auto& c : candidates) incumbents.push_back(c.objectives);
    auto part = workspace.run("", workload, wafer, params, options, piece, pareto_front(incumbents));
    accumulate(stats, part.stats);
    for (auto& c : part.candidates) candidates.push_back(std::move(c));
  }
  stats.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return assemble(workload, wafer, params, options, seeds, candidates, stats);
}

}  // namespace wavel::search
