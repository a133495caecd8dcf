// Command-line parsing with CLI11 (a subcommand each, its options from one table); --help and --version are
// answered before Kokkos starts.
#include "wavel/cli/cli.hpp"

#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "wavel/calibrate/kernels.hpp"
#include "wavel/common/error.hpp"
#include "wavel/config/config.hpp"
#include "wavel/common/yaml_schema.hpp"
#include "wavel/wafer/wafer.hpp"
#include "wavel/commands/commands.hpp"
#include "wavel/commands/run.hpp"
#include "wavel/report/tables.hpp"
#include "wavel/engine/runtime.hpp"
#include "wavel/version_info.hpp"

namespace wavel::cli {

namespace {

/// Threads per rank when neither OMP_NUM_THREADS nor --kokkos-threads says. Kokkos would give every
/// rank all the cores it may run on, so `mpirun -np 2 --bind-to none` on 2 cores ran 4 search
/// threads and the hub on 2 cores (search 7x slower). A rank bound to a subset of the cores (Slurm,
/// --bind-to core) keeps its subset; an unbound one shares the node's cores with its node's ranks.
int default_threads(MPI_Comm comm) {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local_ranks = 1;
  MPI_Comm_size(node, &local_ranks);
  MPI_Comm_free(&node);
  const int hardware = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  cpu_set_t set;
  CPU_ZERO(&set);
  const int allowed = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : hardware;
  if (allowed < hardware) return std::max(1, allowed);
  return std::max(1, hardware / std::max(1, local_ranks));
}

// Each subcommand once: its usage lines and what it does (the help texts are built from these).
struct SubcommandSpec {
  const char* name;
  std::vector<const char*> usage;  ///< after "wavel-dse "
  const char* summary;
};
const std::vector<SubcommandSpec>& subcommand_specs() {
  static const std::vector<SubcommandSpec> specs{
      {"run",
       {"[run] CONFIG.yaml [--dry-run] [--set KEY=VALUE]... [--params FILE] [-o DIR] [--wide]\n"
        "                 [--sweep-index I [--sweep-count N]] [--resume]"},
       "Builds and scores the Full-Chip and WaferLLM schedules of every setting of the sweep in CONFIG.yaml,\n"
       "searches CUT/TUNE schedules and writes results.h5 and summary.csv; run it under mpirun/srun to\n"
       "spread the work over ranks.\n"},
      {"validate",
       {"validate REFERENCE.yaml [--params FILE] [-o DIR]"},
       "Predicts every point of a reference file with WaferLLM's schedule and reports the errors and the\n"
       "cross-validations.\n"},
      {"calibrate",
       {"calibrate KERNEL.yaml... [--wafer PRESET] [--params START] [--fit A,B,...] [-o DIR]",
        "calibrate REFERENCE.yaml [--params START] [--fit A,B,...] [-o DIR]",
        "calibrate CONFIG.yaml [--params START] [--fit A,B,...] [-o DIR]"},
       "Fits cost-model parameters: the kernel constants to kernel measurement files (level 1), what the\n"
       "kernels cannot pin to end-to-end reference points (level 2), or the model to the simulator.\n"},
      {"show",
       {"show RESULTS.h5 [--setting N] [--schedule fullchip|waferllm|wavel|front.N]"},
       "Prints a stored schedule as MeshIR text; without --schedule, the list of stored ones.\n"},
      {"check",
       {"check FILE.meshir [--wafer PRESET] [--params FILE]"},
       "Verifies a MeshIR schedule (every problem with its line) and prints its predicted cost per op.\n"},
      {"simulate",
       {"simulate FILE.meshir [--wafer PRESET] [--params FILE] [--trace FILE.json]"},
       "Verifies a MeshIR schedule, runs it in the mesh simulator and prints simulated against modelled cycles.\n"}};
  return specs;
}

std::vector<std::string> subcommand_names() {
  std::vector<std::string> names;
  for (const auto& s : subcommand_specs()) names.emplace_back(s.name);
  return names;
}
// Subcommands announced for later versions, so that their names are not read as config paths.
const std::vector<std::string> kPlannedSubcommands{};

struct Options {
  std::string subcommand = "run";
  bool subcommand_given = false;  ///< named on the command line (not the default run)
  std::string config_path;
  std::vector<std::string> inputs;  ///< every positional input (calibrate takes several kernel files)
  bool help = false;
  bool version = false;
  bool dry_run = false;
  std::vector<std::string> overrides;
  std::string output_dir;
  std::string params_path;
  std::vector<std::string> fit_names;
  std::int64_t setting = -1;
  std::string schedule;
  std::string wafer = "wse3";
  bool wafer_given = false;
  std::string trace_path;
  driver::SweepSlice slice;
  bool resume = false;
  std::vector<std::string> kokkos_args;  ///< --kokkos-* arguments, handed to Kokkos untouched
};

// Each option once: its spelling, its value, its help and the subcommands that take it (none
// listed: every one); any other subcommand refuses it.
struct OptionSpec {
  enum class Kind { flag, text, texts, integer };
  const char* names;       ///< "output,o"
  Kind kind;
  const char* value_name;  ///< shown in the help ("" for a flag)
  const char* help;
  std::vector<std::string> subcommands;
};
const std::vector<OptionSpec>& option_specs() {
  using K = OptionSpec::Kind;
  static const std::vector<OptionSpec> specs{
      {"help,h", K::flag, "", "print this help and exit", {}},
      {"version", K::flag, "", "print the version and git hash and exit", {}},
      {"dry-run", K::flag, "", "validate the config, print it resolved with the settings, write nothing", {"run"}},
      {"set", K::texts, "KEY.PATH=VALUE", "override a config key (repeatable), validated like the file", {"run"}},
      {"output,o", K::text, "DIR",
       "output directory (default: run: output.dir, or results/runs/<config stem>;\n"
       "validate, calibrate: results/runs/<subcommand>-<input stem>, calibrate CONFIG.yaml:\n"
       "results/runs/calibrate-sim-<config stem>)",
       {"run", "validate", "calibrate"}},
      {"params", K::text, "FILE",
       "cost-model parameters file (run: same as --set cost.params_file=FILE; default: the\n"
       "wafer's calibrated file; check, simulate: else the schedule's own param lines first;\n"
       "calibrate: the start values, default the built-in ones)",
       {"run", "validate", "calibrate", "check", "simulate"}},
      {"fit", K::text, "A,B,...",
       "calibrate: parameters to fit (defaults: kernel files: the constants of the kernels\n"
       "given; a reference file: alpha_cycles_per_hop,gemm_k_cycles,scalar_op_cycles;\n"
       "a config: alpha_cycles_per_hop,beta_cycles_per_stage,gemm_step_cycles,gemm_k_cycles,\n"
       "scalar_op_cycles)",
       {"calibrate"}},
      {"setting", K::integer, "N", "show: setting id", {"show"}},
      {"schedule", K::text, "NAME",
       "show: schedule name: fullchip, waferllm, wavel (the best found) or front.N\n"
       "(N-th point of the front)",
       {"show"}},
      {"wafer", K::text, "PRESET",
       "check, simulate, calibrate KERNEL.yaml...: wafer preset for clock, SIMD, SRAM ports\n"
       "and links (default wse3)",
       {"calibrate", "check", "simulate"}},
      {"trace", K::text, "FILE.json", "simulate: write a Chrome/Perfetto trace", {"simulate"}},
      {"sweep-index", K::integer, "I", "run: only task I of the sweep (a Slurm array task; output in <output>/sweep-I)",
       {"run"}},
      {"sweep-count", K::integer, "N", "run: the sweep is split into N contiguous tasks (default: one per setting)",
       {"run"}},
      {"resume", K::flag, "", "run: continue from <output>/checkpoint.wckp (written on SIGUSR1/SIGTERM, exit 75)",
       {"run"}},
      {"wide", K::flag, "",
       "run: print every column of the settings table (default: the headline ones;\n"
       "the same as --set output.table=wide)",
       {"run"}}};
  return specs;
}

std::string long_name(const OptionSpec& spec) {
  const std::string names = spec.names;
  return names.substr(0, names.find(','));
}

// The one-letter spelling ("o" of "output,o"), or "" for none.
std::string short_name(const OptionSpec& spec) {
  const std::string names = spec.names;
  const auto comma = names.find(',');
  return comma == std::string::npos ? "" : names.substr(comma + 1);
}

// The option table's row spelt `word` ("--output", "-o", "--output=DIR"), or null.
const OptionSpec* spec_spelt(const std::string& word) {
  const std::string name = word.substr(0, word.find('='));
  for (const auto& spec : option_specs()) {
    if (name == "--" + long_name(spec) || (!short_name(spec).empty() && name == "-" + short_name(spec))) return &spec;
  }
  return nullptr;
}

bool takes(const OptionSpec& spec, const std::string& subcommand) {
  return spec.subcommands.empty() ||
         std::find(spec.subcommands.begin(), spec.subcommands.end(), subcommand) != spec.subcommands.end();
}

// The options `subcommand` takes ("" for all of them) as a help block: each spelling and value
// name in a column, its help (lines indented) beside it.
std::string described(const std::string& title, const std::string& subcommand = "") {
  std::vector<std::pair<std::string, std::string>> rows;
  std::size_t width = 0;
  for (const auto& spec : option_specs()) {
    if (!subcommand.empty() && !takes(spec, subcommand)) continue;
    std::string left = short_name(spec).empty() ? "--" + long_name(spec)
                                                : "-" + short_name(spec) + " [ --" + long_name(spec) + " ]";
    if (*spec.value_name != '\0') left += std::string(" ") + spec.value_name;
    width = std::max(width, left.size());
    rows.emplace_back(left, spec.help);
  }
  std::ostringstream out;
  out << title << ":\n";
  for (const auto& [left, help] : rows) {
    out << "  " << left << std::string(width + 3 - left.size(), ' ');
    for (const char c : help) {
      out << c;
      if (c == '\n') out << std::string(width + 5, ' ');
    }
    out << '\n';
  }
  return out.str();
}

const SubcommandSpec& subcommand_spec(const std::string& name) {
  for (const auto& s : subcommand_specs()) {
    if (name == s.name) return s;
  }
  throw InternalError("no subcommand named '" + name + "'");
}

std::string subcommand_help(const std::string& subcommand) {
  const SubcommandSpec& spec = subcommand_spec(subcommand);
  std::ostringstream out;
  for (std::size_t i = 0; i < spec.usage.size(); ++i) {
    out << (i == 0 ? "Usage: wavel-dse " : "       wavel-dse ") << spec.usage[i] << '\n';
  }
  out << spec.summary << '\n' << described("Options of '" + subcommand + "'", subcommand)
      << "\nExit codes: 0 ok, 64 usage, 65 bad data, 66 missing input, 69 output directory in use, 70 internal\n"
         "error, 73 cannot write output, 75 checkpointed (requeue), 78 invalid config. See docs/cli.md.\n";
  return out.str();
}

std::string usage_text() {
  std::ostringstream out;
  bool first = true;
  for (const auto& spec : subcommand_specs()) {
    for (const char* line : spec.usage) {
      out << (first ? "Usage: wavel-dse " : "       wavel-dse ") << line << '\n';
      first = false;
    }
  }
  out << "\n"
         "run: builds and scores the Full-Chip and WaferLLM schedules of every setting of the sweep in\n"
         "CONFIG.yaml, searches CUT/TUNE schedules, and writes results.h5 and summary.csv; run it under\n"
         "mpirun/srun to spread the work over ranks. validate/calibrate compare the cost model with published\n"
         "measurements (a reference file), or calibrate fits it to the mesh simulator over a config's settings;\n"
         "show prints a stored schedule (without --schedule: the list of stored ones); check verifies and scores\n"
         "a MeshIR file; simulate runs it in the mesh simulator. Only the data asked for goes to stdout.\n"
         "\n"
      << described("Options")
      << "  --kokkos-*            passed to Kokkos (e.g. --kokkos-threads=N)\n"
         "\n"
         "\n"
         "Exit codes: 0 ok, 64 usage, 65 bad data, 66 missing input, 69 output directory in use by another\n"
         "run, 70 internal error, 73 cannot write output, 75 checkpointed (requeue), 78 invalid config.\n"
         "Kokkos warnings are off unless KOKKOS_DISABLE_WARNINGS=0 is set.\n"
         "Config keys and output format: see docs/config.md and docs/output.md.\n";
  return out.str();
}

Options parse(const std::vector<std::string>& args) {
  Options o;
  std::vector<std::string> rest;
  for (const auto& a : args) {
    if (a.rfind("--kokkos-", 0) == 0) {
      o.kokkos_args.push_back(a);
    } else {
      rest.push_back(a);
    }
  }
  auto listed = [](const std::vector<std::string>& names, const std::string& word) {
    return std::find(names.begin(), names.end(), word) != names.end();
  };
  // `help` and `help SUBCOMMAND` are --help, as git and most tools take them (a file named help still runs).
  std::error_code help_ec;
  if (!rest.empty() && rest[0] == "help" && !std::filesystem::exists(rest[0], help_ec)) {
    rest.erase(rest.begin());
    rest.push_back("--help");
  }
  const std::vector<std::string> subcommands = subcommand_names();
  if (!rest.empty() && (listed(subcommands, rest[0]) || listed(kPlannedSubcommands, rest[0]))) {
    o.subcommand = rest[0];
    o.subcommand_given = true;
    rest.erase(rest.begin());
  } else if (!rest.empty() && rest[0].rfind('-', 0) != 0) {
    // A word that is no file but close to a subcommand is a mistyped subcommand, not a config.
    std::error_code ec;
    const std::string suggestion = yaml::did_you_mean(rest[0], subcommands);
    if (!suggestion.empty() && !std::filesystem::exists(rest[0], ec)) {
      std::string all;
      for (const auto& name : subcommands) all += (all.empty() ? "" : ", ") + name;
      throw UsageError("unknown subcommand '" + rest[0] + "'; did you mean '" + suggestion + "'? (subcommands: " + all +
                       ")");
    }
  }
  // One CLI11 subcommand per row of the subcommand table, each with the options the option table
  // gives it; a word left over is an option of another subcommand or none (reported below).
  CLI::App app("", "wavel-dse");
  // Bound values (only one subcommand is parsed, so the subcommands share them).
  std::vector<std::string> inputs;
  std::map<std::string, std::vector<std::string>> lists;  // a repeatable option's values, by long name
  app.set_help_flag();
  app.require_subcommand(1, 1);
  for (const auto& sub_spec : subcommand_specs()) {
    CLI::App* sub = app.add_subcommand(sub_spec.name, sub_spec.summary);
    sub->set_help_flag();
    sub->allow_extras();
    for (const auto& spec : option_specs()) {
      if (!takes(spec, sub_spec.name)) continue;
      const std::string spelling =
          "--" + long_name(spec) + (short_name(spec).empty() ? "" : ",-" + short_name(spec));
      using K = OptionSpec::Kind;
      switch (spec.kind) {
        case K::flag: sub->add_flag(spelling, spec.help); break;
        case K::text: sub->add_option(spelling, spec.help)->type_name(spec.value_name); break;
        case K::texts:
          // Repeatable, one value each time (a later positional is not swallowed).
          sub->add_option(spelling, lists[long_name(spec)], spec.help)->type_name(spec.value_name)->allow_extra_args(false);
          break;
        case K::integer:
          sub->add_option(spelling, spec.help)
              ->check(CLI::Validator(
                  [](std::string& word) {
                    std::int64_t value = 0;
                    return CLI::detail::lexical_cast(word, value) ? std::string()
                                                                  : "expected a whole number, got '" + word + "'";
                  },
                  ""))
              ->type_name(spec.value_name);
          break;
      }
    }
    sub->add_option("inputs", inputs, "input files");
  }
  const CLI::App* sub = nullptr;
  try {
    std::vector<std::string> reversed{rest.rbegin(), rest.rend()};
    reversed.push_back(o.subcommand);
    app.parse(reversed);
    sub = app.get_subcommand(o.subcommand);
  } catch (const CLI::ParseError& e) {
    throw UsageError(e.what());
  }
  // Left over: an option the table gives another subcommand, or one it does not know.
  for (const std::string& word : sub->remaining()) {
    if (word.rfind('-', 0) != 0) continue;
    const std::string given = word.substr(0, word.find('='));
    if (const OptionSpec* other = spec_spelt(word)) {
      throw UsageError("option --" + long_name(*other) + " does not apply to '" + o.subcommand + "'");
    }
    std::vector<std::string> names;
    for (const auto& spec : option_specs()) {
      if (takes(spec, o.subcommand)) names.push_back("--" + long_name(spec));
    }
    const std::string suggestion = yaml::did_you_mean(given, names);
    throw UsageError("unrecognised option '" + given + "'" +
                     (suggestion.empty() ? "" : "; did you mean '" + suggestion + "'?"));
  }
  const auto given = [&](const char* name) {
    const CLI::Option* option = sub->get_option_no_throw(std::string("--") + name);
    return option != nullptr && option->count() > 0;
  };
  const auto text = [&](const char* name) { return sub->get_option(std::string("--") + name)->as<std::string>(); };
  const auto integer = [&](const char* name) {
    return sub->get_option(std::string("--") + name)->as<std::int64_t>();
  };
  o.help = given("help");
  o.version = given("version");
  if (o.help || o.version) return o;
  o.dry_run = given("dry-run");
  o.overrides = lists["set"];
  if (given("wide")) o.overrides.push_back("output.table=wide");
  if (given("output")) {
    o.output_dir = text("output");
    if (o.output_dir.empty()) throw UsageError("-o/--output needs a directory; '' names none");
  }
  if (given("params")) {
    o.params_path = text("params");
    std::error_code ec;
    if (!std::filesystem::is_regular_file(o.params_path, ec)) {
      throw InputMissingError("cannot read params file '" + o.params_path + "' (--params)");
    }
  }
  if (given("setting")) {
    o.setting = integer("setting");
    if (o.setting < 0) throw UsageError("--setting must be a setting id (0 or more), got " + std::to_string(o.setting));
  }
  if (given("schedule")) o.schedule = text("schedule");
  if (given("wafer")) o.wafer = text("wafer");
  o.wafer_given = given("wafer");
  if (o.wafer_given && !wafer::find_wafer_preset(o.wafer)) {
    const std::string suggestion = yaml::did_you_mean(o.wafer, wafer::wafer_preset_names());
    throw UsageError("unknown wafer preset '" + o.wafer + "' (--wafer)" +
                     (suggestion.empty() ? "" : "; did you mean '" + suggestion + "'?") + " (presets: wse2, wse3)");
  }
  if (given("trace")) o.trace_path = text("trace");
  if (given("sweep-index")) o.slice.index = integer("sweep-index");
  if (given("sweep-count")) o.slice.count = integer("sweep-count");
  o.resume = given("resume");
  if (o.resume && o.dry_run) throw UsageError("--resume and --dry-run exclude each other");
  if (given("sweep-count") && !given("sweep-index")) throw UsageError("--sweep-count needs --sweep-index");
  if (given("fit")) {
    std::stringstream list(text("fit"));
    for (std::string name; std::getline(list, name, ',');) {
      if (!name.empty()) o.fit_names.push_back(name);
    }
  }
  if (listed(kPlannedSubcommands, o.subcommand)) {
    throw UsageError("subcommand '" + o.subcommand + "' is not available in this version (" + version_string() + ")");
  }
  const char* input_name = o.subcommand == "run"         ? "CONFIG.yaml"
                           : o.subcommand == "show"      ? "RESULTS.h5"
                           : o.subcommand == "check" || o.subcommand == "simulate" ? "FILE.meshir"
                                                         : "REFERENCE.yaml";
  if (inputs.empty()) throw UsageError(std::string("missing ") + input_name);
  if (inputs.size() > 1 && o.subcommand != "calibrate") {
    throw UsageError(std::string("expected one ") + input_name + ", got " + std::to_string(inputs.size()));
  }
  o.config_path = inputs[0];
  o.inputs = inputs;
  return o;
}

void execute(const Options& o, std::ostream& out, MPI_Comm comm) {
  const engine::RunContext context = engine::make_run_context(comm);
  if (o.subcommand == "validate") return driver::validate_command(o.config_path, o.params_path, o.output_dir, context, out);
  if (o.subcommand == "calibrate") {
    // Kernel measurement files (a `kernel:` key) fit the kernel constants; a config (it has
    // `workloads:`) calibrates against the simulator; anything else is a reference file.
    const std::string text = engine::read_file_on_root(o.config_path, comm, "calibration input");
    if (calibrate::looks_like_kernel_file(text)) {
      return driver::calibrate_kernels_command(o.inputs, o.wafer, o.params_path, o.fit_names, o.output_dir, context,
                                               out);
    }
    if (o.inputs.size() > 1) {
      throw UsageError("calibrate takes several files only when they are kernel measurement files; '" + o.config_path +
                       "' is not one");
    }
    if (o.wafer_given) throw UsageError("option --wafer applies to 'calibrate' only with kernel measurement files");
    if (config::looks_like_sweep_config(text)) {
      return driver::calibrate_against_sim_command(o.config_path, o.params_path, o.fit_names, o.output_dir, context,
                                                   out);
    }
    return driver::calibrate_command(o.config_path, o.params_path, o.fit_names, o.output_dir, context, out);
  }
  if (o.subcommand == "show") return driver::show_command(o.config_path, o.setting, o.schedule, context, out);
  if (o.subcommand == "check") return driver::check_command(o.config_path, o.wafer_given ? o.wafer : "", o.params_path, context, out);
  if (o.subcommand == "simulate") {
    return driver::simulate_command(o.config_path, o.wafer_given ? o.wafer : "", o.params_path, o.trace_path, context, out);
  }
  const std::string text = engine::read_file_on_root(o.config_path, comm);
  std::vector<std::string> overrides = o.overrides;
  if (!o.params_path.empty()) overrides.push_back("cost.params_file=" + o.params_path);
  config::Config config = driver::parse_config_on_ranks(text, o.config_path, overrides, comm);
  if (!o.output_dir.empty()) config.output.dir = o.output_dir;
  if (o.slice.index >= 0) config.output.dir += "/sweep-" + std::to_string(o.slice.index);
  if (o.dry_run) {
    driver::dry_run(config, context, out, o.slice);
  } else {
    driver::RunOptions run_options;
    run_options.resume = o.resume;
    driver::run(config, context, out, o.slice, run_options);
  }
}

}  // namespace

std::string version_string() {
  return std::string("wavel-dse ") + WAVEL_VERSION + " (git " + WAVEL_GIT_HASH + ")";
}

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  try {
    const Options o = parse(args);
    if (o.help) {
      if (rank == 0) out << (o.subcommand_given ? subcommand_help(o.subcommand) : usage_text());
      return 0;
    }
    if (o.version) {
      if (rank == 0) out << version_string() << '\n';
      return 0;
    }
    std::unique_ptr<Kokkos::ScopeGuard> kokkos;
    if (!Kokkos::is_initialized()) {
      std::vector<std::string> kokkos_argv_text{"wavel-dse"};
      // Kokkos prints its warnings (e.g. OMP_PROC_BIND unset) on stdout, which holds only the data
      // asked for; KOKKOS_DISABLE_WARNINGS=0 brings them back (Kokkos refuses both at once).
      if (std::getenv("KOKKOS_DISABLE_WARNINGS") == nullptr) kokkos_argv_text.push_back("--kokkos-disable-warnings");
      kokkos_argv_text.insert(kokkos_argv_text.end(), o.kokkos_args.begin(), o.kokkos_args.end());
      const bool threads_given =
          std::getenv("OMP_NUM_THREADS") != nullptr ||
          std::any_of(o.kokkos_args.begin(), o.kokkos_args.end(), [](const std::string& a) {
            return a.rfind("--kokkos-threads", 0) == 0 || a.rfind("--kokkos-num-threads", 0) == 0;
          });
      const int threads = default_threads(comm);  // collective: every rank asks
      if (!threads_given) kokkos_argv_text.push_back("--kokkos-threads=" + std::to_string(threads));
      std::vector<char*> kokkos_argv;
      for (auto& a : kokkos_argv_text) kokkos_argv.push_back(a.data());
      int kokkos_argc = static_cast<int>(kokkos_argv.size());
      kokkos = std::make_unique<Kokkos::ScopeGuard>(kokkos_argc, kokkos_argv.data());
    }
    execute(o, out, comm);
    return 0;
  } catch (const UsageError& e) {
    if (rank == 0) err << "wavel-dse: error: " << e.what() << "\nTry 'wavel-dse --help'.\n";
    return static_cast<int>(e.code());
  } catch (const DiagnosticError& e) {
    if (rank == 0) {
      err << e.what() << '\n';
      err << "wavel-dse: " << e.diagnostics().size() << " error" << (e.diagnostics().size() == 1 ? "" : "s")
          << "; nothing was written\n";
    }
    return static_cast<int>(e.code());
  } catch (const Error& e) {
    // A stop on SIGUSR1/SIGTERM with its checkpoint written is planned (exit 75, requeue), not an error.
    const bool planned_stop = e.code() == ExitCode::checkpointed;
    if (rank == 0) err << "wavel-dse: " << (planned_stop ? "" : "error: ") << e.what() << '\n';
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    err << "wavel-dse: internal error on rank " << rank << ": " << e.what() << '\n';
    return static_cast<int>(ExitCode::internal);
  }
}

}  // namespace wavel::cli
