// The hub's spool of finished items; see spool.hpp.
#include "wavel/engine/spool.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "wavel/common/error.hpp"
#include "wavel/common/hash.hpp"
#include "wavel/common/output_file.hpp"

namespace wavel::engine {

namespace {

constexpr const char* kMagic = "WAVEL-DSE SPOOL\n";
constexpr std::uint32_t kFormat = 1;
constexpr std::size_t kRecordHeaderBytes = 3 * sizeof(std::uint64_t);  // task, bytes, FNV-1a of the bytes

std::string header_bytes(const SpoolHeader& h) {
  Packer p;
  p.put(kFormat);
  pack_binding(h.config_hash, h.inputs, h.plan_fingerprint, h.tasks, p);
  Packer framed;
  framed.put(p.bytes());
  framed.put(fnv1a64(p.bytes()));
  return kMagic + framed.bytes();
}

void write_all(int fd, const std::string& path, const char* data, std::size_t size, std::uint64_t at) {
  for (std::size_t done = 0; done < size;) {
    const ssize_t n = ::pwrite(fd, data + done, size - done, static_cast<off_t>(at + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw OutputError("cannot write the spool file '" + path + "': " + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
}

/// Up to `size` bytes at `at`; fewer only at the end of the file.
std::string read_some(int fd, const std::string& path, std::size_t size, std::uint64_t at) {
  std::string bytes(size, '\0');
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, bytes.data() + done, size - done, static_cast<off_t>(at + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputMissingError("cannot read the spool file '" + path + "': " + std::strerror(errno));
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  bytes.resize(done);
  return bytes;
}

int open_for_resume(const std::string& path, int flags) {
  const int fd = open_regular_file(path, flags);
  if (fd >= 0) return fd;
  if (errno == ENOENT) {
    throw InputMissingError("--resume: there is no spool file '" + path + "'; run without --resume to start afresh");
  }
  throw InputDataError("--resume: the spool file '" + path + "' cannot be opened: " + open_error_text(errno));
}

/// Reads and checks the header (magic, framing, checksum, config hash, inputs); returns it and its size.
std::pair<SpoolHeader, std::uint64_t> read_header(int fd, const std::string& path, const std::string& config_hash,
                                                  const std::vector<InputFingerprint>& inputs) {
  const auto bad = [&](const std::string& why) {
    return InputDataError("--resume: the spool file '" + path + "' " + why + "; run without --resume to start afresh");
  };
  const std::string magic = kMagic;
  const std::string head = read_some(fd, path, magic.size() + sizeof(std::uint64_t), 0);
  if (head.compare(0, magic.size(), magic) != 0) throw bad("is not a wavel-dse spool of this format");
  if (head.size() < magic.size() + sizeof(std::uint64_t)) throw bad("is truncated");
  std::uint64_t size = 0;
  std::memcpy(&size, head.data() + magic.size(), sizeof size);
  if (size > (std::uint64_t{1} << 24)) throw bad("has an impossible header size");
  const std::uint64_t body_at = magic.size() + sizeof size;
  const std::string body = read_some(fd, path, static_cast<std::size_t>(size) + sizeof(std::uint64_t), body_at);
  if (body.size() != size + sizeof(std::uint64_t)) throw bad("is truncated");
  std::uint64_t sum = 0;
  std::memcpy(&sum, body.data() + size, sizeof sum);
  const std::string packed = body.substr(0, static_cast<std::size_t>(size));
  if (fnv1a64(packed) != sum) throw bad("has a corrupt header (checksum mismatch)");
  SpoolHeader h;
  try {
    Unpacker u(packed, ExitCode::data_error);
    const auto format = u.get<std::uint32_t>();
    if (format != kFormat) throw bad("has format " + std::to_string(format) + ", this build reads " + std::to_string(kFormat));
    u.get(h.config_hash);
    h.inputs = unpack_fingerprints(u);
    u.get(h.plan_fingerprint);
    u.get(h.tasks);
  } catch (const InputDataError&) {
    throw;
  } catch (const Error& e) {
    throw bad(std::string("has a malformed header: ") + e.what());
  }
  if (h.config_hash != config_hash) {
    throw bad("belongs to another config (hash " + h.config_hash + ", this config " + config_hash + ")");
  }
  const std::string changed = fingerprint_mismatch(h.inputs, inputs);
  if (!changed.empty()) throw bad("does not match this run's inputs: " + changed);
  return {h, body_at + size + sizeof sum};
}

}  // namespace

Spool Spool::create(const std::string& path, const SpoolHeader& header) {
  Spool s;
  s.path_ = path;
  const std::string head = header_bytes(header);
  if (path.empty()) {
    s.memory_ = head;
  } else {
    s.fd_ = create_fresh_file(path, O_RDWR);
    if (s.fd_ < 0) throw OutputError("cannot create the spool file '" + path + "': " + open_error_text(errno));
    write_all(s.fd_, path, head.data(), head.size(), 0);
  }
  s.end_ = head.size();
  return s;
}

void Spool::check(const std::string& path, const std::string& config_hash, const std::vector<InputFingerprint>& inputs) {
  const int fd = open_for_resume(path, O_RDONLY);
  try {
    (void)read_header(fd, path, config_hash, inputs);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

Spool Spool::recover(const std::string& path, const SpoolHeader& expected, std::vector<SpoolEntry>& records) {
  Spool s;
  s.path_ = path;
  s.fd_ = open_for_resume(path, O_RDWR);
  const auto [header, body_at] = read_header(s.fd_, path, expected.config_hash, expected.inputs);
  if (header.plan_fingerprint != expected.plan_fingerprint || header.tasks != expected.tasks) {
    throw InputDataError("--resume: the spool file '" + path + "' was written for another task plan (" +
                         std::to_string(header.tasks) + " tasks, this run has " + std::to_string(expected.tasks) +
                         "; a different sweep slice?)");
  }
  struct stat st {};
  if (::fstat(s.fd_, &st) != 0) throw InputMissingError("cannot stat the spool file '" + path + "': " + std::strerror(errno));
  const auto file_bytes = static_cast<std::uint64_t>(st.st_size);
  std::vector<bool> seen(static_cast<std::size_t>(expected.tasks), false);
  records.clear();
  std::uint64_t at = body_at;
  while (at + kRecordHeaderBytes <= file_bytes) {
    const std::string head = read_some(s.fd_, path, kRecordHeaderBytes, at);
    SpoolEntry f;
    std::memcpy(&f.task, head.data(), sizeof f.task);
    std::memcpy(&f.bytes, head.data() + 8, sizeof f.bytes);
    std::memcpy(&f.hash, head.data() + 16, sizeof f.hash);
    f.offset = at + kRecordHeaderBytes;
    if (f.bytes > file_bytes - f.offset) break;  // torn: the append did not finish
    const std::string bytes = read_some(s.fd_, path, static_cast<std::size_t>(f.bytes), f.offset);
    if (fnv1a64(bytes) != f.hash) {
      if (f.offset + f.bytes == file_bytes) break;  // the last append, torn: cut off
      throw InputDataError("--resume: spool file '" + path + "': the result of task " + std::to_string(f.task) +
                           " is corrupt (hash mismatch), and more follows it; run without --resume to start afresh");
    }
    if (f.task >= expected.tasks || seen[static_cast<std::size_t>(f.task)]) {
      throw InputDataError("--resume: the spool file '" + path + "' names task " + std::to_string(f.task) +
                           (f.task < expected.tasks ? " twice" : " beyond the plan's " + std::to_string(expected.tasks)));
    }
    seen[static_cast<std::size_t>(f.task)] = true;
    records.push_back(f);
    at = f.offset + f.bytes;
  }
  s.end_ = at;
  if (at != file_bytes && ::ftruncate(s.fd_, static_cast<off_t>(at)) != 0) {
    throw OutputError("cannot cut the torn tail of the spool file '" + path + "': " + std::strerror(errno));
  }
  return s;
}

Spool::Spool(Spool&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)), memory_(std::move(other.memory_)),
      end_(other.end_) {}

Spool& Spool::operator=(Spool&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    memory_ = std::move(other.memory_);
    end_ = other.end_;
  }
  return *this;
}

Spool::~Spool() {
  if (fd_ >= 0) ::close(fd_);
}

SpoolEntry Spool::append(std::uint64_t task, const std::string& bytes) {
  const SpoolEntry entry{task, end_ + kRecordHeaderBytes, bytes.size(), fnv1a64(bytes)};
  Packer record;
  record.put(entry.task);
  record.put(entry.bytes);
  record.put(entry.hash);
  std::string framed = record.take() + bytes;
  if (fd_ < 0) {
    memory_ += framed;
  } else {
    write_all(fd_, path_, framed.data(), framed.size(), end_);
  }
  end_ += framed.size();
  return entry;
}

void Spool::sync() {
  if (fd_ >= 0 && ::fsync(fd_) != 0) {
    throw OutputError("cannot sync the spool file '" + path_ + "': " + std::strerror(errno));
  }
}

std::string Spool::read(const SpoolEntry& entry) const {
  std::string bytes;
  const auto bad = [&](const std::string& why) {
    return InputDataError("spool file '" + path_ + "': the result of task " + std::to_string(entry.task) + " " + why);
  };
  if (fd_ < 0) {
    if (entry.offset + entry.bytes > memory_.size()) throw bad("lies beyond its end");
    bytes = memory_.substr(entry.offset, entry.bytes);
  } else {
    bytes.resize(entry.bytes);
    for (std::size_t done = 0; done < bytes.size();) {
      const ssize_t n =
          ::pread(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(entry.offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw bad(std::string("cannot be read: ") + std::strerror(errno));
      if (n == 0) throw bad("lies beyond its end (truncated?)");
      done += static_cast<std::size_t>(n);
    }
  }
  if (fnv1a64(bytes) != entry.hash) throw bad("is corrupt (hash mismatch)");
  return bytes;
}

}  // namespace wavel::engine
