// The search space of the CUT/TUNE solver: CUT divisions, block boundaries, SRAM-derived cuts, leaf
// used sizes and anchors (see solver.hpp; the solver is solver.cpp, the pruning pruning.cpp).
#include "wavel/search/detail/solver.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace wavel::search::detail {

namespace {

using meshir::Axis;
using meshir::Rect;

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

// The block boundary that splits [a, b)'s resident bytes closest to `ratio` (work follows area).
int Solver::split_point(int a, int b, double ratio) const {
  const double total = static_cast<double>(resident_prefix_[static_cast<std::size_t>(b)] - resident_prefix_[static_cast<std::size_t>(a)]);
  int best = a + 1;
  double best_gap = kInf;
  for (int k = a + 1; k < b; ++k) {
    const double part = static_cast<double>(resident_prefix_[static_cast<std::size_t>(k)] - resident_prefix_[static_cast<std::size_t>(a)]);
    const double gap = std::abs(part - ratio * total);
    if (gap < best_gap) {
      best_gap = gap;
      best = k;
    }
  }
  return best;
}

// Divisions of a w x h rectangle along X then Y: two parts at each cut ratio, equal strips, each
// as its parts from the low side to the high side (relative to the rectangle's corner).
std::vector<std::vector<Rect>> Solver::divisions(std::int64_t w, std::int64_t h) const {
  std::vector<std::vector<double>> fractions;
  for (double r : opt_.cut_ratios) fractions.push_back({r, 1.0 - r});
  for (std::int64_t n : opt_.strip_counts) {
    fractions.push_back(std::vector<double>(static_cast<std::size_t>(n), 1.0 / static_cast<double>(n)));
  }
  std::vector<std::vector<Rect>> out;
  for (Axis axis : {Axis::x, Axis::y}) {
    const std::int64_t side = axis == Axis::x ? w : h;
    std::vector<std::vector<std::int64_t>> all_cuts;
    for (const auto& parts : fractions) {
      std::vector<std::int64_t> cuts{0};
      double cumulative = 0;
      for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
        cumulative += parts[i];
        cuts.push_back(std::llround(cumulative * static_cast<double>(side)));
      }
      cuts.push_back(side);
      all_cuts.push_back(std::move(cuts));
    }
    // Two-way CUTs at absolute positions: every multiple of search.cut_step_pes inside the side.
    for (std::int64_t p = opt_.cut_step_pes; opt_.cut_step_pes > 0 && p < side; p += opt_.cut_step_pes) {
      all_cuts.push_back({0, p, side});
    }
    for (const auto& cuts : all_cuts) {
      if (std::count(all_cuts.begin(), all_cuts.begin() + (&cuts - all_cuts.data()), cuts) > 0) continue;
      bool ok = true;
      for (std::size_t i = 1; i < cuts.size(); ++i) ok = ok && cuts[i] > cuts[i - 1];
      if (!ok) continue;
      std::vector<Rect> rects;
      for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
        const std::int64_t lo = cuts[i], len = cuts[i + 1] - cuts[i];
        rects.push_back(axis == Axis::x ? Rect{lo, 0, len, h} : Rect{0, lo, w, len});
      }
      out.push_back(std::move(rects));
    }
  }
  return out;
}

// Block boundaries for children with these areas: consecutive blocks at the boundaries closest to
// the area fractions (by resident bytes); with search.sram_boundaries also the two SRAM fills, each
// child in turn (from the first, or from the last) taking as many blocks as its PEs hold, leaving one
// for each child still to come. Each list runs a, then each child's end.
std::vector<std::vector<int>> Solver::boundaries(const std::vector<Rect>& rects, int a, int b, std::int64_t area,
                                                 bool root) const {
  std::vector<std::vector<int>> out;
  const std::size_t n = rects.size();
  std::vector<int> bounds{a};
  double area_before = 0;
  for (std::size_t i = 0; i + 1 < n; ++i) {
    area_before += static_cast<double>(rects[i].pes());
    bounds.push_back(split_point(a, b, area_before / static_cast<double>(area)));
  }
  bounds.push_back(b);
  out.push_back(bounds);
  if (!opt_.sram_boundaries || !root) return out;
  const std::int64_t sram = ev_.wafer.sram_data_per_pe_bytes();
  const auto held = [&](int from, int to) {
    return resident_prefix_[static_cast<std::size_t>(to)] - resident_prefix_[static_cast<std::size_t>(from)];
  };
  std::vector<int> low{a};
  for (std::size_t i = 0; i + 1 < n; ++i) {
    const int last = b - static_cast<int>(n - 1 - i);  // leave one block per child to come
    int k = low.back() + 1;
    while (k < last && held(low.back(), k + 1) <= rects[i].pes() * sram) ++k;
    low.push_back(k);
  }
  low.push_back(b);
  out.push_back(low);
  std::vector<int> high{b};
  for (std::size_t i = n - 1; i > 0; --i) {
    const int first = a + static_cast<int>(i);  // leave one block per child before
    int k = high.back() - 1;
    while (k > first && held(k - 1, high.back()) <= rects[i].pes() * sram) --k;
    high.push_back(k);
  }
  high.push_back(a);
  std::reverse(high.begin(), high.end());
  out.push_back(high);
  return out;
}

// Root two-way CUTs derived from SRAM need (search.sram_cuts = n): for the n block boundaries k that
// split [a, b) into n + 1 near-equal runs, the position along each axis where the first part has just
// the PEs to hold blocks [a, k)'s weights and KV cache. Only at the root, so the regions below stay
// those of divisions() (which the lower bound enumerates).
std::vector<std::vector<Rect>> Solver::sram_cuts(const Rect& rect, int a, int b) const {
  std::vector<std::vector<Rect>> out;
  const std::int64_t n = opt_.sram_cuts;
  const std::int64_t sram = ev_.wafer.sram_data_per_pe_bytes();
  for (Axis axis : {Axis::x, Axis::y}) {
    const std::int64_t side = axis == Axis::x ? rect.w : rect.h;
    const std::int64_t across = axis == Axis::x ? rect.h : rect.w;
    for (std::int64_t j = 1; j <= n && b - a >= 2; ++j) {
      const int k = std::clamp(a + static_cast<int>(std::llround(static_cast<double>(j * (b - a)) / static_cast<double>(n + 1))),
                               a + 1, b - 1);
      const std::int64_t need = resident_prefix_[static_cast<std::size_t>(k)] - resident_prefix_[static_cast<std::size_t>(a)];
      const std::int64_t p = std::max<std::int64_t>(1, (need + across * sram - 1) / (across * sram));
      if (p >= side) continue;
      std::vector<Rect> parts = axis == Axis::x ? std::vector<Rect>{Rect{0, 0, p, rect.h}, Rect{p, 0, side - p, rect.h}}
                                                : std::vector<Rect>{Rect{0, 0, rect.w, p}, Rect{0, p, rect.w, side - p}};
      if (std::find(out.begin(), out.end(), parts) == out.end()) out.push_back(std::move(parts));
    }
  }
  return out;
}

// CUT by each division and each of its block boundaries (the SRAM fills at the root only), the
// earlier blocks on the low side or the high side. At the root the high-side variants mirror the
// low-side ones exactly (the model is reflection-invariant) unless defects break the symmetry:
// without `mirrors` they are not generated.
std::vector<Solver::CutOption> Solver::cut_options(const Rect& rect, int a, int b, bool root, bool mirrors) {
  std::vector<CutOption> options;
  std::vector<std::vector<Rect>> all = divisions(rect.w, rect.h);
  if (root) {
    for (auto& parts : sram_cuts(rect, a, b)) all.push_back(std::move(parts));
  }
  for (const auto& parts : all) {
    if (static_cast<int>(parts.size()) > b - a) continue;
    for (bool low_first : {true, false}) {
      if (!low_first && !mirrors && !has_defects_) {
        ++stats_->pruned_symmetry;
        continue;
      }
      std::vector<Rect> rects;
      const std::size_t n = parts.size();
      for (std::size_t i = 0; i < n; ++i) rects.push_back(parts[low_first ? i : n - 1 - i]);
      for (auto& bounds : boundaries(rects, a, b, rect.pes(), root)) {
        bool ok = true;
        for (std::size_t i = 1; i < bounds.size(); ++i) ok = ok && bounds[i] > bounds[i - 1];
        const bool duplicate = std::any_of(options.begin(), options.end(), [&](const CutOption& o) {
          return o.bounds == bounds && o.rects == rects;
        });
        if (ok && !duplicate) options.push_back(CutOption{rects, std::move(bounds)});
      }
    }
  }
  return options;
}

// Used sizes of a leaf holding blocks [a, b) in a w x h region: every pair of the fractions' sides,
// then (search.sram_used_step_pes) the smallest member of each SRAM family that holds the blocks'
// weights and KV cache. Each size once, in this order.
std::vector<std::pair<std::int64_t, std::int64_t>> Solver::used_sizes(std::int64_t w, std::int64_t h, int a,
                                                                       int b) const {
  std::vector<std::pair<std::int64_t, std::int64_t>> sizes;
  for (auto uw : used_sides(w, opt_.used_fractions)) {
    for (auto uh : used_sides(h, opt_.used_fractions)) sizes.emplace_back(uw, uh);
  }
  const std::int64_t step = opt_.sram_used_step_pes;
  const std::int64_t need = resident_prefix_[static_cast<std::size_t>(b)] - resident_prefix_[static_cast<std::size_t>(a)];
  for (int family = 0; family < kSramFamilies && step > 0; ++family) {
    const std::int64_t members = sram_family_members(family, w, h, step);
    for (std::int64_t k = 1; k <= members; ++k) {
      const auto size = sram_family_size(family, k, w, h, step);
      if (need > size.first * size.second * ev_.wafer.sram_data_per_pe_bytes()) continue;
      if (std::find(sizes.begin(), sizes.end(), size) == sizes.end()) sizes.push_back(size);
      break;
    }
  }
  return sizes;
}

// Offsets of a used_w x used_h rectangle at the corners of `rect` (top-left, top-right, bottom-left,
// bottom-right; each distinct one once) whose PEs are all free of defects: the first of them, or
// every one with search.all_anchors. Without defects the first is the top-left corner.
std::vector<std::pair<std::int64_t, std::int64_t>> Solver::anchors(const Rect& rect, std::int64_t used_w,
                                                                    std::int64_t used_h) const {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  const std::int64_t right = rect.w - used_w, bottom = rect.h - used_h;
  for (const auto& corner : {std::make_pair<std::int64_t, std::int64_t>(0, 0), std::make_pair(right, std::int64_t{0}),
                             std::make_pair(std::int64_t{0}, bottom), std::make_pair(right, bottom)}) {
    if (std::find(out.begin(), out.end(), corner) != out.end()) continue;
    if (contains_defect(Rect{rect.x + corner.first, rect.y + corner.second, used_w, used_h})) continue;
    out.push_back(corner);
    if (!opt_.all_anchors) break;
  }
  return out;
}

}  // namespace wavel::search::detail
