// Text form of a MeshIR schedule: a deterministic printer and a parser that reports every problem.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "wavel/meshir/schedule.hpp"

namespace wavel::meshir {

/// 1-based line of each item in the text a schedule was parsed from. An empty vector, a missing
/// key or a 0 entry means the line is unknown.
struct SourceLines {
  std::vector<int> ops;                ///< parallel to Schedule::ops
  std::vector<int> regions;            ///< parallel to Schedule::regions
  std::vector<int> defects;            ///< parallel to Schedule::defective_pes
  std::vector<int> costed_params;      ///< parallel to Schedule::costed_params
  std::map<std::string, int> header;   ///< keyword ("grid", "colours", ...) -> line
};

/// A parsed schedule with where each part of it came from, so later checks can name lines.
struct ParsedSchedule {
  Schedule schedule;
  SourceLines lines;
};

/// Current version of the text form, written on its first line as `meshir 2` (2 added `repeat=` per op).
inline constexpr int text_format_version = 2;

/// Prints `schedule` in the text form; the same schedule always gives the same text.
std::string print(const Schedule& schedule);

/// The `costed_on` and `param` lines of `schedule` (empty when it records none); print() ends with them.
std::string costed_text(const Schedule& schedule);

/// Parses the text form. Throws wavel::DataError with one Diagnostic per problem found (file
/// label, 1-based line and column, key path, message), all in one pass.
ParsedSchedule parse_with_lines(const std::string& text, const std::string& file_label);

/// parse_with_lines without the line map.
Schedule parse(const std::string& text, const std::string& file_label);

}  // namespace wavel::meshir
