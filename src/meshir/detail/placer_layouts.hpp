// Layouts the placer gives activations, shared by placer.cpp and experts.cpp (internal).
#pragma once

#include "wavel/meshir/schedule.hpp"

namespace wavel::meshir::detail {

/// workload::Op::inputs' mark for the block's input.
inline constexpr int kBlockInput = -1;

// Decode activations: features split along one axis, replicated along the other (domain.md §3).
inline Layout features_on(Axis axis, const Rect& r) {
  Layout l;
  if (axis == Axis::x) {
    l.on_x = Dim::features;
    l.on_y = Dim::none;
    l.part_x = r.w;
  } else {
    l.on_x = Dim::none;
    l.on_y = Dim::features;
    l.part_y = r.h;
  }
  return l;
}

// Features on X and `on_y` on Y, both partitioned over the rectangle.
inline Layout spread_over(const Rect& r, Dim on_y) {
  Layout l;
  l.on_x = Dim::features;
  l.on_y = on_y;
  l.part_x = r.w;
  l.part_y = r.h;
  return l;
}

// Prefill activations: sequence on Y, embedding on X.
inline Layout prefill_layout(const Rect& r) { return spread_over(r, Dim::tokens); }

// A split epilogue's layout: each row's features over both axes.
inline Layout features_on_both(const Rect& r) { return spread_over(r, Dim::features); }

inline Axis features_axis(const Layout& l) { return l.on_x == Dim::features ? Axis::x : Axis::y; }

inline Axis flip(Axis a) { return a == Axis::x ? Axis::y : Axis::x; }

// A split epilogue's piece, not yet gathered.
inline bool is_split_piece(const PlacedOp& op) { return op.kernel == Kernel::elementwise && op.in_layout.features_on_both(); }

}  // namespace wavel::meshir::detail
