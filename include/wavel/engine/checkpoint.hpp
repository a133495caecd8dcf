// Checkpoints of a distributed run: where the finished items' results lie in the spool file, the
// done tasks of the other items with their results, the slots' shared states and the totals, bound
// to the config, the inputs and the task plan by hashes. Tasks named nowhere are open.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "wavel/common/pack.hpp"

namespace wavel::engine {

/// The checkpoint format this build writes and reads. 9: search candidates carry their crossing
/// legs and the link's own time out, and pipeline parts' objectives include the legs; 8: search candidates carry pass and stage
/// cycles, and pipeline parts' objectives are stage objectives; 7: slots as the job's opaque bytes;
/// 6: input fingerprints; 5: pipeline parts and deployments; 4: results carry weight streaming;
/// 3: finished settings in the spool file.
inline constexpr std::uint32_t kCheckpointFormat = 9;

/// One thing the results depend on beyond the resolved config's text: an input file's content or the build.
struct InputFingerprint {
  std::string what;    ///< "build", "model file '/abs/config.json'", "params file '...'"
  std::string digest;  ///< FNV-1a of the content as hex (the build: version, git hash, executable's digest)
};

/// Nothing if `recorded` (from a checkpoint or spool) equals `now`; else what differs, for a message
/// ("the model file '...' changed since", "another build ...").
std::string fingerprint_mismatch(const std::vector<InputFingerprint>& recorded, const std::vector<InputFingerprint>& now);

/// A finished item: its finishing task and its packed result's place in the spool file.
struct SpoolEntry {
  std::uint64_t task = 0;
  std::uint64_t offset = 0, bytes = 0;
  std::uint64_t hash = 0;  ///< FNV-1a of the result's bytes
};

struct Checkpoint {
  std::string config_hash;             ///< of the config's results identity (output section excluded)
  std::vector<InputFingerprint> inputs;  ///< the inputs' contents and the build
  std::uint64_t plan_fingerprint = 0;  ///< of the task list
  std::uint64_t tasks = 0;
  std::vector<SpoolEntry> finished;
  struct Record {
    std::uint64_t task = 0;
    std::string result;
  };
  std::vector<Record> done;            ///< done tasks of items not finished yet
  std::vector<std::string> slots;      ///< per slot: its shared state (empty once its item finished)
  std::int64_t nodes = 0, pruned = 0, evaluations = 0;
  double elapsed_s = 0;                ///< run time before this checkpoint, over all attempts
};

/// Writes `c` to `path` atomically (temporary name, then rename), with a checksum.
void write_checkpoint(const std::string& path, const Checkpoint& c);

/// What can be checked before the task plan exists: the checkpoint is there (else InputMissingError),
/// is a checkpoint, intact, of this build's format and of this config (else exit 65). --resume checks
/// this before it touches anything in the output directory.
void check_checkpoint(const std::string& path, const std::string& config_hash,
                      const std::vector<InputFingerprint>& inputs);

/// Reads and checks a checkpoint: wavel::InputMissingError if absent; wavel::Error with exit code 65
/// if it is not a checkpoint, is truncated or corrupt, or belongs to another config or task plan.
Checkpoint read_checkpoint(const std::string& path, const std::string& config_hash,
                           const std::vector<InputFingerprint>& inputs, std::uint64_t plan_fingerprint,
                           std::uint64_t tasks);

/// Packs what binds a checkpoint or a spool to its run: the config hash, the inputs' fingerprints, the
/// task list's fingerprint and size, in that order (both files start so).
void pack_binding(const std::string& config_hash, const std::vector<InputFingerprint>& inputs,
                  std::uint64_t plan_fingerprint, std::uint64_t tasks, wavel::Packer& p);

/// Packs and unpacks a fingerprint list (the checkpoint and the spool's header both carry one).
void pack_fingerprints(const std::vector<InputFingerprint>& inputs, wavel::Packer& p);
std::vector<InputFingerprint> unpack_fingerprints(wavel::Unpacker& u);

}  // namespace wavel::engine
