// Formatting of located diagnostics.
#include "wavel/common/error.hpp"

#include "wavel/common/text.hpp"

#include <algorithm>
#include <sstream>

namespace wavel {

std::string Diagnostic::format() const {
  std::ostringstream out;
  // Everything here may come from a file: printed, it cannot drive the terminal.
  out << printable(file);
  if (line > 0) {
    out << ':' << line;
    if (column > 0) out << ':' << column;
  }
  out << ": error: ";
  if (!key_path.empty()) out << printable(key_path) << ": ";
  out << printable(message);
  return out.str();
}

namespace {
std::string join_diagnostics(const std::vector<Diagnostic>& diagnostics) {
  std::string text;
  for (const auto& d : diagnostics) {
    if (!text.empty()) text += '\n';
    text += d.format();
  }
  return text;
}
}  // namespace

DiagnosticError::DiagnosticError(ExitCode code, std::vector<Diagnostic> diagnostics)
    : Error(code, join_diagnostics(diagnostics)), diagnostics_(std::move(diagnostics)) {}

void throw_data_error_in_file_order(std::vector<Diagnostic> diagnostics) {
  std::stable_sort(diagnostics.begin(), diagnostics.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return a.line != b.line ? a.line < b.line : a.column < b.column;
  });
  throw DataError(std::move(diagnostics));
}

}  // namespace wavel
