// Hub-and-workers evaluation of a job's plan; see distribute.hpp. Every rank (rank 0 included) runs
// the worker loop on its main thread; rank 0 also runs the hub on a second thread, which owns the task
// states, the results, the slots' shared states, the checkpoints and the progress line. Results depend only on
// the task plan, never on which rank ran what or when, so any rank count gives identical bytes.
#include "wavel/engine/distribute.hpp"

#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include "wavel/common/error.hpp"
#include "wavel/common/hash.hpp"
#include "wavel/engine/checkpoint.hpp"
#include "wavel/engine/detail/messages.hpp"
#include "wavel/engine/detail/signals.hpp"
#include "wavel/engine/detail/worker.hpp"
#include "wavel/common/format.hpp"

namespace wavel::engine {

namespace {

using namespace detail;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Runs tasks for whoever asks; a single instance on rank 0's second thread.
class Hub {
 public:
  enum class Outcome { finished, interrupted, failed };

  Hub(const Job& job, MPI_Comm comm, int ranks, const DistributeOptions& options, std::optional<Checkpoint> resumed,
      Spool spool)
      : job_(job), plan_(job.plan()), comm_(comm), ranks_(ranks), opt_(options),
        state_(plan_.tasks.size(), State::pending), results_(plan_.tasks.size()),
        missing_inputs_(plan_.tasks.size(), 0), slots_(plan_.slots), groups_(plan_.groups),
        affinity_(static_cast<std::size_t>(ranks)), stopped_(static_cast<std::size_t>(ranks), false),
        worker_nodes_(static_cast<std::size_t>(ranks), 0), busy_(plan_.kind_names.size(), 0.0),
        completed_(plan_.kind_names.size(), 0), spool_(std::move(spool)), finished_(plan_.items),
        restored_(plan_.items, false) {
    const Plan& plan = plan_;
    for (std::size_t t = 0; t < plan.tasks.size(); ++t) missing_inputs_[t] = plan.inputs[t].size();
    if (resumed) restore(*resumed);
    for (std::size_t t = 0; t < plan.tasks.size(); ++t) {
      if (state_[t] != State::pending) continue;
      if (plan.tasks[t].finishing) {
        if (missing_inputs_[t] == 0) ready_finish_.push_back(t);
      } else {
        groups_[plan.tasks[t].group].push_back(t);
      }
    }
    untouched_.assign(plan.groups, true);
    for (std::size_t g = 0; g < groups_.size(); ++g) {
      if (!groups_[g].empty()) live_groups_.push_back(g);
    }
    open_tasks_ = static_cast<std::size_t>(std::count_if(state_.begin(), state_.end(), [](State st) {
      return st == State::pending || st == State::running;
    }));
  }

  void serve() {
    start_ = Clock::now();
    last_checkpoint_ = start_;
    last_progress_ = start_;
    PollBackoff backoff(std::chrono::microseconds(200));
    while (true) {
      int flag = 0;
      MPI_Status status;
      MPI_Iprobe(MPI_ANY_SOURCE, kReportTag, comm_, &flag, &status);
      if (flag) {
        handle(status.MPI_SOURCE, unpack_report(receive(comm_, status)));
        backoff.reset();
        continue;
      }
      if (!stop_signal_ && checkpoint_signal.load() != 0) request_stop(checkpoint_signal.load());
      if (std::count(stopped_.begin(), stopped_.end(), true) == ranks_) break;
      const double since = std::chrono::duration<double>(Clock::now() - last_checkpoint_).count();
      if (opt_.checkpoint_interval_s > 0 && since >= opt_.checkpoint_interval_s && !opt_.checkpoint_path.empty() &&
          error_code_ == 0) {  // after a failure (a lost spool write, say) the state is not resumable
        checkpoint();
        last_checkpoint_ = Clock::now();
      }
      if (opt_.progress && seconds_since(last_progress_) >= opt_.progress_interval_s) {
        progress(false);
        last_progress_ = Clock::now();
      }
      backoff.idle();
    }
    if (error_code_ != 0) {
      outcome_ = Outcome::failed;
    } else if (stop_signal_ != 0) {
      if (!opt_.checkpoint_path.empty()) checkpoint();
      // "Checkpoint written" only once it is durably on disk; a failed one is this run's error.
      outcome_ = error_code_ != 0 ? Outcome::failed : Outcome::interrupted;
    } else {
      outcome_ = Outcome::finished;
      // The end phase reads the results back from the spool, and a resume after it stops finds them.
      try {
        spool_.sync();
      } catch (const Error& e) {
        outcome_ = Outcome::failed;
        error_code_ = static_cast<int>(e.code());
        error_ = e.what();
      }
    }
    if (opt_.progress) progress(true);
  }

  [[nodiscard]] Outcome outcome() const { return outcome_; }
  [[nodiscard]] int error_code() const { return error_code_; }
  [[nodiscard]] const std::string& error() const { return error_; }
  [[nodiscard]] int stop_signal() const { return stop_signal_; }

  /// Where the finished items' results lie, in item order, and the spool (moved out).
  Finished take_finished() {
    return Finished{std::make_shared<const Spool>(std::move(spool_)), std::move(finished_), std::move(restored_)};
  }

 private:
  // consumed: its result is in the spool (a finishing task) or folded into its item's (an input).
  enum class State : std::uint8_t { pending, running, done, consumed };

  void restore(const Checkpoint& c) {
    for (std::size_t s = 0; s < c.slots.size() && s < slots_.size(); ++s) slots_[s] = c.slots[s];
    for (const auto& f : c.finished) {
      const std::size_t item = plan_.tasks[f.task].item;
      state_[f.task] = State::consumed;
      for (std::size_t in : plan_.inputs[f.task]) state_[in] = State::consumed;
      finished_[item] = f;
      restored_[item] = true;
      for (std::size_t in : plan_.inputs[f.task]) std::string().swap(slots_[plan_.tasks[in].slot]);
    }
    for (const auto& r : c.done) {
      if (state_[r.task] == State::consumed) continue;  // its item finished after the checkpoint (spool)
      state_[r.task] = State::done;
      results_[r.task] = r.result;
    }
    for (std::size_t t = 0; t < plan_.tasks.size(); ++t) {
      if (state_[t] == State::pending) continue;
      if (plan_.tasks[t].finishing) {
        ++items_done_;
      } else {
        --missing_inputs_[plan_.tasks[t].finish];
      }
    }
    nodes_before_ = c.nodes;
    pruned_before_ = c.pruned;
    evaluations_before_ = c.evaluations;
    elapsed_before_ = c.elapsed_s;
  }

  void request_stop(int sig) {
    stop_signal_ = sig;
    for (int w : waiting_) reply(w, kStop, "");
    waiting_.clear();
  }

  void fail(int code, const std::string& message) {
    if (error_code_ != 0) return;
    error_code_ = code;
    error_ = message;
    for (int w : waiting_) reply(w, kStop, "");
    waiting_.clear();
  }

  void handle(int worker, Report r) {
    if (r.signal != 0 && stop_signal_ == 0) request_stop(r.signal);
    if (r.error_code != 0) fail(r.error_code, r.error);
    if (r.task >= 0 && r.error_code == 0) complete(worker, static_cast<std::size_t>(r.task), r);
    assign(worker);
    // A finished task may have made a finishing task ready, or ended the sweep.
    std::vector<int> waiting;
    waiting.swap(waiting_);
    for (int w : waiting) assign(w);
  }

  void complete(int worker, std::size_t t, Report& r) {
    const Task& task = plan_.tasks[t];
    worker_nodes_[static_cast<std::size_t>(worker)] += r.counters.nodes;
    state_[t] = State::done;
    --open_tasks_;
    results_[t] = std::move(r.result);
    nodes_ += r.counters.nodes;
    pruned_ += r.counters.pruned;
    evaluations_ += r.counters.evaluations;
    busy_[task.kind] += r.busy_s;
    ++completed_[task.kind];
    if (task.finishing) {
      ++items_done_;
      last_item_ = task.item;
      last_note_ = std::move(r.counters.note);
      for (std::size_t in : plan_.inputs[t]) {  // folded into the item's result: free them
        state_[in] = State::consumed;
        std::string().swap(results_[in]);
      }
      // The item's result goes to the spool; memory and checkpoints keep only where it lies.
      try {
        finished_[task.item] = spool_.append(t, results_[t]);
      } catch (const Error& e) {
        // The checkpoint names the spool's items: while a signal asks for one, a spool that
        // cannot take a finished setting means no checkpoint, and the message says so.
        const int sig = stop_signal_ != 0 ? stop_signal_ : checkpoint_signal.load();
        fail(static_cast<int>(e.code()),
             sig == 0 ? std::string(e.what())
                      : std::string("stopped by ") + (sig == SIGTERM ? "SIGTERM" : "SIGUSR1") +
                            " but no checkpoint was written: " + e.what());
      }
      state_[t] = State::consumed;
      std::string().swap(results_[t]);
      for (std::size_t in : plan_.inputs[t]) std::string().swap(slots_[plan_.tasks[in].slot]);
      return;
    }
    if (!r.counters.found.empty()) job_.merge(slots_[task.slot], r.counters.found);
    if (--missing_inputs_[task.finish] == 0) ready_finish_.push_back(task.finish);
  }

  // The next task for `worker`: a ready finish if this worker has explored at least its share of
  // search nodes (finishing explores none, so handing it to the others would skew the nodes per
  // rank), then its own group, then an untouched group of its family, then any untouched group, then the back of the group with the most
  // tasks left (stealing from whoever works on it); a held finish once no search task is left.
  std::optional<std::size_t> next(int worker) {
    const auto finish = [&]() -> std::optional<std::size_t> {
      if (ready_finish_.empty()) return std::nullopt;
      const std::size_t t = ready_finish_.front();
      ready_finish_.pop_front();
      return t;
    };
    std::int64_t total = 0;
    for (auto n : worker_nodes_) total += n;
    const bool ahead = worker_nodes_[static_cast<std::size_t>(worker)] * ranks_ >= total;
    if (ahead) {
      if (auto t = finish()) return t;
    }
    auto& [group, from_back] = affinity_[static_cast<std::size_t>(worker)];
    if (group < groups_.size() && !groups_[group].empty()) return take(group, from_back);
    // Then an untouched group of the same family: alike blocks, so their costs are already known here.
    if (group < groups_.size() && plan_.group_family[group] != Plan::kNoFamily) {
      for (const std::size_t g : plan_.families[plan_.group_family[group]]) {
        if (untouched_[g] && !groups_[g].empty()) {
          group = g;
          from_back = false;
          return take(g, false);
        }
      }
    }
    // Groups before the cursor are touched or empty for good (groups only shrink): each message
    // costs O(1) here, not O(groups), which on a 100 000-setting sweep was quadratic.
    for (; next_untouched_ < groups_.size(); ++next_untouched_) {
      const std::size_t g = next_untouched_;
      if (untouched_[g] && !groups_[g].empty()) {
        group = g;
        from_back = false;
        return take(g, false);
      }
    }
    // The fullest group (the first of equals), among those not yet empty.
    live_groups_.erase(std::remove_if(live_groups_.begin(), live_groups_.end(),
                                      [&](std::size_t g) { return groups_[g].empty(); }),
                       live_groups_.end());
    std::size_t fullest = groups_.size();
    for (const std::size_t g : live_groups_) {
      if (fullest == groups_.size() || groups_[g].size() > groups_[fullest].size()) fullest = g;
    }
    if (fullest == groups_.size()) return finish();
    group = fullest;
    from_back = true;
    return take(fullest, true);
  }

  std::size_t take(std::size_t g, bool from_back) {
    untouched_[g] = false;
    auto& q = groups_[g];
    const std::size_t t = from_back ? q.back() : q.front();
    if (from_back) {
      q.pop_back();
    } else {
      q.pop_front();
    }
    return t;
  }

  void assign(int worker) {
    if (stop_signal_ != 0 || error_code_ != 0) {
      reply(worker, kStop, "");
      return;
    }
    const auto t = next(worker);
    if (!t) {
      if (open_tasks_ == 0) {
        reply(worker, kFinished, "");
      } else {
        waiting_.push_back(worker);  // tasks still running elsewhere may unlock a finish
      }
      return;
    }
    state_[*t] = State::running;
    reply(worker, static_cast<std::int64_t>(*t), task_input(plan_, *t, results_, slots_[plan_.tasks[*t].slot]));
  }

  void reply(int worker, std::int64_t task, const std::string& input) {
    if (task < 0) stopped_[static_cast<std::size_t>(worker)] = true;
    Packer p;
    p.put(task);
    p.put(input);
    send(comm_, worker, kReplyTag, p.bytes());
  }

  void checkpoint() {
    Checkpoint c;
    c.config_hash = opt_.config_hash;
    c.inputs = opt_.inputs;
    c.plan_fingerprint = plan_.fingerprint;
    c.tasks = plan_.tasks.size();
    for (std::size_t t = 0; t < plan_.tasks.size(); ++t) {
      if (plan_.tasks[t].finishing && state_[t] == State::consumed) {
        c.finished.push_back(finished_[plan_.tasks[t].item]);
      } else if (state_[t] == State::done) {
        c.done.push_back(Checkpoint::Record{t, results_[t]});
      }
    }
    c.slots = slots_;
    c.nodes = nodes_before_ + nodes_;
    c.pruned = pruned_before_ + pruned_;
    c.evaluations = evaluations_before_ + evaluations_;
    c.elapsed_s = elapsed_before_ + seconds_since(start_);
    try {
      spool_.sync();  // durable before the checkpoint names it
      write_checkpoint(opt_.checkpoint_path, c);
    } catch (const Error& e) {
      // A failed periodic checkpoint must not kill the run (the previous one stays intact); a
      // failed final one fails the run, so that nobody requeues it expecting to resume.
      if (stop_signal_ != 0) {
        error_code_ = static_cast<int>(e.code());
        error_ = std::string("stopped by ") + (stop_signal_ == SIGTERM ? "SIGTERM" : "SIGUSR1") +
                 " but no checkpoint was written: " + e.what();
      } else {
        std::cerr << "wavel-dse: warning: " << e.what() << '\n';
      }
    }
  }

  void progress(bool final) {
    const double elapsed = seconds_since(start_);
    std::size_t done = 0;
    for (auto s : state_) done += s == State::done || s == State::consumed ? 1 : 0;
    // ETA from the mean time each kind of task took so far, spread over the ranks; and, where tasks
    // are so short that handing them out costs more than running them, from the tasks done per
    // second of wall time: the longer of the two.
    double remaining_s = 0;
    bool known = true;
    std::size_t left_all = 0;
    std::size_t done_now = 0;
    for (std::size_t k = 0; k < completed_.size(); ++k) {
      done_now += completed_[k];
      std::size_t left = 0;
      for (std::size_t t = 0; t < plan_.tasks.size(); ++t) {
        if (plan_.tasks[t].kind == k && (state_[t] == State::pending || state_[t] == State::running)) ++left;
      }
      left_all += left;
      if (left == 0) continue;
      if (completed_[k] == 0) {
        known = false;
        continue;
      }
      remaining_s += static_cast<double>(left) * busy_[k] / static_cast<double>(completed_[k]);
    }
    remaining_s /= static_cast<double>(ranks_);
    if (done_now > 0) {
      remaining_s = std::max(remaining_s, elapsed * static_cast<double>(left_all) / static_cast<double>(done_now));
    }
    std::ostringstream line;
    line << "wavel-dse: " << plan_.item_noun << " " << items_done_ << "/" << plan_.items << ", tasks " << done << "/"
         << plan_.tasks.size() << ", nodes " << human(static_cast<double>(nodes_before_ + nodes_), "") << " explored, "
         << human(static_cast<double>(pruned_before_ + pruned_), "") << " pruned, "
         << human(elapsed > 0 ? static_cast<double>(evaluations_) / elapsed : 0.0, "eval/s");
    if (last_item_ < plan_.items) line << ", " << job_.item_label(last_item_) << " " << last_note_;
    if (final) {
      line << (outcome_ == Outcome::finished ? ", done in " : ", stopped after ") << human_duration(elapsed)
           << std::fixed << std::setprecision(1) << " (task time: ";
      for (std::size_t k = 0; k < busy_.size(); ++k) {
        line << (k > 0 ? ", " : "") << plan_.kind_names[k] << ' ' << busy_[k] << " s";
      }
      line << ')';
    } else {
      line << ", ETA " << (known ? human_duration(remaining_s) : std::string("?"));
    }
    std::cerr << line.str() << '\n' << std::flush;
  }

  const Job& job_;
  const Plan& plan_;
  MPI_Comm comm_;
  int ranks_;
  DistributeOptions opt_;
  std::vector<State> state_;
  std::vector<std::string> results_;
  std::vector<std::size_t> missing_inputs_;
  std::vector<std::string> slots_;
  std::vector<std::deque<std::size_t>> groups_;
  std::vector<bool> untouched_;
  std::size_t next_untouched_ = 0;         ///< groups before it are touched or empty
  std::vector<std::size_t> live_groups_;   ///< groups not yet seen empty, ascending
  std::size_t open_tasks_ = 0;             ///< pending or running
  std::deque<std::size_t> ready_finish_;
  std::vector<std::pair<std::size_t, bool>> affinity_;  // per worker: group, and whether it takes from the back
  std::vector<bool> stopped_;
  std::vector<std::int64_t> worker_nodes_;  // search nodes each worker reported in this attempt
  std::vector<int> waiting_;
  int stop_signal_ = 0;
  int error_code_ = 0;
  std::string error_;
  Outcome outcome_ = Outcome::failed;
  Clock::time_point start_, last_checkpoint_, last_progress_;
  std::int64_t nodes_ = 0, pruned_ = 0, evaluations_ = 0;
  std::int64_t nodes_before_ = 0, pruned_before_ = 0, evaluations_before_ = 0;
  double elapsed_before_ = 0;
  std::vector<double> busy_;            // per task kind
  std::vector<std::size_t> completed_;  // per task kind
  std::size_t items_done_ = 0;
  std::size_t last_item_ = static_cast<std::size_t>(-1);
  std::string last_note_;
  Spool spool_;
  std::vector<SpoolEntry> finished_;  // per item: where its result lies in the spool
  std::vector<bool> restored_;        // per item: spooled by an earlier run
};

}  // namespace

Outcome run_distributed(Job& job, const RunContext& context, const DistributeOptions& options) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_MULTIPLE) {
    throw InternalError("the hub needs MPI_THREAD_MULTIPLE; MPI was initialised with less");
  }
  const Plan& plan = job.plan();
  std::optional<Checkpoint> resumed;
  Spool spool;
  const SpoolHeader header{options.config_hash, options.inputs, plan.fingerprint, plan.tasks.size()};
  if (options.resume) {
    on_root_agreed(context.comm, 0, [&] {
      // The spool holds every finished item; a checkpoint, if there is one, adds the tasks done
      // for the others and the slots' states. Without one (the end phase stopped, or no checkpoint
      // was due yet) the finished items are kept and the rest runs again.
      std::vector<SpoolEntry> spooled;
      spool = Spool::recover(options.spool_path, header, spooled);
      std::error_code ec;
      const bool have_checkpoint = std::filesystem::exists(std::filesystem::symlink_status(options.checkpoint_path, ec));
      if (have_checkpoint) {
        resumed = read_checkpoint(options.checkpoint_path, options.config_hash, options.inputs, plan.fingerprint,
                                  plan.tasks.size());
      } else {
        resumed = Checkpoint{};
      }
      std::vector<const SpoolEntry*> by_task(plan.tasks.size(), nullptr);
      for (const auto& g : spooled) by_task[g.task] = &g;  // recover checked each task is in the plan, once
      for (const auto& f : resumed->finished) {
        const SpoolEntry* g = by_task[f.task];  // read_checkpoint checked f.task is in the plan
        if (g == nullptr || g->offset != f.offset || g->bytes != f.bytes || g->hash != f.hash) {
          throw InputDataError("--resume: checkpoint '" + options.checkpoint_path + "' names task " +
                               std::to_string(f.task) + "'s result, which the spool file '" + options.spool_path +
                               "' does not hold intact");
        }
      }
      resumed->finished = std::move(spooled);
      const auto corrupt = [&](std::uint64_t task, const std::string& why) {
        return InputDataError("--resume: checkpoint '" + options.checkpoint_path + "' holds a corrupt result for task " +
                              std::to_string(task) + ": " + why);
      };
      for (const auto& f : resumed->finished) {
        if (!plan.tasks[f.task].finishing) throw corrupt(f.task, "a finished item names a task that does not finish one");
      }
      for (const auto& record : resumed->done) {
        if (plan.tasks[record.task].finishing) throw corrupt(record.task, "an item's result outside the spool");
        try {
          job.check_result(record.task, record.result);
        } catch (const Error& e) {
          throw corrupt(record.task, e.what());
        }
      }
      if (resumed->slots.size() > plan.slots) {
        throw InputDataError("--resume: checkpoint '" + options.checkpoint_path + "' holds " +
                             std::to_string(resumed->slots.size()) + " shared states; the plan has " +
                             std::to_string(plan.slots));
      }
      for (std::size_t i = 0; i < resumed->slots.size(); ++i) {
        try {
          if (!resumed->slots[i].empty()) job.check_slot(resumed->slots[i]);
        } catch (const Error& e) {
          throw InputDataError("--resume: checkpoint '" + options.checkpoint_path + "' holds a corrupt shared state " +
                               std::to_string(i) + ": " + e.what());
        }
      }
      // Say what was restored: a resume that silently did little is indistinguishable from a fresh start.
      std::cerr << "wavel-dse: resumed from '" << (have_checkpoint ? options.checkpoint_path : options.spool_path)
                << "': " << resumed->finished.size() << " of " << plan.items << ' ' << plan.item_noun << " finished";
      if (have_checkpoint) {
        std::cerr << ", " << resumed->done.size() << " more tasks done; " << resumed->nodes
                  << " partial schedules explored and " << resumed->elapsed_s << " s spent before\n";
      } else {
        std::cerr << " (no checkpoint: the unfinished " << plan.item_noun << " start afresh)\n";
      }
    });
  } else {
    on_root_agreed(context.comm, 0, [&] { spool = Spool::create(options.spool_path, header); });
  }
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_dup(context.comm, &comm);
  std::unique_ptr<Hub> hub;
  std::thread hub_thread;
  std::string hub_failure;
  if (context.rank == 0) {
    hub = std::make_unique<Hub>(job, comm, context.ranks, options, std::move(resumed), std::move(spool));
    hub_thread = std::thread([&] {
      try {
        hub->serve();
      } catch (const std::exception& e) {
        hub_failure = e.what();  // a hub bug: reported after the join, never swallowed
      }
    });
  }
  const RankStats mine = work(job, comm, context.rank, &checkpoint_signal);
  int code = 0;
  std::string message;
  Outcome out;
  if (context.rank == 0) {
    hub_thread.join();
    if (!hub_failure.empty()) {
      code = static_cast<int>(ExitCode::internal);
      message = "hub failed: " + hub_failure;
    } else if (hub->outcome() == Hub::Outcome::failed) {
      code = hub->error_code();
      message = hub->error();
    } else if (hub->outcome() == Hub::Outcome::interrupted) {
      code = static_cast<int>(ExitCode::checkpointed);
      message = std::string("stopped by ") + (hub->stop_signal() == SIGTERM ? "SIGTERM" : "SIGUSR1") +
                (options.checkpoint_path.empty() ? "; no checkpoint path"
                                                 : "; checkpoint written to '" + options.checkpoint_path +
                                                       "': rerun with --resume to continue");
    } else {
      out.finished = hub->take_finished();  // only rank 0 writes the results: the others never hold them
    }
  }
  hub.reset();  // the task states are not needed to read the results back
#ifdef __GLIBC__
  // Millions of small task records were freed above; hand the pages back before the results are
  // read and tabulated (glibc keeps freed heap otherwise: 1.4 GB on a 100 000-setting sweep).
  ::malloc_trim(0);
#endif
  MPI_Comm_free(&comm);
  MPI_Bcast(&code, 1, MPI_INT, 0, context.comm);
  if (code != 0) {
    broadcast_string(message, context.comm, 0);
    throw Error(static_cast<ExitCode>(code), message);
  }
  out.ranks.resize(static_cast<std::size_t>(context.ranks));
  MPI_Allgather(&mine, sizeof mine, MPI_BYTE, out.ranks.data(), sizeof mine, MPI_BYTE, context.comm);
  return out;
}

}  // namespace wavel::engine
