// The hub's spool of finished settings; see detail/spool.hpp.
#include "wavel/driver/detail/spool.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "wavel/common/error.hpp"
#include "wavel/common/hash.hpp"
#include "wavel/driver/pack.hpp"
#include "wavel/driver/setting_tasks.hpp"

namespace wavel::driver::detail {

Spool Spool::create(const std::string& path) {
  Spool s;
  s.path_ = path;
  if (path.empty()) return s;
  s.fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (s.fd_ < 0) throw OutputError("cannot create the spool file '" + path + "': " + std::strerror(errno));
  return s;
}

Spool Spool::reopen(const std::string& path, const std::vector<Checkpoint::Finished>& finished) {
  Spool s;
  s.path_ = path;
  s.fd_ = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (s.fd_ < 0) {
    throw InputMissingError("--resume: the checkpoint's spool file '" + path + "' cannot be opened (" +
                            std::strerror(errno) + "); run without --resume to start afresh");
  }
  for (const auto& f : finished) s.end_ = std::max(s.end_, f.offset + f.bytes);
  for (const auto& f : finished) (void)s.read(f);
  if (::ftruncate(s.fd_, static_cast<off_t>(s.end_)) != 0) {
    throw OutputError("cannot cut the spool file '" + path + "' to its checkpoint: " + std::strerror(errno));
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

Checkpoint::Finished Spool::append(std::uint64_t task, const std::string& bytes) {
  const Checkpoint::Finished entry{task, end_, bytes.size(), fnv1a64(bytes)};
  if (fd_ < 0) {
    memory_ += bytes;
  } else {
    for (std::size_t done = 0; done < bytes.size();) {
      const ssize_t n = ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(end_ + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw OutputError("cannot write the spool file '" + path_ + "': " + std::strerror(errno));
      done += static_cast<std::size_t>(n);
    }
  }
  end_ += bytes.size();
  return entry;
}

void Spool::sync() {
  if (fd_ >= 0 && ::fsync(fd_) != 0) {
    throw OutputError("cannot sync the spool file '" + path_ + "': " + std::strerror(errno));
  }
}

std::string Spool::read(const Checkpoint::Finished& entry) const {
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

namespace {

/// The texts of a setting's result in slot order: its schedules, then its front points.
template <class F>
void for_each_text(SettingResult& r, F&& f) {
  std::int32_t slot = 0;
  for (auto& s : r.schedules) f(s.meshir, s.meshir_ref, slot++);
  for (auto& p : r.front) f(p.meshir, p.meshir_ref, slot++);
}

}  // namespace

std::vector<SettingResult> read_back(const Spool& spool, const std::vector<Checkpoint::Finished>& entries,
                                     const std::vector<bool>& restored, const std::vector<config::Setting>& settings) {
  std::vector<SettingResult> results;
  results.reserve(settings.size());
  for (std::size_t s = 0; s < settings.size(); ++s) {
    const std::string bytes = spool.read(entries.at(s));
    if (restored.at(s)) {
      try {
        check_task_result(TaskResultKind::finish, bytes);
      } catch (const Error& e) {
        throw InputDataError("--resume: spool file '" + spool.path() + "' holds a corrupt result for setting " +
                             std::to_string(settings[s].id) + ": " + e.what());
      }
    }
    Unpacker u(bytes);
    results.push_back(unpack_setting(u));
    for_each_text(results.back(), [&](std::string& text, TextRef& ref, std::int32_t slot) {
      if (text.empty()) return;
      ref = TextRef{static_cast<std::int64_t>(s), slot, text.size()};
      std::string().swap(text);
    });
  }
  return results;
}

TextFetch spool_texts(std::shared_ptr<const Spool> spool, std::vector<Checkpoint::Finished> entries) {
  struct State {
    std::shared_ptr<const Spool> spool;
    std::vector<Checkpoint::Finished> entries;
    std::int64_t cached = -1;
    std::vector<std::string> texts;
  };
  auto state = std::make_shared<State>(State{std::move(spool), std::move(entries), -1, {}});
  return [state](const TextRef& ref) {
    if (ref.setting_index < 0) return std::string();
    if (ref.setting_index != state->cached) {
      const auto index = static_cast<std::size_t>(ref.setting_index);
      if (index >= state->entries.size()) {
        throw InternalError("a MeshIR text names setting index " + std::to_string(index) + " beyond the spool");
      }
      const std::string bytes = state->spool->read(state->entries[index]);
      Unpacker u(bytes);
      SettingResult r = unpack_setting(u);
      state->texts.clear();
      for_each_text(r, [&](std::string& text, TextRef&, std::int32_t) { state->texts.push_back(std::move(text)); });
      state->cached = ref.setting_index;
    }
    const auto slot = static_cast<std::size_t>(ref.slot);
    if (slot >= state->texts.size() || state->texts[slot].size() != ref.bytes) {
      throw InputDataError("spool file '" + state->spool->path() + "' changed under the run: MeshIR text " +
                           std::to_string(slot) + " of setting index " + std::to_string(ref.setting_index) +
                           " differs from when it was read");
    }
    return state->texts[slot];
  };
}

}  // namespace wavel::driver::detail
