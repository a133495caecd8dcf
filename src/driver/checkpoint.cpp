// Checkpoint file: a magic line, packed records, then an FNV-1a checksum of everything before it.
#include "wavel/driver/checkpoint.hpp"

#include <fstream>
#include <sstream>

#include "wavel/common/error.hpp"
#include "wavel/common/hash.hpp"
#include "wavel/driver/pack.hpp"
#include "wavel/io/results.hpp"

namespace wavel::driver {

namespace {

constexpr const char* kMagic = "WAVEL-DSE CHECKPOINT\n";
constexpr std::uint32_t kFormat = 5;  // 5: pipeline parts and deployments; 4: results carry weight streaming; 3: finished settings in the spool file

}  // namespace

void write_checkpoint(const std::string& path, const Checkpoint& c) {
  Packer p;
  p.put(kFormat);
  p.put(c.config_hash);
  p.put(c.plan_fingerprint);
  p.put(c.tasks);
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
  p.put(static_cast<std::uint64_t>(c.incumbents.size()));
  for (const auto& front : c.incumbents) pack_objectives(front, p);
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
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw InputMissingError("--resume: no checkpoint at '" + path + "' (run without --resume to start afresh)");
  }
  std::ostringstream bytes;
  bytes << in.rdbuf();
  const std::string text = bytes.str();
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
void check_header(Unpacker& u, const std::string& path, const std::string& config_hash, std::string& hash_out) {
  const auto format = u.get<std::uint32_t>();
  if (format != kFormat) {
    throw bad_checkpoint(path, "has format " + std::to_string(format) + ", this build reads " + std::to_string(kFormat));
  }
  u.get(hash_out);
  if (hash_out != config_hash) {
    throw bad_checkpoint(path, "belongs to another config (hash " + hash_out + ", this config " + config_hash + ")");
  }
}

}  // namespace

void check_checkpoint(const std::string& path, const std::string& config_hash) {
  const std::string packed = checked_records(path);
  try {
    Unpacker u(packed, ExitCode::data_error);
    std::string hash;
    check_header(u, path, config_hash, hash);
  } catch (const InputDataError&) {
    throw;
  } catch (const Error& e) {
    throw bad_checkpoint(path, std::string("is malformed: ") + e.what());
  }
}

Checkpoint read_checkpoint(const std::string& path, const std::string& config_hash, std::uint64_t plan_fingerprint,
                           std::uint64_t tasks) {
  const std::string packed = checked_records(path);
  const auto bad = [&](const std::string& why) { return bad_checkpoint(path, why); };
  Checkpoint c;
  try {
    Unpacker u(packed, ExitCode::data_error);
    check_header(u, path, config_hash, c.config_hash);
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
    c.incumbents.resize(u.count(sizeof(std::uint64_t)));
    for (auto& front : c.incumbents) front = unpack_objectives(u);
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

}  // namespace wavel::driver
