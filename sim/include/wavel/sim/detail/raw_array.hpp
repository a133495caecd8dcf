// A growable array of a trivially copyable type whose slots can be reserved without being written:
// Network keeps the ids of a lane group's items without paying for their records until it needs them.
#pragma once

#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace wavel::sim::detail {

template <class T>
class RawArray {
  static_assert(std::is_trivially_copyable_v<T>, "RawArray copies its elements as bytes");

 public:
  using value_type = T;

  RawArray() = default;
  ~RawArray() { release(); }
  RawArray(const RawArray&) = delete;
  RawArray& operator=(const RawArray&) = delete;

  void swap(RawArray& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
  }

  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] std::size_t capacity() const { return capacity_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  void clear() { size_ = 0; }

  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }

  void reserve(std::size_t n) {
    if (n > capacity_) regrow(n);
  }

  void push_back(const T& value) {
    if (size_ == capacity_) regrow(capacity_ < 16 ? 16 : 2 * capacity_);
    new (data_ + size_) T(value);
    ++size_;
  }

  /// Appends n slots that hold nothing until written (with `new (&a[i]) T(...)`).
  void grow_uninitialized(std::size_t n) {
    if (size_ + n > capacity_) regrow(size_ + n > 2 * capacity_ ? size_ + n : 2 * capacity_);
    size_ += n;
  }

 private:
  void regrow(std::size_t n) {
    T* fresh = static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{alignof(T)}));
    // Unwritten slots are copied as bytes too: they stay unwritten in meaning.
    if (size_ > 0) std::memcpy(static_cast<void*>(fresh), static_cast<const void*>(data_), size_ * sizeof(T));
    release();
    data_ = fresh;
    capacity_ = n;
  }
  void release() {
    if (data_ != nullptr) ::operator delete(data_, std::align_val_t{alignof(T)});
    data_ = nullptr;
    capacity_ = 0;
  }

  T* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace wavel::sim::detail
