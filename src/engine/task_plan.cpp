// The task plan of a distributed sweep and the hub-worker messages (see detail/task_plan.hpp).
#include "wavel/engine/detail/task_plan.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <tuple>
#include <sstream>
#include <thread>

#include "wavel/common/error.hpp"
#include "wavel/common/hash.hpp"
#include "wavel/common/fields.hpp"
#include "wavel/search/pareto.hpp"

namespace wavel::driver::detail {

Plan make_plan(const config::Config& config, const std::vector<config::Setting>& settings) {
  Plan plan;
  const auto options = config.search.options();
  std::ostringstream text;
  std::map<std::tuple<std::size_t, std::size_t, int, std::int64_t, std::int64_t>, std::size_t> family_ids;
  const auto family = [&](const config::Setting& s, std::int64_t mb) {
    const auto key =
        std::make_tuple(s.model_index, s.hardware, static_cast<int>(s.shape.phase), s.shape.concurrent_requests, mb);
    return family_ids.emplace(key, family_ids.size()).first->second;
  };
  for (std::size_t s = 0; s < settings.size(); ++s) {
    const std::size_t first = plan.tasks.size();
    const config::Config& at = config::for_hardware(config, settings[s].hardware);
    const auto parts = setting_parts(at, settings[s]);
    // A pipeline's finish picks each part's best candidate per micro-batch count, so a part's pieces
    // may only be pruned by schedules of their own count: one incumbent set per (part, count), and
    // the part's seeds (whose counts vary) in a set of their own. One wafer: one set per setting.
    const bool pipeline = settings[s].wafers > 1;
    for (std::size_t part = 0; part < parts.size(); ++part) {
      std::size_t slot = plan.slots++;
      plan.tasks.push_back(Task{Kind::baselines, s, part, slot, {}, plan.groups++, 0});
      plan.group_family.push_back(family(settings[s], 0));
      std::int64_t last_mb = -1;
      for (const auto& piece : search::search_pieces(parts[part], at.wafer, options)) {
        if (piece.microbatches != last_mb) {
          ++plan.groups;
          plan.group_family.push_back(family(settings[s], piece.microbatches));
          if (pipeline) slot = plan.slots++;
        }
        last_mb = piece.microbatches;
        plan.tasks.push_back(Task{Kind::piece, s, part, slot, piece, plan.groups - 1, 0});
      }
    }
    const std::size_t finish = plan.tasks.size();
    plan.tasks.push_back(Task{Kind::finish, s, 0, plan.tasks[first].slot, {}, plan.groups++, finish});
    plan.group_family.push_back(Plan::kNoFamily);  // a finish shares nothing
    plan.inputs.resize(plan.tasks.size());
    for (std::size_t t = first; t < finish; ++t) {
      plan.tasks[t].finish = finish;
      plan.inputs[finish].push_back(t);
    }
  }
  plan.families.resize(family_ids.size());
  for (std::size_t g = 0; g < plan.groups; ++g) {
    if (plan.group_family[g] != Plan::kNoFamily) plan.families[plan.group_family[g]].push_back(g);
  }
  for (const auto& t : plan.tasks) {
    text << static_cast<int>(t.kind) << ' ' << settings[t.setting].id << ' ' << t.part << ' ' << t.slot << ' '
         << t.piece.microbatches << ' ' << t.piece.footprint << ' ' << t.piece.chunk << ' ' << t.piece.chunks << '\n';
  }
  plan.fingerprint = fnv1a64(text.str());
  return plan;
}

// Waits for a message without spinning a core (ranks may outnumber cores).
void PollBackoff::idle() {
  constexpr int kYields = 64;
  if (idle_polls_ < kYields) {
    ++idle_polls_;
    std::this_thread::yield();
    return;
  }
  const int doublings = std::min(idle_polls_++ - kYields, 5);
  std::this_thread::sleep_for(std::min(max_sleep_, std::chrono::microseconds(10) * (1 << doublings)));
}

MPI_Status wait_message(MPI_Comm comm, int source, int tag) {
  MPI_Status status;
  int flag = 0;
  PollBackoff backoff(std::chrono::microseconds(100));
  for (;;) {
    MPI_Iprobe(source, tag, comm, &flag, &status);
    if (flag) return status;
    backoff.idle();
  }
}

std::string receive(MPI_Comm comm, const MPI_Status& probed) {
  int size = 0;
  MPI_Get_count(&probed, MPI_CHAR, &size);
  std::string bytes(static_cast<std::size_t>(size), '\0');
  MPI_Recv(bytes.data(), size, MPI_CHAR, probed.MPI_SOURCE, probed.MPI_TAG, comm, MPI_STATUS_IGNORE);
  return bytes;
}

void send(MPI_Comm comm, int dest, int tag, const std::string& bytes) {
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw InternalError("a task message exceeds 2 GiB");
  }
  MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_CHAR, dest, tag, comm);
}

// What task `t` needs: the incumbents of its setting (a piece), or its inputs' results (a finish).
std::string task_input(const Plan& plan, std::size_t t, const std::vector<std::string>& results,
                       const std::vector<search::Objectives>& incumbents) {
  Packer p;
  if (plan.tasks[t].kind == Kind::piece) {
    fields::pack(p, incumbents);
  } else if (plan.tasks[t].kind == Kind::finish) {
    p.put(static_cast<std::uint64_t>(plan.inputs[t].size()));
    for (std::size_t in : plan.inputs[t]) p.put(results[in]);
  }
  return p.take();
}

// Adds schedules found to a setting's incumbents, keeping only its Pareto front.
void merge_incumbents(std::vector<search::Objectives>& incumbents, const std::vector<search::Objectives>& found) {
  incumbents.insert(incumbents.end(), found.begin(), found.end());
  for (std::size_t i = 0; i < incumbents.size(); ++i) incumbents[i].id = static_cast<std::int64_t>(i);
  incumbents = search::pareto_front(incumbents);
}

std::string pack_report(const Report& r) {
  Packer p;
  fields::pack(p, r);
  return p.take();
}

Report unpack_report(const std::string& bytes) {
  Unpacker u(bytes);
  Report r;
  fields::unpack(u, r);
  return r;
}

}  // namespace wavel::driver::detail
