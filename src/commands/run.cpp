// Sweep driver: settings evaluated across ranks (distribute.cpp), written by all ranks; dry runs
// describe settings round-robin.
#include "wavel/commands/run.hpp"
#include "wavel/report/tables.hpp"

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iomanip>
#include <limits>
#include <iostream>
#include <sstream>

#include <unistd.h>

#include "wavel/common/error.hpp"
#include "wavel/common/hash.hpp"
#include "wavel/engine/checkpoint.hpp"
#include "wavel/report/costed_with.hpp"
#include "wavel/engine/spool.hpp"
#include "wavel/sweep/sweep_job.hpp"
#include "wavel/engine/distribute.hpp"
#include "wavel/common/format.hpp"
#include "wavel/sweep/grouping.hpp"
#include "wavel/common/fields.hpp"
#include "wavel/sweep/setting_tasks.hpp"
#include "wavel/report/wafer_counts.hpp"
#include "wavel/report/whatif.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/meshir/text.hpp"
#include "wavel/search/search.hpp"
#include "wavel/version_info.hpp"
#include "wavel/workload/workload.hpp"

namespace wavel::driver {

namespace fs = std::filesystem;

namespace {

constexpr const char* kFormatVersion = "wavel-results/1";

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// The resolved config without its output section: what the results depend on, so the tasks of a
// split sweep (written to different folders) share it.
std::string results_identity(const config::Config& config) {
  config::Config c = config;
  c.output = config::OutputConfig{};
  c.search.checkpoint_interval_s = 0;  // when to checkpoint does not change results
  return config::to_yaml(c);
}

std::vector<io::Attribute> provenance(const config::Config& config, const engine::RunContext& context,
                                      const std::string& resolved) {
  std::string overrides;
  for (const auto& o : config.overrides) overrides += (overrides.empty() ? "" : "\n") + o;
  return {
      {"format_version", std::string(kFormatVersion)},
      {"tool_version", std::string(WAVEL_VERSION)},
      {"git_hash", std::string(WAVEL_GIT_HASH)},
      {"config_file", config.file},
      {"config_text", config.text},
      {"config_overrides", overrides},
      {"config_resolved", resolved},
      {"config_hash_fnv1a64", to_hex(fnv1a64(results_identity(config)))},
      {"params_file", config.cost.params_path},
      {"mpi_ranks", std::int64_t{context.ranks}},
      {"kokkos_backend", context.kokkos_backend},
      {"kokkos_threads", std::int64_t{context.kokkos_threads}},
      {"slurm_job_id", context.slurm_job_id},
      {"seed", config.search.seed},
      {"created_utc", utc_now()},
  };
}


// Dry run: each rank describes the settings it owns round-robin, with the size of their search;
// gathered in id order.
std::pair<std::vector<SettingResult>, std::vector<search::SearchSizeEstimate>> describe_all(
    const config::Config& config, const std::vector<config::Setting>& settings, const engine::RunContext& context) {
  Packer mine;
  int local_error = 0;
  std::string message;
  const auto options = config.search.options();
  const search::SearchOptions defaults{};
  try {
    for (const auto& setting : settings) {
      if (setting.id % context.ranks != context.rank) continue;
      const config::Config& at = config::for_hardware(config, setting.hardware);
      pack_setting(describe_setting(at, setting, choose_layer_subset(at, setting)), mine);
      search::SearchSizeEstimate e;
      e.pieces = -1;  // not estimated
      if (static_cast<std::size_t>(&setting - settings.data()) < kEstimatedSettings) {
        // A pipeline searches each of its distinct parts: their sizes add up.
        e = search::SearchSizeEstimate{0, 0, 0, false};
        for (const auto& part : setting_parts(at, setting)) {
          const auto p = search::estimate_search_size(part, at.wafer, at.cost.params, options, defaults);
          e.pieces += p.pieces;
          e.top_cut_options += p.top_cut_options;
          e.default_top_cut_options += p.default_top_cut_options;
          e.at_least = e.at_least || p.at_least;
        }
      }
      mine.put(e.pieces);
      mine.put(e.top_cut_options);
      mine.put(e.default_top_cut_options);
      mine.put(static_cast<std::uint8_t>(e.at_least));
    }
  } catch (const Error& e) {
    local_error = static_cast<int>(e.code());
    message = e.what();
  }
  int any_error = 0;
  MPI_Allreduce(&local_error, &any_error, 1, MPI_INT, MPI_MAX, context.comm);
  if (any_error != 0) {
    throw Error(static_cast<ExitCode>(any_error), message.empty() ? "a setting failed on another rank" : message);
  }
  const int size = static_cast<int>(mine.bytes().size());
  std::vector<int> sizes(context.ranks), offsets(context.ranks);
  MPI_Allgather(&size, 1, MPI_INT, sizes.data(), 1, MPI_INT, context.comm);
  long long total = 0;
  for (int r = 0; r < context.ranks; ++r) {
    offsets[r] = static_cast<int>(total);
    total += sizes[r];
  }
  if (total > std::numeric_limits<int>::max()) throw InternalError("gathered results exceed 2 GiB");
  std::string all(static_cast<std::size_t>(total), '\0');
  MPI_Allgatherv(mine.bytes().data(), size, MPI_CHAR, all.data(), sizes.data(), offsets.data(), MPI_CHAR,
                 context.comm);
  std::vector<std::pair<SettingResult, search::SearchSizeEstimate>> described;
  Unpacker u(all);
  while (!u.done()) {
    SettingResult r = unpack_setting(u);
    search::SearchSizeEstimate e;
    u.get(e.pieces);
    u.get(e.top_cut_options);
    u.get(e.default_top_cut_options);
    e.at_least = u.get<std::uint8_t>() != 0;
    described.emplace_back(std::move(r), e);
  }
  std::sort(described.begin(), described.end(),
            [](const auto& a, const auto& b) { return a.first.setting_id < b.first.setting_id; });
  if (described.size() != settings.size()) {
    throw InternalError("gathered " + std::to_string(described.size()) + " settings, expected " +
                        std::to_string(settings.size()));
  }
  std::pair<std::vector<SettingResult>, std::vector<search::SearchSizeEstimate>> out;
  for (auto& [r, e] : described) {
    out.first.push_back(std::move(r));
    out.second.push_back(e);
  }
  return out;
}

}  // namespace

std::vector<config::Setting> selected_settings(const config::Config& config, const SweepSlice& slice) {
  const auto all = config::expand_sweep(config);
  if (slice.index < 0) return all;
  return config::sweep_slice(all, slice.index, slice.count > 0 ? slice.count : static_cast<std::int64_t>(all.size()));
}

void dry_run(const config::Config& config, const engine::RunContext& context, std::ostream& out, const SweepSlice& slice) {
  const auto settings = selected_settings(config, slice);
  const auto [results, estimates] = describe_all(config, settings, context);
  if (context.rank != 0) return;
  // All of it is valid YAML and the config part valid input: save it and run it as it is.
  out << "# resolved config (" << config.file << "; input paths made absolute)\n" << config::to_yaml(config, true);
  out << "# " << settings.size() << " setting" << (settings.size() == 1 ? "" : "s") << " (dry run: nothing written)\n";
  std::ostringstream table;
  print_settings(table, config, settings, results, estimates);
  std::istringstream lines(table.str());
  for (std::string line; std::getline(lines, line);) out << "# " << line << '\n';
}

void run(const config::Config& config, const engine::RunContext& context, std::ostream& out, const SweepSlice& slice,
         const RunOptions& run_options) {
  // First: a SIGTERM while the sweep is being set up (the plan of a large sweep takes seconds) stops
  // it with a checkpoint like any other, instead of killing it without one.
  engine::install_checkpoint_signals();
  const auto settings = selected_settings(config, slice);
  const std::string resolved = config::to_yaml(config);
  const fs::path dir = config.output.dir;
  const engine::OutputDirLock lock = engine::make_output_dir(dir.string(), context.comm);
  // With several wafer counts, each problem's choice among them too (wafer_counts.hpp); with a
  // hardware sweep, each setting against its base hardware point (whatif.hpp).
  const bool wafer_counts = config.cluster.wafers.size() > 1;
  const bool hardware_sweep = config.hardware.size() > 1;
  // Every result file a run can write, and whether this one writes it. A rerun must not leave the
  // previous results looking current: they are all set aside as *.stale now; those this run rewrites
  // are removed once it has, the others stay as *.stale (never deleted: they may be all that is left
  // of an expensive run).
  const std::vector<std::pair<fs::path, bool>> outputs{
      {dir / "results.h5", config.output.hdf5},
      {dir / "summary.csv", config.output.csv},
      {dir / "wafer_counts.csv", config.output.csv && wafer_counts},
      {dir / "sensitivity.csv", config.output.csv && hardware_sweep},
  };
  const std::string config_hash = to_hex(fnv1a64(results_identity(config)));
  std::vector<engine::InputFingerprint> inputs;
  engine::on_root_agreed(context.comm, 0, [&] { inputs = input_fingerprints(config); });
  // --resume with nothing to resume from stops before anything in the directory is touched.
  const fs::path spool_path = dir / "settings.spool";
  const fs::path checkpoint_path = dir / "checkpoint.wckp";
  if (run_options.resume) {
    engine::on_root_agreed(context.comm, 0, [&] {
      std::error_code ec;
      if (fs::exists(fs::symlink_status(checkpoint_path, ec))) {
        engine::check_checkpoint(checkpoint_path.string(), config_hash, inputs);
      } else if (!fs::exists(fs::symlink_status(spool_path, ec))) {
        throw InputMissingError("--resume: neither a checkpoint '" + checkpoint_path.string() + "' nor a spool file '" +
                                spool_path.string() + "' is there; run without --resume to start afresh");
      }
      engine::Spool::check(spool_path.string(), config_hash, inputs);
    });
  }
  std::vector<fs::path> kept_stale;  // on rank 0: set aside as *.stale, and not rewritten by this run
  std::vector<std::string> set_aside;
  engine::on_root_agreed(context.comm, 0, [&] {
    for (const auto& [path, written] : outputs) {
      std::error_code ec;
      if (!fs::exists(fs::symlink_status(path, ec))) continue;
      fs::rename(path, path.string() + ".stale", ec);
      if (ec) throw OutputError("cannot set the previous '" + path.string() + "' aside: " + ec.message());
      if (!written) kept_stale.push_back(path);
      set_aside.push_back(path.filename().string());
    }
    if (!set_aside.empty()) {
      std::string names;
      for (const auto& n : set_aside) names += (names.empty() ? "" : ", ") + n;
      std::cerr << "wavel-dse: note: " << dir.string() << " holds a previous run's results (" << names
                << "); they are set aside as *.stale and deleted once this run has written its own (a stopped or "
                   "failed run leaves them as *.stale)\n";
    }
  });

  engine::DistributeOptions options;
  options.checkpoint_path = checkpoint_path.string();
  options.spool_path = spool_path.string();
  options.resume = run_options.resume;
  options.checkpoint_interval_s = config.search.checkpoint_interval_s;
  // Under Slurm stderr is a log file, where the progress line is what tells a job's state.
  options.progress = config.output.progress == "always" ||
                     (config.output.progress == "auto" && (isatty(2) || std::getenv("SLURM_JOB_ID") != nullptr));
  options.config_hash = config_hash;
  options.inputs = inputs;
  if (context.rank == 0 && !options.resume && fs::exists(options.checkpoint_path)) {
    std::cerr << "wavel-dse: note: starting afresh; the checkpoint '" << options.checkpoint_path
              << "' will be replaced (pass --resume to continue from it)\n";
  }
  if (context.rank == 0 && config.sim.samples > 0 && wafer::is_nominal(config.wafer.pe_timing)) {
    std::cerr << "wavel-dse: note: the simulator runs its nominal PE timing (cost.params_file has no sim_timing "
                 "section; configs/params/wse3.yaml has the one measured on WSE-3)\n";
  }
  auto outcome = evaluate_sweep(config, settings, context, options);
  std::vector<SettingResult> results = std::move(outcome.results);  // rank 0 only
  std::vector<WaferCountRow> counts;
  std::vector<SensitivityRow> sensitivity;
  // The end phase is rank 0's alone (the others wait for its outcome). It honours SIGTERM and SIGUSR1
  // between its steps: the finished settings stay in the spool, and --resume writes them out.
  // Fault injection for tests/cli/test_checkpoint.sh: a stop request arriving as the end phase begins.
  if (std::getenv("WAVEL_TEST_SIGNAL_END_PHASE") != nullptr) std::raise(SIGTERM);
  engine::on_root_agreed(context.comm, 0, [&] {
    // results.h5 and summary.csv appear together or not at all.
    io::ResultFiles files;
    files.poll = [] { engine::stop_if_signalled("writing the results"); };
    engine::stop_if_signalled("reading the results back");
    apply_request_grouping(config, settings, results, outcome.texts);
    engine::stop_if_signalled("grouping requests");
    io::Table table = settings_table(config, settings, results);
    engine::stop_if_signalled("tabulating the settings");
    if (wafer_counts) counts = wafer_count_rows(settings, results, config.cluster);
    io::Table counts_table = wafer_counts ? wafer_counts_table(config, settings, counts) : io::Table{};
    if (hardware_sweep) sensitivity = sensitivity_rows(config, settings, results);
    if (config.output.csv) {
      files.text_files.push_back({(dir / "summary.csv").string(), io::csv_text(table)});
      if (hardware_sweep) files.text_files.push_back({(dir / "sensitivity.csv").string(), io::csv_text(sensitivity_table(sensitivity))});
      if (wafer_counts) files.text_files.push_back({(dir / "wafer_counts.csv").string(), io::csv_text(counts_table)});
    }
    engine::stop_if_signalled("tabulating the results");
    if (config.output.hdf5) {
      files.h5_path = (dir / "results.h5").string();
      files.attributes = provenance(config, context, resolved);
      files.h5_tables.push_back(std::move(table));  // large for large sweeps: moved, not copied
      files.h5_tables.push_back(front_table(config, settings, results));
      engine::stop_if_signalled("tabulating the fronts");
      if (hardware_sweep) {
        files.h5_tables.push_back(hardware_table(config));
        files.h5_tables.push_back(sensitivity_table(sensitivity));
        files.h5_tables.push_back(hardware_front_table(config, settings, results));
      }
      files.h5_tables.push_back(schedules_table(results, outcome.texts));
      files.h5_tables.push_back(cost_params_table(config));
      engine::stop_if_signalled("gathering the schedules");
      files.h5_tables.push_back(sim_pairs_table(results));
      files.h5_tables.push_back(sim_op_pairs_table(results));
      files.h5_tables.push_back(search_stats_table(results));
      files.h5_tables.push_back(rank_stats_table(outcome.ranks));
      if (wafer_counts) files.h5_tables.push_back(std::move(counts_table));
    }
    io::write_result_files(files, MPI_COMM_SELF);
  });
  if (context.rank == 0) {
    std::error_code ignored;
    fs::remove(options.checkpoint_path, ignored);  // the results supersede it
    fs::remove(options.spool_path, ignored);
    for (const auto& [path, written] : outputs) {
      if (written) fs::remove(path.string() + ".stale", ignored);
    }
    for (const auto& path : kept_stale) {
      std::cerr << "wavel-dse: note: the previous run's '" << path.string() << "' is kept as '" << path.string()
                << ".stale' (this run does not write it)\n";
    }
    print_settings(out, config, settings, results);
    if (wafer_counts) print_wafer_counts(out, config, settings, counts);
    print_sensitivity(out, config, settings, sensitivity);
    std::int64_t grouped = 0;
    for (const auto& r : results) {
      for (const auto& s : r.schedules) grouped += s.request_groups > 1 ? 1 : 0;
      grouped += !r.front.empty() && r.front.front().request_groups > 1 ? 1 : 0;
    }
    if (grouped > 0) {
      out << grouped << " schedule figure" << (grouped == 1 ? " is" : "s are")
          << " served as groups of fewer requests one after another (faster than all at once; "
             "<schedule>_request_groups, wavel_request_groups)\n";
    }
    double wall = 0;
    std::int64_t nodes = 0;
    for (const auto& r : results) {
      wall += r.search_wall_s;
      nodes += r.search.nodes_visited;
    }
    // Notes, not data: stdout holds only the table.
    std::cerr << "search: " << nodes << " partial schedules in " << std::setprecision(3) << wall << " s of search time ("
        << human(wall > 0 ? static_cast<double>(nodes) / wall : 0.0, "schedules/s") << ")\n";
    std::cerr << "results: " << dir.string() << "/" << (config.output.hdf5 ? "results.h5 " : "")
        << (config.output.csv ? std::string("summary.csv") + (wafer_counts ? " wafer_counts.csv" : "") +
                                    (hardware_sweep ? " sensitivity.csv" : "")
                              : "")
        << '\n';
  }
  // A sweep of which nothing could be placed is not a success, though its results say why.
  engine::on_root_agreed(context.comm, 0, [&] {
    const bool any_placed = std::any_of(results.begin(), results.end(), [](const SettingResult& r) {
      return !r.front.empty() || std::any_of(r.schedules.begin(), r.schedules.end(),
                                             [](const ScheduleResult& s) { return s.placed; });
    });
    if (!results.empty() && !any_placed) {
      throw InputDataError("no setting of the sweep could be placed on the wafer (the reasons are under the table "
                           "and in the *_na_reason columns of summary.csv; results written to " +
                           dir.string() + ")");
    }
  });
}

}  // namespace wavel::driver
