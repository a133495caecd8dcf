// Reading a results.h5 this process did not write: libhdf5 1.10 itself crashes, hangs or exhausts
// memory on forged files, so the reading happens in a forked child with resource limits.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "wavel/io/results.hpp"

namespace wavel::io {

/// What the reading child may use before it is stopped.
struct SandboxLimits {
  std::uint64_t memory_bytes = std::uint64_t{2} << 30;  ///< address space beyond what the process holds at fork
  std::uint32_t cpu_seconds = 60;                       ///< RLIMIT_CPU of the child
  std::uint32_t wall_seconds = 120;                     ///< then the parent kills it
  /// Run first in the child (tests and the fuzz target use it to undo their own crash handlers).
  std::function<void()> child_setup;
};

/// The tables of `path` named in `table_names` (each the `part` of it), as read_table_h5 reads them, read in a forked child
/// with `limits`. Call it before any other thread than the caller's holds a lock the child needs
/// (HDF5 is used only by the caller). Throws what read_table_h5 throws, and InputDataError naming
/// `path` when the child crashes, times out or runs out of its limits.
std::vector<Table> read_tables_h5_sandboxed(const std::string& path, const std::vector<std::string>& table_names,
                                            const SandboxLimits& limits = {}, const TablePart& part = {});

/// The child's answer in its flat encoding, and back; exposed for tests. decode_tables checks every
/// count and size against the bytes it has and throws InputDataError naming `path`.
std::string encode_tables(const std::vector<Table>& tables);
std::vector<Table> decode_tables(const std::string& bytes, const std::string& path);

}  // namespace wavel::io
