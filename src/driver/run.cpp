// Sweep driver: settings are owned round-robin by rank, gathered in id order, written by all ranks.
#include "wavel/driver/run.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "wavel/common/error.hpp"
#include "wavel/common/hash.hpp"
#include "wavel/version_info.hpp"
#include "wavel/workload/workload.hpp"

namespace wavel::driver {

namespace fs = std::filesystem;

namespace {

constexpr const char* kFormatVersion = "wavel-results/1";

// Integer and double fields travel in two flat arrays; keep these lists in step with SettingSummary.
constexpr int kIntFields = 10;
constexpr int kDoubleFields = 2;

void pack(const SettingSummary& s, std::vector<std::int64_t>& ints, std::vector<double>& doubles) {
  ints.insert(ints.end(), {s.setting_id, s.tokens_per_step, s.context_tokens, s.flops_per_step, s.param_bytes,
                           s.kv_cache_bytes, s.activation_peak_bytes, s.sram_required_bytes, s.wafer_sram_bytes,
                           s.fits_sram});
  doubles.insert(doubles.end(), {s.roofline_step_s, s.roofline_tokens_per_s});
}

SettingSummary unpack(const std::int64_t* i, const double* d) {
  SettingSummary s;
  s.setting_id = i[0];
  s.tokens_per_step = i[1];
  s.context_tokens = i[2];
  s.flops_per_step = i[3];
  s.param_bytes = i[4];
  s.kv_cache_bytes = i[5];
  s.activation_peak_bytes = i[6];
  s.sram_required_bytes = i[7];
  s.wafer_sram_bytes = i[8];
  s.fits_sram = i[9];
  s.roofline_step_s = d[0];
  s.roofline_tokens_per_s = d[1];
  return s;
}

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::vector<io::Attribute> provenance(const config::Config& config, const RunContext& context,
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
      {"config_hash_fnv1a64", to_hex(fnv1a64(resolved))},
      {"mpi_ranks", std::int64_t{context.ranks}},
      {"kokkos_backend", context.kokkos_backend},
      {"kokkos_threads", std::int64_t{context.kokkos_threads}},
      {"slurm_job_id", context.slurm_job_id},
      {"seed", config.search.seed},
      {"created_utc", utc_now()},
  };
}

std::string human(double value, const char* unit) {
  static const char* prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int p = 0;
  while (std::abs(value) >= 1000.0 && p < 6) {
    value /= 1000.0;
    ++p;
  }
  std::ostringstream out;
  out << std::setprecision(value < 10 ? 3 : value < 100 ? 4 : 5) << value << ' ' << prefixes[p] << unit;
  return out.str();
}

}  // namespace

SettingSummary summarize_setting(const config::Config& config, const config::Setting& setting) {
  const auto& model = config.workloads.models.at(setting.model_index).spec;
  const workload::Workload w = workload::build_workload(model, setting.shape);
  SettingSummary s;
  s.setting_id = setting.id;
  s.tokens_per_step = w.tokens_per_step;
  s.context_tokens = w.context_tokens;
  s.flops_per_step = w.flops;
  s.param_bytes = w.param_bytes;
  s.kv_cache_bytes = w.kv_cache_bytes;
  for (const auto& layer : w.layers) {
    for (const auto& op : layer.ops) {
      s.activation_peak_bytes = std::max(s.activation_peak_bytes, op.input_bytes + op.output_bytes);
    }
  }
  s.sram_required_bytes = s.param_bytes + s.kv_cache_bytes + s.activation_peak_bytes;
  s.wafer_sram_bytes = config.wafer.total_sram_bytes();
  s.fits_sram = s.sram_required_bytes <= s.wafer_sram_bytes ? 1 : 0;
  s.roofline_step_s = static_cast<double>(w.flops) / config.wafer.peak_flops_per_s();
  // Tokens produced by one step: one per request in decode, the whole prompt in prefill.
  const double tokens = setting.shape.phase == workload::Phase::decode
                            ? static_cast<double>(setting.shape.concurrent_requests)
                            : static_cast<double>(w.tokens_per_step);
  s.roofline_tokens_per_s = s.roofline_step_s > 0 ? tokens / s.roofline_step_s : 0.0;
  return s;
}

std::vector<SettingSummary> summarize_sweep(const config::Config& config, const std::vector<config::Setting>& settings,
                                            const RunContext& context) {
  std::vector<std::int64_t> ints;
  std::vector<double> doubles;
  int local_error = 0;
  std::string message;
  try {
    for (const auto& setting : settings) {
      if (setting.id % context.ranks != context.rank) continue;
      pack(summarize_setting(config, setting), ints, doubles);
    }
  } catch (const Error& e) {
    local_error = static_cast<int>(e.code());
    message = e.what();
  }
  int any_error = 0;
  MPI_Allreduce(&local_error, &any_error, 1, MPI_INT, MPI_MAX, context.comm);
  if (any_error != 0) {
    throw Error(static_cast<ExitCode>(any_error),
                message.empty() ? "a setting failed on another rank" : message);
  }

  const int local_rows = static_cast<int>(ints.size() / kIntFields);
  std::vector<int> rows(context.ranks);
  MPI_Allgather(&local_rows, 1, MPI_INT, rows.data(), 1, MPI_INT, context.comm);
  std::vector<int> int_counts(context.ranks), int_offsets(context.ranks), dbl_counts(context.ranks),
      dbl_offsets(context.ranks);
  int total = 0;
  for (int r = 0; r < context.ranks; ++r) {
    int_counts[r] = rows[r] * kIntFields;
    dbl_counts[r] = rows[r] * kDoubleFields;
    int_offsets[r] = total * kIntFields;
    dbl_offsets[r] = total * kDoubleFields;
    total += rows[r];
  }
  std::vector<std::int64_t> all_ints(static_cast<std::size_t>(total) * kIntFields);
  std::vector<double> all_doubles(static_cast<std::size_t>(total) * kDoubleFields);
  MPI_Allgatherv(ints.data(), static_cast<int>(ints.size()), MPI_INT64_T, all_ints.data(), int_counts.data(),
                 int_offsets.data(), MPI_INT64_T, context.comm);
  MPI_Allgatherv(doubles.data(), static_cast<int>(doubles.size()), MPI_DOUBLE, all_doubles.data(),
                 dbl_counts.data(), dbl_offsets.data(), MPI_DOUBLE, context.comm);

  std::vector<SettingSummary> summaries;
  for (int i = 0; i < total; ++i) {
    summaries.push_back(unpack(&all_ints[static_cast<std::size_t>(i) * kIntFields],
                               &all_doubles[static_cast<std::size_t>(i) * kDoubleFields]));
  }
  std::sort(summaries.begin(), summaries.end(),
            [](const SettingSummary& a, const SettingSummary& b) { return a.setting_id < b.setting_id; });
  if (summaries.size() != settings.size()) throw InternalError("gathered " + std::to_string(summaries.size()) +
                                                               " settings, expected " + std::to_string(settings.size()));
  return summaries;
}

io::Table settings_table(const config::Config& config, const std::vector<config::Setting>& settings,
                         const std::vector<SettingSummary>& summaries) {
  using I = std::vector<std::int64_t>;
  using D = std::vector<double>;
  using S = std::vector<std::string>;
  I id, requests, input, output, tokens, context, flops, params, kv, act, sram, wafer_sram, fits;
  D roofline_s, roofline_tps;
  S model, phase;
  for (std::size_t i = 0; i < summaries.size(); ++i) {
    const auto& st = settings.at(i);
    const auto& su = summaries[i];
    id.push_back(su.setting_id);
    model.push_back(config.workloads.models.at(st.model_index).spec.name);
    phase.emplace_back(workload::to_string(st.shape.phase));
    requests.push_back(st.shape.concurrent_requests);
    input.push_back(st.shape.input_tokens);
    output.push_back(st.shape.output_tokens);
    tokens.push_back(su.tokens_per_step);
    context.push_back(su.context_tokens);
    flops.push_back(su.flops_per_step);
    params.push_back(su.param_bytes);
    kv.push_back(su.kv_cache_bytes);
    act.push_back(su.activation_peak_bytes);
    sram.push_back(su.sram_required_bytes);
    wafer_sram.push_back(su.wafer_sram_bytes);
    fits.push_back(su.fits_sram);
    roofline_s.push_back(su.roofline_step_s);
    roofline_tps.push_back(su.roofline_tokens_per_s);
  }
  return io::Table{"settings",
                   {{"setting_id", "1", id},
                    {"model", "", model},
                    {"phase", "", phase},
                    {"concurrent_requests", "requests", requests},
                    {"input_tokens", "tokens", input},
                    {"output_tokens", "tokens", output},
                    {"tokens_per_step", "tokens", tokens},
                    {"context_tokens", "tokens", context},
                    {"flops_per_step", "FLOP", flops},
                    {"param_bytes", "bytes", params},
                    {"kv_cache_bytes", "bytes", kv},
                    {"activation_peak_bytes", "bytes", act},
                    {"sram_required_bytes", "bytes", sram},
                    {"wafer_sram_bytes", "bytes", wafer_sram},
                    {"fits_sram", "bool", fits},
                    {"roofline_step_s", "s", roofline_s},
                    {"roofline_tokens_per_s", "tokens/s", roofline_tps}}};
}

void print_settings(std::ostream& out, const config::Config& config, const std::vector<config::Setting>& settings,
                    const std::vector<SettingSummary>& summaries) {
  std::vector<std::vector<std::string>> rows{
      {"id", "model", "phase", "requests", "in", "out", "FLOP/step", "params", "KV cache", "SRAM need", "fits",
       "roofline bound"}};
  for (std::size_t i = 0; i < summaries.size(); ++i) {
    const auto& st = settings.at(i);
    const auto& su = summaries[i];
    rows.push_back({std::to_string(su.setting_id), config.workloads.models.at(st.model_index).spec.name,
                    std::string(workload::to_string(st.shape.phase)), std::to_string(st.shape.concurrent_requests),
                    std::to_string(st.shape.input_tokens), std::to_string(st.shape.output_tokens),
                    human(static_cast<double>(su.flops_per_step), "FLOP"),
                    human(static_cast<double>(su.param_bytes), "B"), human(static_cast<double>(su.kv_cache_bytes), "B"),
                    human(static_cast<double>(su.sram_required_bytes), "B"), su.fits_sram ? "yes" : "NO",
                    human(su.roofline_tokens_per_s, "tok/s")});
  }
  std::vector<std::size_t> width(rows[0].size(), 0);
  for (const auto& r : rows)
    for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  for (const auto& r : rows) {
    for (std::size_t c = 0; c < r.size(); ++c) {
      const bool left = c == 1 || c == 2;
      out << (c ? "  " : "") << (left ? std::left : std::right) << std::setw(static_cast<int>(width[c])) << r[c];
    }
    out << '\n';
  }
  out << std::right;
  const auto& w = config.wafer;
  out << "wafer " << w.preset << ": " << w.grid_w_pes << " x " << w.grid_h_pes << " PEs (" << w.usable_pes()
      << " usable), " << human(static_cast<double>(w.total_sram_bytes()), "B") << " SRAM, peak "
      << human(w.peak_flops_per_s(), "FLOP/s") << " FP16\n"
      << "roofline bound = FLOPs / wafer peak: an upper bound on throughput, not a prediction.\n";
}

void dry_run(const config::Config& config, const RunContext& context, std::ostream& out) {
  const auto settings = config::expand_sweep(config);
  const auto summaries = summarize_sweep(config, settings, context);
  if (context.rank != 0) return;
  out << "# resolved config (" << config.file << ")\n" << config::to_yaml(config);
  out << "# " << settings.size() << " setting" << (settings.size() == 1 ? "" : "s") << " (dry run: nothing written)\n";
  print_settings(out, config, settings, summaries);
}

void run(const config::Config& config, const RunContext& context, std::ostream& out) {
  const auto settings = config::expand_sweep(config);
  const auto summaries = summarize_sweep(config, settings, context);
  const std::string resolved = config::to_yaml(config);
  const fs::path dir = config.output.dir;

  on_root_agreed(context.comm, 0, [&] {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir)) {
      throw OutputError("cannot create output directory '" + dir.string() + "': " + ec.message());
    }
  });
  const io::Table table = settings_table(config, settings, summaries);
  if (config.output.hdf5) {
    io::write_results_h5((dir / "results.h5").string(), provenance(config, context, resolved), {table}, context.comm);
  }
  if (config.output.csv) {
    on_root_agreed(context.comm, 0, [&] { io::write_csv((dir / "summary.csv").string(), table); });
  }
  if (context.rank == 0) {
    print_settings(out, config, settings, summaries);
    out << "results: " << dir.string() << "/" << (config.output.hdf5 ? "results.h5 " : "")
        << (config.output.csv ? "summary.csv" : "") << '\n';
  }
}

}  // namespace wavel::driver
