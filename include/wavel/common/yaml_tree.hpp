// A YAML document as a tree that remembers where every key and value came from.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "wavel/common/error.hpp"

namespace wavel::yaml {

/// 1-based position of a key or value in a named input (a file, or a --set argument).
struct Source {
  std::string file;
  int line = 0;
  int column = 0;
};

/// YAML node with its source position. Maps keep every entry in order, duplicates included,
/// so the validator can report them (yaml-cpp silently keeps both).
struct Node {
  enum class Kind { null, scalar, sequence, map };
  Kind kind = Kind::null;
  std::string scalar;   ///< text of a scalar
  bool quoted = false;  ///< scalar was quoted, so it is a string whatever it looks like
  Source where;
  std::vector<Node> items;                            ///< sequence elements
  std::vector<std::pair<std::string, Node>> entries;  ///< map entries in document order
  std::vector<Source> key_sources;                    ///< position of each map key

  /// The last entry with this key (later duplicates are errors anyway), or nullptr.
  [[nodiscard]] const Node* find(const std::string& key) const;
};

/// The entry `key` of a map node, or a null node (absent key, or `map` not a map).
const Node& child_or_null(const Node& map, const std::string& key);

/// The largest YAML text read (configs, model and data files): a mistaken path is refused, not parsed.
inline constexpr std::size_t kMaxTextBytes = std::size_t{16} << 20;

/// Parses YAML text. Syntax errors throw wavel::ConfigError with the position.
Node parse_yaml(const std::string& text, const std::string& file_label);

/// Applies `key.path=value` on top of `root`, as if the file had said it. The value is parsed as
/// YAML and located in the argument itself (file label `--set[N]`, line 1). Throws ConfigError
/// for a malformed argument.
void apply_override(Node& root, const std::string& assignment, int index);

}  // namespace wavel::yaml
