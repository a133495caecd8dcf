// The config's keys as docs/config.md shows them, generated from the tables the reader and the
// resolved YAML use (src/config/detail/keys.hpp).
#pragma once

#include <string>
#include <vector>

namespace wavel::config {

/// One key of a section: its name, unit, default and meaning (with its bounds).
struct KeyDoc {
  std::string key;
  std::string unit;
  std::string default_text;
  std::string meaning;
};

/// The sections whose keys are declared in a table, in the resolved YAML's order.
std::vector<std::string> table_sections();

/// The keys of `section` (one of table_sections()); InternalError otherwise.
std::vector<KeyDoc> key_reference(const std::string& section);

}  // namespace wavel::config
