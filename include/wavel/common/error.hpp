// Typed errors thrown by library code; only main() maps them to process exit codes.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace wavel {

/// Process exit codes (sysexits.h values), chosen by the kind of error.
enum class ExitCode : int {
  ok = 0,
  usage = 64,         ///< bad command line
  data_error = 65,    ///< input data (not the config) is malformed
  no_input = 66,      ///< an input file does not exist or cannot be read
  busy = 69,          ///< the output directory is locked by another run (EX_UNAVAILABLE)
  internal = 70,      ///< a bug or an unexpected library failure
  cant_create = 73,   ///< output cannot be created or written
  checkpointed = 75,  ///< stopped early after a checkpoint; requeue
  config = 78,        ///< the configuration is invalid
};

/// One located problem in an input file, printed as `file:LINE:COL: error: key.path: message`.
struct Diagnostic {
  std::string file;
  int line = 0;    ///< 1-based; 0 when unknown
  int column = 0;  ///< 1-based; 0 when unknown
  std::string key_path;
  std::string message;

  [[nodiscard]] std::string format() const;
};

/// Base of every error the library throws; carries the exit code main() should use.
class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& what) : std::runtime_error(what), code_(code) {}
  [[nodiscard]] ExitCode code() const noexcept { return code_; }

 private:
  ExitCode code_;
};

/// One or more located problems in a config (exit 78) or a data file (exit 65).
class DiagnosticError : public Error {
 public:
  DiagnosticError(ExitCode code, std::vector<Diagnostic> diagnostics);
  [[nodiscard]] const std::vector<Diagnostic>& diagnostics() const noexcept { return diagnostics_; }

 private:
  std::vector<Diagnostic> diagnostics_;
};

/// Invalid configuration: every problem found, all at once.
class ConfigError : public DiagnosticError {
 public:
  explicit ConfigError(std::vector<Diagnostic> diagnostics)
      : DiagnosticError(ExitCode::config, std::move(diagnostics)) {}
};

/// Malformed input data such as a HF config.json or a reference file.
class DataError : public DiagnosticError {
 public:
  explicit DataError(std::vector<Diagnostic> diagnostics)
      : DiagnosticError(ExitCode::data_error, std::move(diagnostics)) {}
};

/// Throws DataError with `diagnostics` in file order (line, then column): data files are read
/// section by section, but their problems are listed as the file reads.
[[noreturn]] void throw_data_error_in_file_order(std::vector<Diagnostic> diagnostics);

/// Malformed binary input (an HDF5 file, a checkpoint) where no line position applies: exit 65.
class InputDataError : public Error {
 public:
  explicit InputDataError(const std::string& what) : Error(ExitCode::data_error, what) {}
};

/// A named input file is missing or unreadable.
class InputMissingError : public Error {
 public:
  explicit InputMissingError(const std::string& what) : Error(ExitCode::no_input, what) {}
};

/// Output could not be created or written.
class OutputError : public Error {
 public:
  explicit OutputError(const std::string& what) : Error(ExitCode::cant_create, what) {}
};

/// Bad command-line usage.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& what) : Error(ExitCode::usage, what) {}
};

/// A broken invariant inside the tool.
class InternalError : public Error {
 public:
  explicit InternalError(const std::string& what) : Error(ExitCode::internal, what) {}
};

/// Work given up because a stop was requested (a search piece, a task of the engine): not an
/// error, so not a wavel::Error; the work stays open and runs again on --resume.
struct Cancelled : std::exception {
  [[nodiscard]] const char* what() const noexcept override { return "cancelled by a stop request"; }
};

}  // namespace wavel
