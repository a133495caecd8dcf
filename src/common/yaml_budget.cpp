// The node bound of yaml_budget.hpp: one pass over the bytes.
#include "wavel/common/yaml_budget.hpp"

namespace wavel {

std::optional<TextPosition> first_node_past(const std::string& text, std::size_t max_nodes) {
  std::size_t bound = 1;
  int line = 1, column = 0;
  for (const char c : text) {
    ++column;
    switch (c) {
      case ',': case '[': case '{': case ':': case '-': case '?': case '\n':
        if (++bound > max_nodes) return TextPosition{line, column};
        break;
      default:
        break;
    }
    if (c == '\n') {
      ++line;
      column = 0;
    }
  }
  return std::nullopt;
}

}  // namespace wavel
