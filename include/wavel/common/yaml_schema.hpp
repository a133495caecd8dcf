// Building blocks for schema validation that collect every error instead of stopping at the first.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "wavel/common/error.hpp"
#include "wavel/common/names.hpp"
#include "wavel/common/yaml_tree.hpp"

namespace wavel::yaml {

/// Closest candidate within a small edit distance, or "" if none is close.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

/// `parent.key`, or `key` at the top level.
std::string join_key(const std::string& parent, const std::string& key);

/// Typed reads of located nodes. Each failed read records a Diagnostic and returns std::nullopt,
/// so one pass reports every problem.
class Validator {
 public:
  void error(const Source& where, const std::string& key_path, const std::string& message);
  [[nodiscard]] const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }
  /// Throws ConfigError with every diagnostic recorded so far, if any.
  void throw_if_errors() const;

  /// True if `node` is a map (a null node counts as an empty map). Reports duplicate keys and
  /// unknown keys, the latter with a "did you mean".
  bool check_map(const Node& node, const std::string& path, const std::vector<std::string>& allowed);

  std::optional<std::int64_t> integer(const Node& node, const std::string& path,
                                      std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                                      std::int64_t max = std::numeric_limits<std::int64_t>::max());
  /// A finite number in [min, max]; `min_exclusive` makes the lower bound strict.
  std::optional<double> number(const Node& node, const std::string& path, double min, double max,
                               bool min_exclusive = false);
  std::optional<bool> boolean(const Node& node, const std::string& path);
  std::optional<std::string> string(const Node& node, const std::string& path);
  /// One of `options`, with a "did you mean" otherwise.
  std::optional<std::string> choice(const Node& node, const std::string& path,
                                    const std::vector<std::string>& options);
  /// One of the names of an enum's table, as its value.
  template <class Enum, std::size_t N>
  std::optional<Enum> choice_of(const Node& node, const std::string& path, const NameTable<Enum, N>& names) {
    const auto s = choice(node, path, names_in(names));
    return s ? value_of(names, *s) : std::nullopt;
  }

  /// A scalar or a sequence of scalars, each read by `read(node, path)`; a sweep axis.
  /// Reports an empty list. Items that fail are dropped.
  template <class Read>
  auto axis(const Node& node, const std::string& path, Read read)
      -> std::vector<typename decltype(read(node, path))::value_type> {
    std::vector<typename decltype(read(node, path))::value_type> values;
    if (node.kind == Node::Kind::sequence) {
      if (node.items.empty()) error(node.where, path, "expected at least one value");
      for (std::size_t i = 0; i < node.items.size(); ++i) {
        if (auto v = read(node.items[i], path + "[" + std::to_string(i) + "]")) values.push_back(*v);
      }
    } else if (auto v = read(node, path)) {
      values.push_back(*v);
    }
    return values;
  }

 private:
  bool expect_scalar(const Node& node, const std::string& path, const char* what);
  std::vector<Diagnostic> diagnostics_;
};

/// A data file's root map (a measurement or reference file: its problems exit 65, not 78): `text`
/// parsed, a syntax error or a root that is no map thrown as wavel::DataError naming `file_label`;
/// a missing `required` key or a key in neither list recorded in `v`.
Node parse_data_map(const std::string& text, const std::string& file_label, Validator& v,
                    const std::vector<std::string>& required, const std::vector<std::string>& optional);

}  // namespace wavel::yaml
