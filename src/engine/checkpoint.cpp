// Checkpoint file: a magic line, packed records, then an FNV-1a checksum of everything before it.
#include "wavel/engine/checkpoint.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "wavel/common/error.hpp"
#include "wavel/common/hash.hpp"
#include "wavel/common/output_file.hpp"
#include "wavel/io/results.hpp"

namespace wavel::engine {

namespace {

constexpr const char* kMagic = "WAVEL-DSE CHECKPOINT\n";
/// Far above any real checkpoint (12 MB at 10^5 settings): /dev/zero or a stray file is refused at once.
constexpr std::uint64_t kMaxCheckpointBytes = std::uint64_t{1} << 30;
constexpr std::uint32_t kFormat = kCheckpointFormat;

}  // namespace

std::string fingerprint_mismatch(const std::vector<InputFingerprint>& recorded, const std::vector<InputFingerprint>& now) {
  std::string why;
  const auto note = [&](const std::string& text) { why += (why.empty() ? "" : "; ") + text; };
  for (const auto& r : recorded) {
    const auto it = std::find_if(now.begin(), now.end(), [&](const InputFingerprint& n) { return n.what == r.what; });
    if (it == now.end()) {
      note("it read the " + r.what + ", which this run does not");
    } else if (it->digest != r.digest) {
      note(r.what == "build" ? "it was written by another build (" + r.digest + "; this is " + it->digest + ")"
                             : "the " + r.what + " changed since (content digest " + r.digest + ", now " + it->digest + ")");
    }
  }
  for (const auto& n : now) {
    const auto it = std::find_if(recorded.begin(), recorded.end(), [&](const InputFingerprint& r) { return r.what == n.what; });
    if (it == recorded.end()) note("this run reads the " + n.what + ", which it did not");
  }
  return why;
}

void pack_binding(const std::string& config_hash, const std::vector<InputFingerprint>& inputs,
                  std::uint64_t plan_fingerprint, std::uint64_t tasks, Packer& p) {
  p.put(config_hash);
  pack_fingerprints(inputs, p);
  p.put(plan_fingerprint);
  p.put(tasks);
}

void pack_fingerprints(const std::vector<InputFingerprint>& inputs, Packer& p) {
  p.put(static_cast<std::uint64_t>(inputs.size()));
  for (const auto& i : inputs) {
    p.put(i.what);
    p.put(i.digest);
  }
}

std::vector<InputFingerprint> unpack_fingerprints(Unpacker& u) {
  std::vector<InputFingerprint> inputs(u.count(2 * sizeof(std::uint64_t)));
  for (auto& i : inputs) {
    u.get(i.what);
    u.get(i.digest);
  }
  return inputs;
}

void write_checkpoint(const std::string& path, const Checkpoint& c) {
  Packer p;
  p.put(kFormat);
  pack_binding(c.config_hash, c.inputs, c.plan_fingerprint, c.tasks, p);
  p.put(static_cast<std::uint64_t>(c.finished.size()));
  for (const auto& f : c.finished) {
    p.put(f.task);
    p.put(f.offset);
    p.put(f.bytes);
    p.put(f.hash);
  }
  p.put(static_cast<std::uint64_t>(c.done.size()));
  for (const auto& r : c.done) {
    p.put(r.task);
    p.put(r.result);
  }
  p.put(static_cast<std::uint64_t>(c.slots.size()));
  for (const auto& slot : c.slots) p.put(slot);
  p.put(c.nodes);
  p.put(c.pruned);
  p.put(c.evaluations);
  p.put(c.elapsed_s);
  std::string text = kMagic + p.bytes();
  const std::uint64_t sum = fnv1a64(text);
  text.append(reinterpret_cast<const char*>(&sum), sizeof sum);
  io::write_file_atomically(path, text);
}

namespace {

InputDataError bad_checkpoint(const std::string& path, const std::string& why) {
  return InputDataError("--resume: checkpoint '" + path + "' " + why + "; refusing to start over");
}

// The packed records of the checkpoint at `path` once its presence, magic and checksum are checked.
std::string checked_records(const std::string& path) {
  // Not a regular file (a FIFO would block the open, /dev/zero never ends): refused before reading.
  const int fd = open_regular_file(path, O_RDONLY);
  if (fd < 0 && errno == ENOENT) {
    throw InputMissingError("--resume: no checkpoint at '" + path + "' (run without --resume to start afresh)");
  }
  if (fd < 0) throw bad_checkpoint(path, "cannot be read: " + open_error_text(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<std::uint64_t>(st.st_size) > kMaxCheckpointBytes) {
    ::close(fd);
    throw bad_checkpoint(path, "is " + std::to_string(st.st_size) + " bytes, more than the " +
                                   std::to_string(kMaxCheckpointBytes >> 20) + " MiB a checkpoint can be");
  }
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  const int read_errno = errno;
  ::close(fd);
  if (got != text.size()) {
    throw bad_checkpoint(path, "could not be read whole (" + std::string(std::strerror(read_errno)) + ")");
  }
  const std::string magic = kMagic;
  if (text.compare(0, magic.size(), magic) != 0) throw bad_checkpoint(path, "is not a wavel-dse checkpoint");
  if (text.size() < magic.size() + sizeof(std::uint64_t)) throw bad_checkpoint(path, "is truncated");
  std::uint64_t sum = 0;
  std::memcpy(&sum, text.data() + text.size() - sizeof sum, sizeof sum);
  const std::string body = text.substr(0, text.size() - sizeof sum);
  if (fnv1a64(body) != sum) throw bad_checkpoint(path, "is corrupt (checksum mismatch)");
  return body.substr(magic.size());
}

// Reads the format and the config hash and checks both.
void check_header(Unpacker& u, const std::string& path, const std::string& config_hash,
                  const std::vector<InputFingerprint>& inputs, Checkpoint& out) {
  const auto format = u.get<std::uint32_t>();
  if (format != kFormat) {
    throw bad_checkpoint(path, "has format " + std::to_string(format) + ", this build reads " + std::to_string(kFormat));
  }
  u.get(out.config_hash);
  if (out.config_hash != config_hash) {
    throw bad_checkpoint(path, "belongs to another config (hash " + out.config_hash + ", this config " + config_hash + ")");
  }
  out.inputs = unpack_fingerprints(u);
  const std::string changed = fingerprint_mismatch(out.inputs, inputs);
  if (!changed.empty()) throw bad_checkpoint(path, "does not match this run's inputs: " + changed);
}

}  // namespace

void check_checkpoint(const std::string& path, const std::string& config_hash,
                      const std::vector<InputFingerprint>& inputs) {
  const std::string packed = checked_records(path);
  try {
    Unpacker u(packed, ExitCode::data_error);
    Checkpoint header;
    check_header(u, path, config_hash, inputs, header);
  } catch (const InputDataError&) {
    throw;
  } catch (const Error& e) {
    throw bad_checkpoint(path, std::string("is malformed: ") + e.what());
  }
}

Checkpoint read_checkpoint(const std::string& path, const std::string& config_hash,
                           const std::vector<InputFingerprint>& inputs, std::uint64_t plan_fingerprint,
                           std::uint64_t tasks) {
  const std::string packed = checked_records(path);
  const auto bad = [&](const std::string& why) { return bad_checkpoint(path, why); };
  Checkpoint c;
  try {
    Unpacker u(packed, ExitCode::data_error);
    check_header(u, path, config_hash, inputs, c);
    u.get(c.plan_fingerprint);
    u.get(c.tasks);
    if (c.plan_fingerprint != plan_fingerprint || c.tasks != tasks) {
      throw bad("was written for another task plan (" + std::to_string(c.tasks) + " tasks, this run has " +
                std::to_string(tasks) + "; a different build or sweep slice?)");
    }
    std::vector<bool> seen(tasks, false);  // every task named once at most
    const auto mark = [&](std::uint64_t t) {
      if (t >= tasks) throw bad("names task " + std::to_string(t) + " of " + std::to_string(tasks));
      if (seen[t]) throw bad("names task " + std::to_string(t) + " twice");
      seen[t] = true;
    };
    c.finished.resize(u.count(4 * sizeof(std::uint64_t)));
    for (auto& f : c.finished) {
      u.get(f.task);
      u.get(f.offset);
      u.get(f.bytes);
      u.get(f.hash);
      mark(f.task);
      if (f.bytes > (std::uint64_t{1} << 40) || f.offset > (std::uint64_t{1} << 50)) {
        throw bad("places task " + std::to_string(f.task) + "'s result at an impossible spool offset or size");
      }
    }
    c.done.resize(u.count(sizeof(std::uint64_t) + sizeof(std::uint64_t)));
    for (auto& r : c.done) {
      u.get(r.task);
      u.get(r.result);
      mark(r.task);
    }
    c.slots.resize(u.count(sizeof(std::uint64_t)));
    for (auto& slot : c.slots) u.get(slot);
    u.get(c.nodes);
    u.get(c.pruned);
    u.get(c.evaluations);
    u.get(c.elapsed_s);
    if (!u.done()) throw bad("has trailing bytes");
  } catch (const InputDataError&) {
    throw;
  } catch (const Error& e) {  // a truncated record or an impossible count
    throw bad(std::string("is malformed: ") + e.what());
  }
  return c;
}

}  // namespace wavel::engine
