// A node budget for YAML and JSON inputs, checked on the raw text before any parser runs: a large
// file of many small values (a 15 MB config.json costs yaml-cpp 3.4 GB as a tree, and its scanner
// queues a one-line flow sequence whole) is refused in milliseconds, with a position.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace wavel {

/// 1-based line and column in a text.
struct TextPosition {
  int line = 0;
  int column = 0;
};

/// Every YAML or JSON node but the first follows one of , [ { : - ? or a line break, so their count
/// bounds the nodes as written (aliases not expanded), quoted or not. Returns the position of the
/// separator that takes the bound past `max_nodes`, or nothing.
std::optional<TextPosition> first_node_past(const std::string& text, std::size_t max_nodes);

}  // namespace wavel
