// The event queue of a Network: pending events in (time, item) order, in exact-time buckets found
// through an open-addressing table and ordered by a small heap of times (see network.hpp).
#include <algorithm>
#include <cstring>

#include "wavel/sim/detail/network.hpp"

namespace wavel::sim {

std::uint64_t Network::bits_of(double time) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &time, sizeof bits);
  return bits;
}

double Network::time_of(std::uint64_t bits) {
  double time = 0;
  std::memcpy(&time, &bits, sizeof time);
  return time;
}

namespace {

std::size_t slot_of(std::uint64_t key, std::size_t mask) {
  return static_cast<std::size_t>((key * 0x9e3779b97f4a7c15ULL) >> 17) & mask;
}

}  // namespace

std::uint32_t Network::bucket_for(std::uint64_t time_bits) {
  if (table_keys_.empty() || 2 * (table_used_ + 1) > table_keys_.size()) {
    // Grow (rarely: the table holds distinct pending times, not events).
    std::vector<std::uint64_t> keys(std::max<std::size_t>(64, 2 * table_keys_.size()), kNoTime);
    std::vector<std::uint32_t> values(keys.size(), 0);
    const std::size_t mask = keys.size() - 1;
    for (std::size_t i = 0; i < table_keys_.size(); ++i) {
      if (table_keys_[i] == kNoTime) continue;
      std::size_t j = slot_of(table_keys_[i], mask);
      while (keys[j] != kNoTime) j = (j + 1) & mask;
      keys[j] = table_keys_[i];
      values[j] = table_buckets_[i];
    }
    table_keys_.swap(keys);
    table_buckets_.swap(values);
  }
  const std::size_t mask = table_keys_.size() - 1;
  std::size_t j = slot_of(time_bits, mask);
  for (; table_keys_[j] != kNoTime; j = (j + 1) & mask) {
    if (table_keys_[j] == time_bits) return table_buckets_[j];
  }
  std::uint32_t bucket = 0;
  if (free_buckets_.empty()) {
    buckets_.emplace_back();
    bucket = static_cast<std::uint32_t>(buckets_.size() - 1);
  } else {
    bucket = free_buckets_.back();
    free_buckets_.pop_back();
  }
  table_keys_[j] = time_bits;
  table_buckets_[j] = bucket;
  ++table_used_;
  times_.push_back(TimeSlot{time_bits, bucket});
  std::push_heap(times_.begin(), times_.end(),
                 [](const TimeSlot& a, const TimeSlot& b) { return a.time_bits > b.time_bits; });
  return bucket;
}

void Network::push(Event ev) {
  if (ev.time_bits == now_bits_) {
    late_.push_back(Pending{ev.item, ev.step});
    std::push_heap(late_.begin(), late_.end(), [](const Pending& a, const Pending& b) { return a.item > b.item; });
    return;
  }
  // Lock-step kernels push runs of events at one time (93 % of a decode layer's pushes repeat the
  // last push's time), so the last bucket found is kept.
  if (ev.time_bits != cached_time_bits_) {
    cached_bucket_ = bucket_for(ev.time_bits);
    cached_time_bits_ = ev.time_bits;
  }
  buckets_[cached_bucket_].push_back(Pending{ev.item, ev.step});
}

bool Network::empty() const { return current_next_ == current_.size() && late_.empty() && times_.empty(); }

// Whether `ev` (a message's next step, nothing pushed since its last one) would be popped next.
bool Network::is_next(const Event& ev) const {
  if (current_next_ < current_.size() || !late_.empty()) {
    if (ev.time_bits != now_bits_) return false;
    const bool before_current = current_next_ == current_.size() || ev.item < current_[current_next_].item;
    return before_current && (late_.empty() || ev.item < late_.front().item);
  }
  // A later bucket's items are unsorted: only a strictly earlier time is surely next.
  return times_.empty() || ev.time_bits < times_.front().time_bits;
}

Network::Event Network::pop() {
  if (current_next_ == current_.size() && late_.empty()) {
    // The next time's bucket becomes current; its slot leaves the table (backward-shift delete).
    const TimeSlot slot = times_.front();
    std::pop_heap(times_.begin(), times_.end(),
                  [](const TimeSlot& a, const TimeSlot& b) { return a.time_bits > b.time_bits; });
    times_.pop_back();
    const std::size_t mask = table_keys_.size() - 1;
    std::size_t j = slot_of(slot.time_bits, mask);
    while (table_keys_[j] != slot.time_bits) j = (j + 1) & mask;
    for (std::size_t k = (j + 1) & mask; table_keys_[k] != kNoTime; k = (k + 1) & mask) {
      const std::size_t home = slot_of(table_keys_[k], mask);
      // Move k back into the hole at j unless its home lies cyclically in (j, k].
      if ((j < k) ? (home <= j || home > k) : (home <= j && home > k)) {
        table_keys_[j] = table_keys_[k];
        table_buckets_[j] = table_buckets_[k];
        j = k;
      }
    }
    table_keys_[j] = kNoTime;
    --table_used_;
    if (cached_time_bits_ == slot.time_bits) cached_time_bits_ = kNoTime;  // its bucket is recycled
    current_.clear();
    current_.swap(buckets_[slot.bucket]);
    free_buckets_.push_back(slot.bucket);
    current_next_ = 0;
    now_bits_ = slot.time_bits;
    auto by_item = [](const Pending& a, const Pending& b) { return a.item < b.item; };
    if (!std::is_sorted(current_.begin(), current_.end(), by_item)) std::sort(current_.begin(), current_.end(), by_item);
  }
  Pending next{};
  if (!late_.empty() && (current_next_ == current_.size() || late_.front().item < current_[current_next_].item)) {
    next = late_.front();
    std::pop_heap(late_.begin(), late_.end(), [](const Pending& a, const Pending& b) { return a.item > b.item; });
    late_.pop_back();
  } else {
    next = current_[current_next_++];
  }
  return Event{now_bits_, next.item, next.step};
}

}  // namespace wavel::sim
