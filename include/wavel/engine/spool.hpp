// The spool: an append-only file of the finished items' results, kept by rank 0's hub so that neither
// its memory nor its checkpoints grow with the items already finished. It describes itself (a header
// binding it to the config, the inputs and the task plan; each record's task, size and hash), so a run
// stopped after its last item, or without any checkpoint, resumes from it alone.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "wavel/engine/checkpoint.hpp"

namespace wavel::engine {

/// What a spool belongs to.
struct SpoolHeader {
  std::string config_hash;
  std::vector<InputFingerprint> inputs;
  std::uint64_t plan_fingerprint = 0;
  std::uint64_t tasks = 0;
};

class Spool {
 public:
  /// A spool at `path` holding only `header` (OutputError if it cannot be created); "" keeps it in memory.
  static Spool create(const std::string& path, const SpoolHeader& header);
  /// The spool of an interrupted run, for --resume: its header must match `expected` (InputDataError
  /// naming what differs; InputMissingError if absent). Every intact record is put in `records` in file
  /// order; a torn tail (an append cut short by a kill or a full disk) is cut off.
  static Spool recover(const std::string& path, const SpoolHeader& expected, std::vector<SpoolEntry>& records);
  /// Checks the header's config hash and inputs only, as --resume does before it touches anything.
  static void check(const std::string& path, const std::string& config_hash, const std::vector<InputFingerprint>& inputs);

  Spool() = default;
  Spool(Spool&& other) noexcept;
  Spool& operator=(Spool&& other) noexcept;
  Spool(const Spool&) = delete;
  Spool& operator=(const Spool&) = delete;
  ~Spool();

  /// Appends a finished item's result (OutputError on a write failure).
  SpoolEntry append(std::uint64_t task, const std::string& bytes);
  /// Makes everything appended durable, before a checkpoint names it (OutputError).
  void sync();
  /// Reads an entry back; InputDataError naming the file if it is short or its hash differs.
  [[nodiscard]] std::string read(const SpoolEntry& entry) const;
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
  std::string memory_;  ///< the spool when it has no path
  std::uint64_t end_ = 0;
};

}  // namespace wavel::engine
