// Flat byte encoding for messages between ranks and processes and for checkpoints; memcpy keeps
// doubles bit-exact.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "wavel/common/error.hpp"

namespace wavel {

class Packer {
 public:
  template <class T>
  void put(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes_.append(reinterpret_cast<const char*>(&value), sizeof value);
  }
  void put(const std::string& s) {
    put(static_cast<std::uint64_t>(s.size()));
    bytes_ += s;
  }
  [[nodiscard]] const std::string& bytes() const { return bytes_; }
  [[nodiscard]] std::string take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

/// Reads what a Packer wrote; a short or malformed record throws `Error` with `code`.
class Unpacker {
 public:
  explicit Unpacker(const std::string& bytes, ExitCode code = ExitCode::internal) : bytes_(bytes), code_(code) {}
  template <class T>
  void get(T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof value);
    std::memcpy(&value, bytes_.data() + pos_, sizeof value);
    pos_ += sizeof value;
  }
  void get(std::string& s) {
    std::uint64_t size = 0;
    get(size);
    need(size);
    s.assign(bytes_.data() + pos_, size);
    pos_ += size;
  }
  template <class T>
  T get() {
    T value{};
    get(value);
    return value;
  }
  [[nodiscard]] bool done() const { return pos_ == bytes_.size(); }

  /// A record count, each record taking at least `min_bytes` (> 0): a count the remaining bytes
  /// cannot hold throws before anything is allocated for it.
  std::uint64_t count(std::size_t min_bytes) {
    const auto n = get<std::uint64_t>();
    if (n > (bytes_.size() - pos_) / min_bytes) {
      throw Error(code_, "record count " + std::to_string(n) + " exceeds what the " +
                             std::to_string(bytes_.size() - pos_) + " remaining bytes can hold");
    }
    return n;
  }

 private:
  void need(std::uint64_t n) const {
    if (n > bytes_.size() - pos_) throw Error(code_, "truncated record (" + std::to_string(n) + " bytes wanted, " +
                                                         std::to_string(bytes_.size() - pos_) + " left)");
  }
  const std::string& bytes_;
  std::size_t pos_ = 0;
  ExitCode code_;
};

}  // namespace wavel
