// The engine runs any job (engine/job.hpp), not only a sweep: a toy job whose bytes are strings,
// across the ranks the test runs on.
#include <doctest/doctest.h>
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "wavel/common/error.hpp"
#include "wavel/common/pack.hpp"
#include "wavel/engine/distribute.hpp"
#include "wavel/engine/job.hpp"
#include "wavel/engine/runtime.hpp"

namespace {

using wavel::engine::Plan;
using wavel::engine::Task;
using wavel::engine::TaskCounters;

// Items of `work` tasks each and a finishing task that joins its inputs' results in plan order. A
// work task's result is its own name; what it "finds" is its name too, which merge appends to the
// item's slot (what later work tasks are handed: timing-dependent, so no result depends on it).
class ToyJob final : public wavel::engine::Job {
 public:
  ToyJob(std::size_t items, std::size_t work) {
    plan_.items = items;
    plan_.item_noun = "toys";
    plan_.kind_names = {"work", "finishing"};
    plan_.slots = items;
    for (std::size_t item = 0; item < items; ++item) {
      const std::size_t first = plan_.tasks.size();
      for (std::size_t k = 0; k < work; ++k) add(0, false, item);
      const std::size_t finish = add(1, true, item);
      plan_.inputs.resize(plan_.tasks.size());
      for (std::size_t t = first; t <= finish; ++t) plan_.tasks[t].finish = finish;
      for (std::size_t t = first; t < finish; ++t) plan_.inputs[finish].push_back(t);
    }
    plan_.fingerprint = 7 + items * 100 + work;
  }

  [[nodiscard]] const Plan& plan() const override { return plan_; }

  std::string run(std::size_t t, const std::string& input, TaskCounters& counters, const std::atomic<int>*) override {
    if (!plan_.tasks[t].finishing) {
      counters.nodes = 1;
      counters.found = name(t);
      return name(t);
    }
    wavel::Unpacker u(input);
    std::string joined;
    for (auto n = u.get<std::uint64_t>(); n > 0; --n) joined += u.get<std::string>() + ";";
    counters.note = "joined " + joined;
    return joined;
  }
  void merge(std::string& slot, const std::string& found) const override { slot += found + ","; }
  void check_result(std::size_t, const std::string& bytes) const override {
    if (bytes.empty() || bytes[0] != 't') throw wavel::Error(wavel::ExitCode::data_error, "not a toy result");
  }
  void check_slot(const std::string&) const override {}
  [[nodiscard]] std::string item_label(std::size_t item) const override { return "toy " + std::to_string(item); }

 private:
  static std::string name(std::size_t t) { return "t" + std::to_string(t); }
  std::size_t add(std::uint8_t kind, bool finishing, std::size_t item) {
    Task task;
    task.kind = kind;
    task.finishing = finishing;
    task.item = item;
    task.slot = item;
    task.group = plan_.groups++;
    plan_.group_family.push_back(Plan::kNoFamily);
    plan_.tasks.push_back(task);
    return plan_.tasks.size() - 1;
  }
  Plan plan_;
};

}  // namespace

TEST_CASE("the engine runs a job it knows nothing of: results in plan order at any rank count" *
          doctest::test_suite("mpi")) {
  const wavel::engine::RunContext context = wavel::engine::make_run_context(MPI_COMM_WORLD);
  ToyJob job(3, 4);
  wavel::engine::DistributeOptions options;  // spool in memory, no checkpoint
  options.config_hash = "toy";
  const wavel::engine::Outcome out = wavel::engine::run_distributed(job, context, options);
  REQUIRE(out.ranks.size() == static_cast<std::size_t>(context.ranks));
  std::int64_t tasks = 0, nodes = 0;
  for (const auto& r : out.ranks) {
    tasks += r.tasks;
    nodes += r.nodes;
  }
  CHECK(tasks == 15);  // 3 items x (4 work + 1 finishing)
  CHECK(nodes == 12);  // the work tasks' counters reached the hub
  if (context.rank != 0) {
    CHECK(out.finished.entries.empty());
    return;
  }
  REQUIRE(out.finished.entries.size() == 3);
  CHECK(out.finished.spool->read(out.finished.entries[0]) == "t0;t1;t2;t3;");
  CHECK(out.finished.spool->read(out.finished.entries[1]) == "t5;t6;t7;t8;");
  CHECK(out.finished.spool->read(out.finished.entries[2]) == "t10;t11;t12;t13;");
  CHECK(out.finished.entries[2].task == 14);
  for (const bool restored : out.finished.restored) CHECK_FALSE(restored);
}
