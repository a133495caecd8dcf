// Checkpoints of a distributed sweep: where the finished settings' results lie in the spool file,
// the done tasks of the other settings with their results, the settings' incumbent fronts and the
// totals, bound to the config and the task plan by hashes. Tasks named nowhere are open.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "wavel/search/pareto.hpp"

namespace wavel::driver {

struct Checkpoint {
  std::string config_hash;             ///< of the config's results identity (output section excluded)
  std::uint64_t plan_fingerprint = 0;  ///< of the task list
  std::uint64_t tasks = 0;
  /// A finished setting: its finishing task and its packed result's place in the spool file.
  struct Finished {
    std::uint64_t task = 0;
    std::uint64_t offset = 0, bytes = 0;
    std::uint64_t hash = 0;            ///< FNV-1a of the result's bytes
  };
  std::vector<Finished> finished;
  struct Record {
    std::uint64_t task = 0;
    std::string result;
  };
  std::vector<Record> done;            ///< done tasks of settings not finished yet
  std::vector<std::vector<search::Objectives>> incumbents;  ///< per setting: the best schedules so far (empty once finished)
  std::int64_t nodes = 0, pruned = 0, evaluations = 0;
  double elapsed_s = 0;                ///< run time before this checkpoint, over all attempts
};

/// Writes `c` to `path` atomically (temporary name, then rename), with a checksum.
void write_checkpoint(const std::string& path, const Checkpoint& c);

/// What can be checked before the task plan exists: the checkpoint is there (else InputMissingError),
/// is a checkpoint, intact, of this build's format and of this config (else exit 65). --resume checks
/// this before it touches anything in the output directory.
void check_checkpoint(const std::string& path, const std::string& config_hash);

/// Reads and checks a checkpoint: wavel::InputMissingError if absent; wavel::Error with exit code 65
/// if it is not a checkpoint, is truncated or corrupt, or belongs to another config or task plan.
Checkpoint read_checkpoint(const std::string& path, const std::string& config_hash, std::uint64_t plan_fingerprint,
                           std::uint64_t tasks);

}  // namespace wavel::driver
