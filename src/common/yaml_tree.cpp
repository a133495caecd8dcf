// Converts yaml-cpp nodes into located Nodes and applies --set overrides.
#include "wavel/common/yaml_tree.hpp"

#include <yaml-cpp/yaml.h>

#include "wavel/common/yaml_budget.hpp"

#include <string>
#include <vector>

namespace wavel::yaml {

const Node* Node::find(const std::string& key) const {
  const Node* found = nullptr;
  for (const auto& [k, v] : entries) {
    if (k == key) found = &v;
  }
  return found;
}

namespace {

Source source_of(const YAML::Mark& mark, const std::string& file, int line_offset, int column_offset) {
  // yaml-cpp marks are 0-based; a mark of -1 means unknown.
  if (mark.line < 0) return Source{file, 0, 0};
  return Source{file, mark.line + 1 + line_offset, mark.column + 1 + column_offset};
}

// Hostile YAML: an alias can point at its own ancestor (yaml-cpp then builds a cyclic graph) or be
// repeated level after level (an "alias bomb" that expands exponentially). Both are refused.
constexpr int kMaxDepth = 64;
constexpr std::size_t kMaxNodes = 200000;  // after alias expansion; real configs have a few hundred

struct Budget {
  std::string file;
  int column_offset = 0;
  std::size_t nodes = 0;
  std::vector<YAML::Node> ancestors;  // the open sequences and maps, outermost first
};

[[noreturn]] void refuse(const YAML::Node& at, const Budget& b, const std::string& message) {
  const Source where = source_of(at.Mark(), b.file, 0, b.column_offset);
  throw ConfigError({Diagnostic{where.file, where.line, where.column, "", message}});
}

Node convert(const YAML::Node& yaml, Budget& b, const Source& fallback) {
  Node node;
  node.where = fallback;
  switch (yaml.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      node.kind = Node::Kind::null;
      return node;  // yaml-cpp places empty values on the next line; keep the key's position
    default:
      break;
  }
  if (++b.nodes > kMaxNodes) {
    refuse(yaml, b, "too many YAML nodes after expanding aliases (limit " + std::to_string(kMaxNodes) + ")");
  }
  const int column_offset = b.column_offset;
  node.where = source_of(yaml.Mark(), b.file, 0, column_offset);
  if (yaml.IsSequence() || yaml.IsMap()) {
    for (const auto& ancestor : b.ancestors) {
      if (ancestor.is(yaml)) refuse(yaml, b, "recursive YAML alias (a node that contains itself)");
    }
    if (static_cast<int>(b.ancestors.size()) >= kMaxDepth) {
      refuse(yaml, b, "YAML nested deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    b.ancestors.push_back(yaml);
  }
  switch (yaml.Type()) {
    case YAML::NodeType::Scalar:
      node.kind = Node::Kind::scalar;
      node.scalar = yaml.Scalar();
      node.quoted = yaml.Tag() == "!";
      break;
    case YAML::NodeType::Sequence:
      node.kind = Node::Kind::sequence;
      for (const auto& item : yaml) node.items.push_back(convert(item, b, node.where));
      break;
    case YAML::NodeType::Map:
      node.kind = Node::Kind::map;
      for (auto it = yaml.begin(); it != yaml.end(); ++it) {
        Source key_where = source_of(it->first.Mark(), b.file, 0, column_offset);
        std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string("<complex key>");
        node.entries.emplace_back(key, convert(it->second, b, key_where));
        node.key_sources.push_back(key_where);
      }
      break;
    default:
      break;
  }
  if (yaml.IsSequence() || yaml.IsMap()) b.ancestors.pop_back();
  return node;
}

Node parse_located(const std::string& text, const std::string& file, int column_offset) {
  if (text.size() > kMaxTextBytes) {
    throw ConfigError({Diagnostic{file, 0, 0, "", "input is " + std::to_string(text.size()) +
                                                      " bytes; the limit is " + std::to_string(kMaxTextBytes)}});
  }
  if (const auto over = first_node_past(text, kMaxNodes)) {
    throw ConfigError({Diagnostic{file, over->line, over->column + (over->line == 1 ? column_offset : 0), "",
                                  "too many YAML nodes (limit " + std::to_string(kMaxNodes) +
                                      "); a sweep this large is written as axes (workloads.models, phases, "
                                      "concurrent_requests, input_tokens, ...), whose product the tool expands, "
                                      "rather than case by case"}});
  }
  YAML::Node yaml;
  try {
    yaml = YAML::Load(text);
  } catch (const YAML::Exception& e) {  // DeepRecursion (nesting past yaml-cpp's guard) included
    throw ConfigError({Diagnostic{file, e.mark.line + 1, e.mark.column + 1 + column_offset, "",
                                  "invalid YAML: " + e.msg}});
  }
  Budget budget{file, column_offset, 0, {}};
  return convert(yaml, budget, Source{file, 1, 1 + column_offset});
}

}  // namespace

Node parse_yaml(const std::string& text, const std::string& file_label) {
  return parse_located(text, file_label, 0);
}

void apply_override(Node& root, const std::string& assignment, int index) {
  const std::string label = "--set[" + std::to_string(index) + "]";
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw ConfigError({Diagnostic{label, 1, 1, "", "expected key.path=value, got '" + assignment + "'"}});
  }
  const std::string path = assignment.substr(0, eq);
  std::vector<std::string> keys;
  for (std::size_t start = 0;;) {
    const auto dot = path.find('.', start);
    keys.push_back(path.substr(start, dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  for (const auto& key : keys) {
    if (key.empty()) throw ConfigError({Diagnostic{label, 1, 1, path, "empty key in key path"}});
  }
  Node value = parse_located(assignment.substr(eq + 1), label, static_cast<int>(eq) + 1);
  if (value.kind == Node::Kind::null) value.where = Source{label, 1, static_cast<int>(eq) + 2};

  if (root.kind == Node::Kind::null) root.kind = Node::Kind::map;
  Node* cursor = &root;
  std::string walked;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (cursor->kind != Node::Kind::map) {
      throw ConfigError({Diagnostic{label, 1, 1, walked, "cannot set '" + keys[i] + "' inside a value that is not a map"}});
    }
    walked += (walked.empty() ? "" : ".") + keys[i];
    Node* next = nullptr;
    for (auto& [k, v] : cursor->entries) {
      if (k == keys[i]) next = &v;  // the last duplicate wins, as in find()
    }
    if (i + 1 == keys.size()) {
      if (next != nullptr) {
        *next = value;
      } else {
        cursor->entries.emplace_back(keys[i], value);
        cursor->key_sources.push_back(Source{label, 1, 1});
      }
      return;
    }
    if (next == nullptr) {
      Node map;
      map.kind = Node::Kind::map;
      map.where = Source{label, 1, 1};
      cursor->entries.emplace_back(keys[i], map);
      cursor->key_sources.push_back(Source{label, 1, 1});
      next = &cursor->entries.back().second;
    }
    cursor = next;
  }
}

const Node& child_or_null(const Node& map, const std::string& key) {
  static const Node null_node;
  const Node* found = map.kind == Node::Kind::map ? map.find(key) : nullptr;
  return found != nullptr ? *found : null_node;
}

}  // namespace wavel::yaml
