// Helpers shared by the doctest files: per-test scratch directories and file reading.
#pragma once

#include <mpi.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include "wavel/common/error.hpp"

namespace wavel::test {

/// A scratch directory unique to this test name and rank count, created empty by rank 0.
inline std::filesystem::path scratch_dir(const std::string& name) {
  int ranks = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  auto dir = std::filesystem::path(WAVEL_TEST_TMP_DIR) / (name + "-np" + std::to_string(ranks));
  if (rank == 0) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return dir;
}

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline std::filesystem::path source_path(const std::string& relative) {
  return std::filesystem::path(WAVEL_SOURCE_DIR) / relative;
}

/// The error a callable throws, as (exit code, message); code ok if it returned.
template <class F>
std::pair<wavel::ExitCode, std::string> outcome(F&& f) {
  try {
    f();
  } catch (const wavel::Error& e) {
    return {e.code(), e.what()};
  }
  return {wavel::ExitCode::ok, ""};
}

}  // namespace wavel::test
