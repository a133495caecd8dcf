// The run's config on every rank, the model files read once (see commands.hpp).
#include <mpi.h>

#include <exception>
#include <iostream>
#include <optional>

#include "wavel/commands/commands.hpp"
#include "wavel/common/error.hpp"
#include "wavel/common/pack.hpp"
#include "wavel/engine/runtime.hpp"

namespace wavel::driver {

config::Config parse_config_on_ranks(const std::string& text, const std::string& file,
                                     const std::vector<std::string>& overrides, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  config::InputTexts texts;
  std::optional<config::Config> config;
  std::exception_ptr failure;
  int code = 0;
  if (rank == 0) {
    try {
      config = config::parse_config(text, file, overrides, &texts);
      for (const auto& note : config->notes) std::cerr << "wavel-dse: note: " << note << '\n';
    } catch (const Error& e) {
      failure = std::current_exception();
      code = static_cast<int>(e.code());
    } catch (...) {
      failure = std::current_exception();
      code = static_cast<int>(ExitCode::internal);
    }
  }
  MPI_Bcast(&code, 1, MPI_INT, 0, comm);
  if (code != 0) {
    if (failure) std::rethrow_exception(failure);
    throw Error(static_cast<ExitCode>(code), "the config could not be read (rank 0 says why)");
  }
  Packer packed;
  if (rank == 0) {
    packed.put(static_cast<std::uint64_t>(texts.size()));
    for (const auto& [path, bytes] : texts) {
      packed.put(path);
      packed.put(bytes);
    }
  }
  std::string bytes = packed.take();
  engine::broadcast_string(bytes, comm, 0);
  if (rank == 0) return std::move(*config);
  Unpacker u(bytes);
  for (std::uint64_t n = u.get<std::uint64_t>(); n > 0; --n) {
    std::string path, content;
    u.get(path);
    u.get(content);
    texts.emplace(std::move(path), std::move(content));
  }
  return config::parse_config(text, file, overrides, &texts);
}

}  // namespace wavel::driver
