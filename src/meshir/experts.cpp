// The expert CUT: a routed-expert section on strips of its own, and the ops beside it (concurrent
// branches) on one more strip, all in the same steps.
#include "wavel/meshir/placer.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "detail/placer_layouts.hpp"

namespace wavel::meshir {

using workload::OpKind;
using namespace detail;

// The expert CUT: the used rectangle is cut into `groups` strips along its longer side, each holding
// experts / groups experts. Dispatch multicasts each group's tokens to its strip, the strips run their
// experts in the same steps, and combine gathers the outputs back. A group serves at most
// capacity_factor x its expected rows (the slowest group sets the pace), and never more than every
// token routed to each of its experts. Under uniform routing every group expects its mean share;
// under skewed routing (routing.skew) experts go to groups busiest first, each to the least loaded
// (workload::balance_groups), and a strip's grouped GEMM runs each expert on its own rows. A branch
// beside the section (the shared experts) gets a strip of its own, in the middle, as wide as its
// share of the FLOPs or narrower: every token is dispatched to it with the routed ones, its ops run
// in the experts' steps, and its output comes back with theirs.
int Placer::place_experts(const workload::Layer& block, std::size_t dispatch, std::size_t combine,
                          const std::vector<std::size_t>& branch, const std::function<int(int)>& resolve,
                          std::vector<int>& placed, int region, const Rect used, int stage, const Tune& tune,
                          std::int64_t groups) {
  // `used` by value: the strips below grow s_.regions, which a caller's reference may point into.
  const workload::Op& d = block.ops[dispatch];
  const std::int64_t experts = d.experts, top_k = std::max<std::int64_t>(1, d.experts_per_token);
  const std::int64_t routed = std::max<std::int64_t>(1, d.m);
  const std::int64_t tokens = std::max<std::int64_t>(1, routed / top_k);
  const auto group_count = static_cast<std::size_t>(groups);
  const bool skewed = routing_.skew != 0;
  // Each group's expected rows and, when skewed, its experts' rows.
  std::vector<double> expected(group_count, static_cast<double>(routed) / static_cast<double>(groups));
  std::vector<std::vector<std::int64_t>> expert_rows(group_count);
  if (skewed) {
    const std::vector<std::int64_t> rows_of = workload::expert_rows(routing_, experts, routed, tokens);
    const auto members = workload::balance_groups(rows_of, groups);
    for (std::size_t g = 0; g < group_count; ++g) {
      double sum = 0;
      for (const std::int64_t e : members[g]) {
        expert_rows[g].push_back(rows_of[static_cast<std::size_t>(e)]);
        sum += static_cast<double>(rows_of[static_cast<std::size_t>(e)]);
      }
      expected[g] = sum;
    }
  }
  std::vector<std::int64_t> rows(group_count), distinct(group_count);
  for (std::size_t g = 0; g < group_count; ++g) {
    rows[g] = std::min<std::int64_t>(tokens * std::min(top_k, experts / groups),
                                     static_cast<std::int64_t>(std::ceil(routing_.capacity_factor * expected[g])));
    // A token routed to several experts of one strip travels there once, and its outputs are summed
    // on the strip before they return: a strip holding a share p of the load (uniform: its E/G
    // experts) sees a token unless all k draws miss it, prod_i (E - pE - i) / (E - i), the busiest
    // capacity_factor x that, never more than its rows.
    const double here = skewed ? static_cast<double>(experts) * expected[g] / static_cast<double>(routed)
                               : static_cast<double>(experts / groups);
    double none_here = 1.0;
    for (std::int64_t i = 0; i < top_k; ++i) {
      none_here *= std::max(0.0, static_cast<double>(experts) - here - static_cast<double>(i)) /
                   static_cast<double>(std::max<std::int64_t>(1, experts - i));
    }
    distinct[g] = std::max<std::int64_t>(
        1, std::min({rows[g], tokens,
                     static_cast<std::int64_t>(std::ceil(routing_.capacity_factor * static_cast<double>(tokens) * (1.0 - none_here)))}));
  }
  const auto token_bytes = [&](std::int64_t bytes, std::size_t g) {
    return static_cast<std::int64_t>(std::ceil(static_cast<double>(bytes) * static_cast<double>(distinct[g]) /
                                                static_cast<double>(routed)));
  };
  // A figure of all routed rows scaled to group g's.
  const auto scale = [&](std::int64_t v, std::size_t g) {
    return static_cast<std::int64_t>(std::ceil(static_cast<double>(v) * static_cast<double>(rows[g]) / static_cast<double>(routed)));
  };
  // Work of group g's share of an op over its routed rows and experts / groups experts.
  const auto share = [&](const workload::Op& op, std::size_t g) {
    workload::Op o = op;
    o.m = rows[g];  // every op of the section works on the routed rows
    o.flops = scale(op.flops, g);
    o.input_bytes = scale(op.input_bytes, g);
    o.output_bytes = op.kind == OpKind::moe_combine ? op.output_bytes : scale(op.output_bytes, g);
    o.weight_bytes = op.weight_bytes / groups;
    if (op.experts > 0) o.experts = std::max<std::int64_t>(1, op.experts / groups);  // the strip's experts
    return o;
  };
  const bool along_x = used.w >= used.h;
  const std::int64_t side = along_x ? used.w : used.h;
  // Strip widths: the branch's share of the side is its share of the FLOPs (the busiest group's
  // against the branch's) over tune.branch_narrowing, at least one PE, leaving one per group.
  std::int64_t beside = 0;
  if (!branch.empty()) {
    double group_flops = 0, branch_flops = 0;  // the busiest group's
    for (std::size_t g = 0; g < group_count; ++g) {
      double flops = 0;
      for (std::size_t k = dispatch + 1; k < combine; ++k) flops += static_cast<double>(scale(block.ops[k].flops, g));
      group_flops = std::max(group_flops, flops);
    }
    for (const std::size_t j : branch) branch_flops += static_cast<double>(block.ops[j].flops);
    const double all = branch_flops + static_cast<double>(groups) * group_flops;
    const double balanced = all > 0 ? static_cast<double>(side) * branch_flops / all : 1.0;
    beside = std::clamp<std::int64_t>(std::llround(balanced / static_cast<double>(std::max<std::int64_t>(1, tune.branch_narrowing))),
                                      1, side - groups);
  }
  const std::int64_t lanes = groups + (branch.empty() ? 0 : 1);
  const std::int64_t branch_lane = branch.empty() ? -1 : groups / 2;
  const auto group_at = [&](std::int64_t lane) {  // the routed group of a lane (not the branch's)
    return static_cast<std::size_t>(lane - (branch_lane >= 0 && lane > branch_lane ? 1 : 0));
  };
  std::vector<int> strips;
  std::vector<Rect> rects;
  for (std::int64_t lane = 0, lo = 0; lane < lanes; ++lane) {
    const auto g = static_cast<std::int64_t>(group_at(lane));
    const std::int64_t hi = lane == branch_lane ? lo + beside
                            : branch_lane >= 0 && lane < branch_lane
                                ? (side - beside) * (g + 1) / groups
                                : beside + (side - beside) * (g + 1) / groups;
    const Rect r = along_x ? Rect{used.x + lo, used.y, hi - lo, used.h} : Rect{used.x, used.y + lo, used.w, hi - lo};
    rects.push_back(r);
    s_.regions.push_back(r);
    strips.push_back(static_cast<int>(s_.regions.size()) - 1);
    lo = hi;
  }
  const auto entry_layout = [&](const Rect& r) { return decode_ ? features_on(tune.entry_features, r) : prefill_layout(r); };
  const auto lane_name = [&](const workload::Op& op, std::int64_t lane) {
    if (!named_) return std::string();
    if (lane == branch_lane) return block.name + "." + op.name + ".beside";
    return block.name + "." + op.name + ".g" + std::to_string(group_at(lane));
  };
  // The branch's work per step: its ops in order (their inputs mapped to the branch's own), the value
  // entering it dispatched whole, and its output combined back without a weighted sum.
  std::vector<int> in_branch_at(block.ops.size(), -1);
  for (std::size_t b = 0; b < branch.size(); ++b) in_branch_at[branch[b]] = static_cast<int>(b);
  int entering = kBlockInput, branch_entry = -1;
  for (const std::size_t j : branch) {
    for (const int in : block.ops[j].inputs) {
      if (in < 0 || in_branch_at[static_cast<std::size_t>(in)] < 0) entering = in;
    }
  }
  const auto whole = [&](const workload::Op& like, std::int64_t bytes) {
    workload::Op o = like;
    o.m = tokens;
    o.flops = 0;
    o.input_bytes = o.output_bytes = bytes;
    o.weight_bytes = 0;
    o.experts = o.experts_per_token = 0;
    o.inputs.clear();
    return o;
  };

  std::vector<int> last(static_cast<std::size_t>(lanes), -1);
  // Dispatch: from the block's region (where norm and router ran) to each strip, one step.
  std::vector<int> sources;
  for (int in : d.inputs) sources.push_back(resolve(in));
  for (std::int64_t lane = 0; lane < lanes; ++lane) {
    const bool is_branch = lane == branch_lane;
    std::vector<int> from = sources;
    workload::Op o;
    if (is_branch) {
      from = {resolve(entering)};
      o = whole(d, from.front() >= 0 ? s_.ops[static_cast<std::size_t>(from.front())].work.output_bytes : 0);
    } else {
      o = share(d, group_at(lane));
      o.input_bytes = o.output_bytes = token_bytes(d.input_bytes, group_at(lane));
    }
    const int i = place_op(o, lane_name(d, lane), region, used, stage, tune, from, lane > 0);
    s_.ops[static_cast<std::size_t>(i)].to_region = strips[static_cast<std::size_t>(lane)];
    s_.ops[static_cast<std::size_t>(i)].out_layout = entry_layout(rects[static_cast<std::size_t>(lane)]);
    last[static_cast<std::size_t>(lane)] = i;
    if (is_branch) branch_entry = i;
  }
  // The experts and the branch, one step per op, every strip at once; split pieces are gathered in
  // the next step.
  const std::size_t section_ops = combine - dispatch - 1;
  for (std::size_t k = 0; k < std::max(section_ops, branch.size()); ++k) {
    bool opened = false;
    for (std::int64_t lane = 0; lane < lanes; ++lane) {
      const bool is_branch = lane == branch_lane;
      if (is_branch ? k >= branch.size() : k >= section_ops) continue;
      const auto l = static_cast<std::size_t>(lane);
      int at = 0;
      if (is_branch) {
        const workload::Op& op = block.ops[branch[k]];
        std::vector<int> inputs;
        for (const int in : op.inputs) {
          const int b = in >= 0 ? in_branch_at[static_cast<std::size_t>(in)] : -1;
          inputs.push_back(b >= 0 ? placed[branch[static_cast<std::size_t>(b)]] : branch_entry);
        }
        at = place_op(op, lane_name(op, lane), strips[l], rects[l], stage, tune, inputs, opened, /*gather_now=*/false);
      } else {
        const workload::Op& op = block.ops[dispatch + 1 + k];
        at = place_op(share(op, group_at(lane)), lane_name(op, lane), strips[l], rects[l], stage, tune, {last[l]},
                      opened, /*gather_now=*/false);
        // A grouped GEMM's experts on their own rows: the group's rows in proportion to theirs.
        OpWork& work = s_.ops[static_cast<std::size_t>(at)].work;
        work.product_rows.clear();
        if (skewed && work.products > 1) work.product_rows = workload::split_in_proportion(work.m, expert_rows[group_at(lane)]);
      }
      opened = true;
      last[l] = at;
      if (is_branch) placed[branch[k]] = at;
    }
    bool first = true;
    for (std::int64_t lane = 0; lane < lanes; ++lane) {
      int& piece = last[static_cast<std::size_t>(lane)];
      if (!is_split_piece(s_.ops[static_cast<std::size_t>(piece)])) continue;
      piece = gather(piece, tune.entry_features, !first);
      if (lane == branch_lane) placed[branch[k]] = piece;
      first = false;
    }
  }
  // Combine: each strip's outputs gathered back to the block's region (gate weights came along with
  // the tokens, so the router output is not read again).
  const workload::Op& c = block.ops[combine];
  int out = -1;
  for (std::int64_t lane = 0; lane < lanes; ++lane) {
    const auto l = static_cast<std::size_t>(lane);
    const bool is_branch = lane == branch_lane;
    workload::Op o;
    if (is_branch) {
      o = whole(c, s_.ops[static_cast<std::size_t>(last[l])].work.output_bytes);
    } else {
      o = share(c, group_at(lane));
      o.input_bytes = token_bytes(c.input_bytes, group_at(lane));
    }
    const int i = place_op(o, lane_name(c, lane), strips[l], rects[l], stage, tune, {last[l]}, lane > 0);
    PlacedOp& op = s_.ops[static_cast<std::size_t>(i)];
    op.to_region = region;
    op.out_layout = entry_layout(used);
    if (is_branch) {
      placed[branch.back()] = i;
    } else {
      out = i;
    }
  }
  return out;
}

}  // namespace wavel::meshir
