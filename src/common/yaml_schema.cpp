// Typed, located reads of YAML nodes with "did you mean" suggestions.
#include "wavel/common/yaml_schema.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>

namespace wavel::yaml {

namespace {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + cost});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string list_options(const std::vector<std::string>& options) {
  std::string text;
  for (const auto& o : options) text += (text.empty() ? "" : ", ") + o;
  return text;
}

std::string kind_name(const Node& node) {
  switch (node.kind) {
    case Node::Kind::null: return "nothing";
    case Node::Kind::scalar: return node.quoted ? "the string \"" + node.scalar + "\"" : "'" + node.scalar + "'";
    case Node::Kind::sequence: return "a list";
    case Node::Kind::map: return "a map";
  }
  return "?";
}

}  // namespace

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    // The distance is at least the length difference: skip the O(|word| x |c|) table when that
    // alone rules c out (a hostile multi-kilobyte key then costs one comparison per candidate).
    const std::size_t gap = word.size() > c.size() ? word.size() - c.size() : c.size() - word.size();
    if (gap >= best_distance) continue;
    const std::size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

std::string join_key(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

void Validator::error(const Source& where, const std::string& key_path, const std::string& message) {
  diagnostics_.push_back(Diagnostic{where.file, where.line, where.column, key_path, message});
}

void Validator::throw_if_errors() const {
  if (diagnostics_.empty()) return;
  // Report in input order: file by file, then line and column.
  auto sorted = diagnostics_;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Diagnostic& a, const Diagnostic& b) {
    if (a.file != b.file) return a.file < b.file;
    if (a.line != b.line) return a.line < b.line;
    return a.column < b.column;
  });
  throw ConfigError(std::move(sorted));
}

bool Validator::check_map(const Node& node, const std::string& path, const std::vector<std::string>& allowed) {
  if (node.kind == Node::Kind::null) return true;
  if (node.kind != Node::Kind::map) {
    error(node.where, path, "expected a map, got " + kind_name(node));
    return false;
  }
  std::map<std::string, std::size_t> first_seen;
  for (std::size_t i = 0; i < node.entries.size(); ++i) {
    const auto& key = node.entries[i].first;
    const auto& where = node.key_sources[i];
    const std::string key_path = join_key(path, key);
    if (auto [it, inserted] = first_seen.emplace(key, i); !inserted) {
      const auto& first = node.key_sources[it->second];
      error(where, key_path, "duplicate key (first given at line " + std::to_string(first.line) + ")");
      continue;
    }
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      const std::string suggestion = did_you_mean(key, allowed);
      error(where, key_path,
            "unknown key" + (suggestion.empty() ? std::string("; expected one of: ") + list_options(allowed)
                                                : "; did you mean '" + suggestion + "'?"));
    }
  }
  return true;
}

bool Validator::expect_scalar(const Node& node, const std::string& path, const char* what) {
  if (node.kind == Node::Kind::scalar && !node.quoted) return true;
  error(node.where, path, std::string("expected ") + what + ", got " + kind_name(node));
  return false;
}

std::optional<std::int64_t> Validator::integer(const Node& node, const std::string& path, std::int64_t min,
                                               std::int64_t max) {
  if (!expect_scalar(node, path, "an integer")) return std::nullopt;
  const std::string& s = node.scalar;
  std::int64_t value = 0;
  const char* first = s.data();
  if (!s.empty() && s[0] == '+') ++first;
  const auto [end, ec] = std::from_chars(first, s.data() + s.size(), value);
  if (ec == std::errc::result_out_of_range) {
    error(node.where, path, "integer '" + s + "' is out of range");
    return std::nullopt;
  }
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) {
    error(node.where, path, "expected an integer, got '" + s + "'");
    return std::nullopt;
  }
  if (value < min || value > max) {
    std::string range = value < min ? "must be >= " + std::to_string(min) : "must be <= " + std::to_string(max);
    error(node.where, path, range + ", got " + s);
    return std::nullopt;
  }
  return value;
}

std::optional<double> Validator::number(const Node& node, const std::string& path, double min, double max,
                                        bool min_exclusive) {
  if (!expect_scalar(node, path, "a number")) return std::nullopt;
  const std::string& s = node.scalar;
  char* end = nullptr;
  const double value = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || std::isspace(static_cast<unsigned char>(s[0]))) {
    error(node.where, path, "expected a number, got '" + s + "'");
    return std::nullopt;
  }
  if (!std::isfinite(value)) {
    error(node.where, path, "expected a finite number, got '" + s + "'");
    return std::nullopt;
  }
  if (value < min || (min_exclusive && value == min)) {
    std::ostringstream m;
    m << "must be " << (min_exclusive ? "> " : ">= ") << min << ", got " << s;
    error(node.where, path, m.str());
    return std::nullopt;
  }
  if (value > max) {
    std::ostringstream m;
    m << "must be <= " << max << ", got " << s;
    error(node.where, path, m.str());
    return std::nullopt;
  }
  return value;
}

std::optional<bool> Validator::boolean(const Node& node, const std::string& path) {
  if (!expect_scalar(node, path, "true or false")) return std::nullopt;
  const std::string& s = node.scalar;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  error(node.where, path, "expected true or false, got '" + s + "'");
  return std::nullopt;
}

std::optional<std::string> Validator::string(const Node& node, const std::string& path) {
  if (node.kind != Node::Kind::scalar) {
    error(node.where, path, "expected a string, got " + kind_name(node));
    return std::nullopt;
  }
  return node.scalar;
}

std::optional<std::string> Validator::choice(const Node& node, const std::string& path,
                                             const std::vector<std::string>& options) {
  auto s = string(node, path);
  if (!s) return std::nullopt;
  if (std::find(options.begin(), options.end(), *s) != options.end()) return s;
  const std::string suggestion = did_you_mean(*s, options);
  error(node.where, path,
        "unknown value '" + *s + "'" +
            (suggestion.empty() ? "; expected one of: " + list_options(options)
                                : "; did you mean '" + suggestion + "'?"));
  return std::nullopt;
}

Node parse_data_map(const std::string& text, const std::string& file_label, Validator& v,
                    const std::vector<std::string>& required, const std::vector<std::string>& optional) {
  Node root;
  try {
    root = parse_yaml(text, file_label);
  } catch (const ConfigError& e) {
    throw_data_error_in_file_order(e.diagnostics());
  }
  if (root.kind != Node::Kind::map) {
    Validator top;
    top.error(root.where, "", "expected a map with keys " + list_options(required));
    throw_data_error_in_file_order(top.diagnostics());
  }
  std::vector<std::string> allowed = required;
  allowed.insert(allowed.end(), optional.begin(), optional.end());
  v.check_map(root, "", allowed);
  for (const auto& key : required) {
    if (root.find(key) == nullptr) v.error(root.where, key, "missing required key");
  }
  return root;
}

}  // namespace wavel::yaml
