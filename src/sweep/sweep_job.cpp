// A sweep as the engine's job; see sweep_job.hpp.
#include "wavel/sweep/sweep_job.hpp"

#include <map>
#include <sstream>
#include <tuple>

#include "wavel/common/error.hpp"
#include "wavel/common/fields.hpp"
#include "wavel/common/format.hpp"
#include "wavel/common/hash.hpp"
#include "wavel/common/input_file.hpp"
#include "wavel/search/pareto.hpp"
#include "wavel/sweep/setting_tasks.hpp"
#include "wavel/version_info.hpp"

namespace wavel::driver {

namespace {

using Kind = SweepTask::Kind;

std::vector<search::Objectives> objectives_of(const std::string& bytes) {
  std::vector<search::Objectives> out;
  if (bytes.empty()) return out;  // a slot nothing was added to yet
  Unpacker u(bytes, ExitCode::data_error);
  fields::unpack(u, out);
  if (!u.done()) throw Error(ExitCode::data_error, "trailing bytes after the incumbents");
  return out;
}

std::string bytes_of(const std::vector<search::Objectives>& objectives) {
  Packer p;
  fields::pack(p, objectives);
  return p.take();
}

engine::TaskCounters engine_counters(const TaskCounters& c, bool finishing) {
  engine::TaskCounters out;
  out.nodes = c.nodes;
  out.pruned = c.pruned;
  out.evaluations = c.evaluations;
  if (finishing) {
    out.note = "best " + human(c.best_tokens_per_s, "tok/s") + " (predicted), front " + std::to_string(c.front_size);
  } else {
    out.found = bytes_of(c.found);
  }
  return out;
}

}  // namespace

SweepJob::SweepJob(const config::Config& config, const std::vector<config::Setting>& settings)
    : config_(config), settings_(settings) {
  engine::Plan& plan = plan_;
  plan.items = settings.size();
  plan.item_noun = "settings";
  plan.kind_names = {"baselines", "search", "finishing"};  // by SweepTask::Kind
  const auto options = config.search.options();
  std::map<std::tuple<std::size_t, std::size_t, int, std::int64_t, std::int64_t, std::int64_t>, std::size_t> family_ids;
  // A family: the groups of one model, phase, request count, micro-batch count and prompt chunks over
  // every length, part and wafer count. Their blocks are alike (a decode MLP block does not depend on
  // the context length), so a rank that takes a family's groups one after another reuses its block
  // costs (search::SearchWorkspace).
  const auto family = [&](const config::Setting& s, std::int64_t mb, std::int64_t chunks) {
    const auto key = std::make_tuple(s.model_index, s.hardware, static_cast<int>(s.shape.phase),
                                     s.shape.concurrent_requests, mb, chunks);
    return family_ids.emplace(key, family_ids.size()).first->second;
  };
  const auto add = [&](Kind kind, std::size_t s, std::size_t part, std::size_t slot, const search::SearchPiece& piece,
                       std::size_t group) {
    engine::Task t;
    t.kind = static_cast<std::uint8_t>(kind);
    t.finishing = kind == Kind::finish;
    t.item = s;
    t.slot = slot;
    t.group = group;
    plan.tasks.push_back(t);
    tasks_.push_back(SweepTask{kind, s, part, piece});
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
      add(Kind::baselines, s, part, slot, {}, plan.groups++);
      plan.group_family.push_back(family(settings[s], 0, 0));
      std::pair<std::int64_t, std::int64_t> last{-1, -1};  // (micro-batches, prompt chunks)
      for (const auto& piece : search::search_pieces(parts[part], at.wafer, options)) {
        if (std::make_pair(piece.microbatches, piece.prompt_chunks) != last) {
          ++plan.groups;
          plan.group_family.push_back(family(settings[s], piece.microbatches, piece.prompt_chunks));
          if (pipeline) slot = plan.slots++;
        }
        last = {piece.microbatches, piece.prompt_chunks};
        add(Kind::piece, s, part, slot, piece, plan.groups - 1);
      }
    }
    const std::size_t finish = plan.tasks.size();
    add(Kind::finish, s, 0, plan.tasks[first].slot, {}, plan.groups++);
    plan.tasks[finish].finish = finish;
    plan.group_family.push_back(engine::Plan::kNoFamily);  // a finish shares nothing
    plan.inputs.resize(plan.tasks.size());
    for (std::size_t t = first; t < finish; ++t) {
      plan.tasks[t].finish = finish;
      plan.inputs[finish].push_back(t);
    }
  }
  plan.families.resize(family_ids.size());
  for (std::size_t g = 0; g < plan.groups; ++g) {
    if (plan.group_family[g] != engine::Plan::kNoFamily) plan.families[plan.group_family[g]].push_back(g);
  }
  std::ostringstream text;
  for (std::size_t i = 0; i < tasks_.size(); ++i) {
    const SweepTask& t = tasks_[i];
    text << static_cast<int>(t.kind) << ' ' << settings[t.setting].id << ' ' << t.part << ' ' << plan.tasks[i].slot
         << ' ' << t.piece.microbatches << ' ' << t.piece.footprint << ' ' << t.piece.chunk << ' ' << t.piece.chunks
         << ' ' << t.piece.prompt_chunks << '\n';
  }
  plan.fingerprint = fnv1a64(text.str());
}

std::string SweepJob::run(std::size_t t, const std::string& input, engine::TaskCounters& counters,
                          const std::atomic<int>* stop) {
  const SweepTask& task = tasks_[t];
  const config::Setting& setting = settings_[task.setting];
  const config::Config& config = config::for_hardware(config_, setting.hardware);
  if (parts_.empty() || parts_setting_ != task.setting) {
    parts_ = setting_parts(config, setting);
    parts_setting_ = task.setting;
  }
  if (task.part >= parts_.size()) throw InternalError("task of a part the setting does not have");
  const workload::Workload& w = parts_[task.part];
  TaskCounters mine;
  std::string result;
  switch (task.kind) {
    case Kind::baselines:
      result = run_baselines(config, setting, w, task.part, mine);
      break;
    case Kind::piece:
      result = run_piece(config, setting, w, task.piece, objectives_of(input), workspace_, mine, stop);
      break;
    case Kind::finish: {
      // The inputs are each part's baselines then its pieces, parts in order (the constructor).
      Unpacker u(input);
      const auto& from = plan_.inputs[t];
      const auto n = u.get<std::uint64_t>();
      if (n != from.size()) {
        throw InternalError("finishing task with " + std::to_string(n) + " inputs, planned " + std::to_string(from.size()));
      }
      std::vector<PartResults> results(parts_.size());
      for (const std::size_t in : from) {
        const SweepTask& i = tasks_[in];
        PartResults& r = results.at(i.part);
        if (i.kind == Kind::baselines) {
          u.get(r.baselines);
        } else {
          r.pieces.emplace_back();
          u.get(r.pieces.back());
        }
      }
      result = run_finish(config, setting, parts_, results, mine);
      break;
    }
  }
  counters = engine_counters(mine, task.kind == Kind::finish);
  return result;
}

// Adds schedules found to a setting's incumbents, keeping only its Pareto front.
void SweepJob::merge(std::string& slot, const std::string& found) const {
  std::vector<search::Objectives> incumbents = objectives_of(slot);
  const std::vector<search::Objectives> more = objectives_of(found);
  incumbents.insert(incumbents.end(), more.begin(), more.end());
  for (std::size_t i = 0; i < incumbents.size(); ++i) incumbents[i].id = static_cast<std::int64_t>(i);
  slot = bytes_of(search::pareto_front(incumbents));
}

void SweepJob::check_result(std::size_t t, const std::string& bytes) const {
  check_task_result(tasks_.at(t).kind, bytes);
}

void SweepJob::check_slot(const std::string& bytes) const { (void)objectives_of(bytes); }

std::string SweepJob::item_label(std::size_t item) const { return "setting " + std::to_string(settings_.at(item).id); }

namespace {

/// The running executable's bytes, hashed: a rebuild with uncommitted changes has the same git hash.
std::string executable_digest() {
  try {
    return to_hex(fnv1a64(read_input_file("/proc/self/exe", std::size_t{1} << 30, "executable")));
  } catch (const Error&) {
    return "unknown";  // no /proc: the version and git hash still tell builds apart
  }
}

}  // namespace

std::vector<engine::InputFingerprint> input_fingerprints(const config::Config& config) {
  static const std::string build =
      std::string(WAVEL_VERSION) + " " + WAVEL_GIT_HASH + " executable " + executable_digest();
  std::vector<engine::InputFingerprint> out{{"build", build}};
  constexpr std::size_t kMaxBytes = std::size_t{256} << 20;
  for (const auto& m : config.workloads.models) {
    if (m.spec.source.empty() || m.spec.source == "preset") continue;
    out.push_back({"model file '" + m.spec.source + "'",
                   to_hex(fnv1a64(read_input_file(m.spec.source, kMaxBytes, "model file")))});
  }
  if (!config.cost.params_path.empty()) {
    out.push_back({"params file '" + config.cost.params_path + "'",
                   to_hex(fnv1a64(read_input_file(config.cost.params_path, kMaxBytes, "params file")))});
  }
  return out;
}

SweepOutcome evaluate_sweep(const config::Config& config, const std::vector<config::Setting>& settings,
                            const engine::RunContext& context, const engine::DistributeOptions& options) {
  auto job = std::make_unique<SweepJob>(config, settings);
  engine::Outcome outcome = engine::run_distributed(*job, context, options);
  job.reset();  // its plan and search memo are not needed to read the results back
  SweepOutcome out;
  out.ranks = std::move(outcome.ranks);
  engine::on_root_agreed(context.comm, 0, [&] {  // only rank 0 holds the results
    out.results = detail::read_back(outcome.finished, settings);
    out.texts = detail::spool_texts(outcome.finished);
  });
  return out;
}

}  // namespace wavel::driver
