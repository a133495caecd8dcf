// Hostile inputs (issue 15): every parser refuses them with its documented error, quickly and
// with bounded memory, never with a crash or C++ library text.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "test_support.hpp"
#include "wavel/calibrate/reference.hpp"
#include "wavel/common/error.hpp"
#include "wavel/common/hash.hpp"
#include "wavel/common/output_file.hpp"
#include "wavel/config/config.hpp"
#include "wavel/engine/checkpoint.hpp"
#include "wavel/engine/spool.hpp"
#include "wavel/common/fields.hpp"
#include "wavel/sweep/setting_tasks.hpp"
#include "wavel/workload/model.hpp"
#include "wavel/workload/workload.hpp"
#include "wavel/cost/params.hpp"
#include "wavel/io/hdf5.hpp"
#include "wavel/io/results.hpp"
#include "wavel/meshir/schedule.hpp"
#include "wavel/meshir/verify.hpp"

namespace {

using Clock = std::chrono::steady_clock;

using wavel::test::outcome;

// An alias bomb: each level repeats the previous one ten times.
std::string alias_bomb(int levels) {
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= levels; ++i) {
    const std::string p = "*a" + std::to_string(i - 1);
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + p + "," + p + "," + p + "," + p + "," +
            p + "," + p + "," + p + "," + p + "," + p + "," + p + "]\n";
  }
  return text;
}

}  // namespace

TEST_CASE("a self-referencing YAML alias is refused, in the file and in --set") {
  const char* minimal = "workloads:\n  models: [llama3-8b]\n";
  auto [code, text] = outcome([&] { wavel::config::parse_config(std::string(minimal) + "wafer: &a [*a]\n", "c.yaml", {}); });
  CHECK(code == wavel::ExitCode::config);
  CHECK(text.find("c.yaml:3:") != std::string::npos);
  CHECK(text.find("recursive YAML alias") != std::string::npos);

  std::tie(code, text) = outcome([&] { wavel::config::parse_config(minimal, "c.yaml", {"wafer=&a [*a]"}); });
  CHECK(code == wavel::ExitCode::config);
  CHECK(text.find("--set[1]") != std::string::npos);
  CHECK(text.find("recursive YAML alias") != std::string::npos);

  // A map that contains itself, one level down.
  std::tie(code, text) = outcome([&] { wavel::config::parse_config(std::string(minimal) + "sim: &s {x: {y: *s}}\n", "c.yaml", {}); });
  CHECK(code == wavel::ExitCode::config);
  CHECK(text.find("recursive YAML alias") != std::string::npos);
}

TEST_CASE("self-referencing aliases in reference and params files are data errors") {
  auto [code, text] = outcome([] { wavel::calibrate::parse_reference("source: &a [*a]\n", "ref.yaml"); });
  CHECK(code == wavel::ExitCode::data_error);
  CHECK(text.find("recursive YAML alias") != std::string::npos);
  std::tie(code, text) = outcome([] { wavel::cost::parse_params("alpha: &a [*a]\n", "p.yaml", wavel::cost::CostParams{}); });
  CHECK(code != wavel::ExitCode::ok);
  CHECK(code != wavel::ExitCode::internal);
  CHECK(text.find("recursive YAML alias") != std::string::npos);
}

TEST_CASE("an alias bomb is refused within a second") {
  const auto start = Clock::now();
  auto [code, text] = outcome([] { wavel::config::parse_config(alias_bomb(9), "bomb.yaml", {}); });
  CHECK(code == wavel::ExitCode::config);
  CHECK(text.find("too many YAML nodes") != std::string::npos);
  // A correctness bound, not a speed target: without the cap this takes minutes and gigabytes.
  CHECK(std::chrono::duration<double>(Clock::now() - start).count() < 5.0);
  // Deep nesting is refused too, before the stack is at risk.
  std::tie(code, text) = outcome([] {
    wavel::config::parse_config(std::string(5000, '[') + std::string(5000, ']'), "deep.yaml", {});
  });
  CHECK(code == wavel::ExitCode::config);
}

TEST_CASE("results.h5 readers check every column's type, rank and length" * doctest::test_suite("mpi")) {
  namespace h5 = wavel::io::h5;
  const auto dir = wavel::test::scratch_dir("hostile-h5");
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) return;  // one process writes and reads its own files
  const std::string path = (dir / "short.h5").string();
  {
    h5::Handle file = h5::create_file(path, MPI_COMM_SELF);
    h5::Handle group = h5::create_group(file, "schedules");
    h5::write_attribute(group, "columns", std::vector<std::string>{"setting_id", "schedule", "meshir"});
    h5::write_column(group, "setting_id", std::vector<std::int64_t>{0, 0, 1}, 3, "1", MPI_COMM_SELF);
    h5::write_column(group, "schedule", std::vector<std::string>{"fullchip", "waferllm", "fullchip"}, 3, "",
                     MPI_COMM_SELF);
    h5::write_column(group, "meshir", std::vector<std::string>{"x"}, 1, "", MPI_COMM_SELF);  // too short
    group.close();
    file.close();
  }
  auto [code, text] = outcome([&] { wavel::io::read_table_h5(path, "schedules"); });
  CHECK(code == wavel::ExitCode::data_error);
  CHECK(text.find("short.h5") != std::string::npos);
  CHECK(text.find("schedules/meshir") != std::string::npos);
  CHECK(text.find("1 rows") != std::string::npos);

  std::tie(code, text) = outcome([&] { wavel::io::read_table_h5(path, "nope"); });
  CHECK(code == wavel::ExitCode::data_error);

  // Not HDF5 at all, or absent: 65 and 66, not "cannot write output" (73).
  const std::string not_h5 = (dir / "text.h5").string();
  { std::ofstream(not_h5) << "wafer: wse3\n"; }
  std::tie(code, text) = outcome([&] { wavel::io::read_table_h5(not_h5, "schedules"); });
  CHECK(code == wavel::ExitCode::data_error);
  CHECK(text.find("not an HDF5 file") != std::string::npos);
  std::tie(code, text) = outcome([&] { wavel::io::read_table_h5((dir / "absent.h5").string(), "schedules"); });
  CHECK(code == wavel::ExitCode::no_input);
}

namespace {

// This rank's own scratch directory, so ranks never write the same file.
std::filesystem::path own_dir(const std::string& name) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const auto dir = wavel::test::scratch_dir(name) / ("rank" + std::to_string(rank));
  std::filesystem::create_directories(dir);
  return dir;
}

// The shipped Llama 3 8B config.json with one key's value replaced.
std::string hf_with(const std::string& key, const std::string& value) {
  std::string text = wavel::test::read_text(wavel::test::source_path("tests/data/hf/llama3-8b/config.json"));
  const auto at = text.find("\"" + key + "\"");
  REQUIRE(at != std::string::npos);
  const auto colon = text.find(':', at);
  const auto end = text.find_first_of(",}", colon);
  return text.replace(colon + 1, end - colon - 1, " " + value);
}

}  // namespace

TEST_CASE("HF config.json values beyond their documented ranges are data errors, at once") {
  const auto dir = own_dir("hostile-hf");
  const struct {
    const char* key;
    const char* value;
  } cases[] = {{"num_hidden_layers", "2147483648"}, {"vocab_size", "4611686018427387904"},
               {"hidden_size", "4611686018427387904"}, {"num_attention_heads", "1048576"},
               {"intermediate_size", "9223372036854775807"}};
  for (const auto& c : cases) {
    CAPTURE(c.key);
    const auto path = dir / "config.json";
    { std::ofstream(path) << hf_with(c.key, c.value); }
    const auto start = Clock::now();
    auto [code, text] = outcome([&] { wavel::workload::load_hf_config(path.string()); });
    CHECK(code == wavel::ExitCode::data_error);
    CHECK(text.find(c.key) != std::string::npos);
    CHECK(text.find("supported maximum") != std::string::npos);
    CHECK(std::chrono::duration<double>(Clock::now() - start).count() < 5.0);
  }
}

TEST_CASE("a HF config.json is named after its folder, even as ./config.json") {
  const auto dir = own_dir("hostile-hf-name") / "my-model";
  std::filesystem::create_directories(dir);
  { std::ofstream(dir / "config.json") << hf_with("vocab_size", "128256"); }
  CHECK(wavel::workload::load_hf_config((dir / "config.json").string()).name == "my-model");
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir);
  const auto model = wavel::workload::load_hf_config("config.json");
  std::filesystem::current_path(cwd);
  CHECK(model.name == "my-model");
}

TEST_CASE("op-graph sizes that overflow 64 bits are data errors, not undefined behaviour") {
  // Within every per-key range, but the product of the largest ones is too large to count.
  wavel::workload::ModelSpec m = *wavel::workload::find_model_preset("llama3-8b");
  m.vocab = std::int64_t{1} << 24;
  m.hidden = std::int64_t{1} << 20;
  m.ffn = std::int64_t{1} << 20;
  m.num_heads = 4096;
  m.num_kv_heads = 4096;
  m.head_dim = 256;
  m.num_layers = 1024;
  wavel::workload::WorkloadShape shape{wavel::workload::Phase::prefill, 1 << 20, 1 << 24, 1};
  auto [code, text] = outcome([&] { wavel::workload::build_workload(m, shape); });
  CHECK(code == wavel::ExitCode::data_error);
  CHECK(text.find("too large to model") != std::string::npos);
}

TEST_CASE("reference points beyond their ranges are data errors") {
  const std::string text =
      "source: test\nwafer: wse2\npoints:\n  - {model: llama3-8b, phase: decode, context_tokens: 4611686018427387904,"
      " grid: 600, tpr_tokens_per_s: 10}\n";
  auto [code, message] = outcome([&] { wavel::calibrate::parse_reference(text, "ref.yaml"); });
  CHECK(code == wavel::ExitCode::data_error);
  CHECK(message.find("context_tokens") != std::string::npos);
}

namespace {

// A checkpoint whose checksum is right but whose contents are forged by `body`.
std::string forged_checkpoint(const std::function<void(wavel::Packer&)>& body) {
  wavel::Packer p;
  p.put(wavel::engine::kCheckpointFormat);  // this build's format: the forgeries must reach the decoder
  p.put(std::string("hash"));
  p.put(std::uint64_t{0});   // no input fingerprints
  p.put(std::uint64_t{42});
  p.put(std::uint64_t{3});
  body(p);
  std::string text = "WAVEL-DSE CHECKPOINT\n" + p.bytes();
  const std::uint64_t sum = wavel::fnv1a64(text);
  text.append(reinterpret_cast<const char*>(&sum), sizeof sum);
  return text;
}

}  // namespace

TEST_CASE("forged checkpoint counts and results are data errors without library text") {
  const auto dir = own_dir("hostile-checkpoint");
  const auto path = (dir / "checkpoint.wckp").string();
  const auto finished = [](wavel::Packer& p, std::uint64_t task, std::uint64_t offset) {
    p.put(task);
    p.put(offset);
    p.put(std::uint64_t{10});
    p.put(std::uint64_t{0});
  };
  const std::function<void(wavel::Packer&)> forgeries[] = {
      [](wavel::Packer& p) { p.put(std::uint64_t{1} << 60); },  // finished count
      [](wavel::Packer& p) {
        p.put(std::uint64_t{0});
        p.put(std::uint64_t{1} << 61);  // done count
      },
      [](wavel::Packer& p) {
        p.put(std::uint64_t{0});
        p.put(std::uint64_t{2});  // the same task done twice
        for (int i = 0; i < 2; ++i) {
          p.put(std::uint64_t{1});
          p.put(std::string());
        }
      },
      [&](wavel::Packer& p) {
        p.put(std::uint64_t{1});
        finished(p, 1, std::uint64_t{1} << 55);  // a spool offset no file has
      },
      [&](wavel::Packer& p) {
        p.put(std::uint64_t{1});
        finished(p, 2, 0);
        p.put(std::uint64_t{1});  // the finished task also done
        p.put(std::uint64_t{2});
        p.put(std::string());
      },
      [](wavel::Packer& p) {
        p.put(std::uint64_t{0});
        p.put(std::uint64_t{0});
        p.put(std::uint64_t{1});
        p.put(std::uint64_t{1} << 59);  // the shared state of one slot
      }};
  for (const auto& forge : forgeries) {
    { std::ofstream(path, std::ios::binary) << forged_checkpoint(forge); }
    auto [code, text] = outcome([&] { wavel::engine::read_checkpoint(path, "hash", {}, 42, 3); });
    CHECK(code == wavel::ExitCode::data_error);
    CHECK(text.find("std::") == std::string::npos);
    CHECK(text.find("vector") == std::string::npos);
    CHECK(text.find(path) != std::string::npos);
    CHECK(text.find("has format") == std::string::npos);
  }
  // Results stored in a checkpoint are decoded before use: a forged count inside one is refused.
  wavel::Packer blob;
  for (int i = 0; i < 14; ++i) blob.put(std::int64_t{0});
  blob.put(std::uint64_t{1} << 58);  // schedules
  for (auto kind : {wavel::driver::TaskResultKind::baselines, wavel::driver::TaskResultKind::finish,
                    wavel::driver::TaskResultKind::piece}) {
    auto [code, text] = outcome([&] { wavel::driver::check_task_result(kind, blob.bytes()); });
    CHECK(code == wavel::ExitCode::data_error);
    CHECK(text.find("std::") == std::string::npos);
  }
}

TEST_CASE("a sweep whose axes multiply past the settings limit is refused before it is expanded") {
  std::string axis = "[";
  for (int i = 1; i <= 400; ++i) axis += (i > 1 ? ", " : "") + std::to_string(i);
  axis += "]";
  const std::string text = "workloads:\n  models: [llama3-8b]\n  input_tokens: " + axis + "\n  output_tokens: " + axis +
                           "\n  concurrent_requests: " + axis + "\n";
  const auto start = Clock::now();
  auto [code, message] = outcome([&] { wavel::config::parse_config(text, "sweep.yaml", {}); });
  CHECK(code == wavel::ExitCode::config);
  CHECK(message.find("the limit is 100000") != std::string::npos);
  CHECK(std::chrono::duration<double>(Clock::now() - start).count() < 5.0);
}

TEST_CASE("MeshIR SRAM of overlapping regions: the sweep finds the most loaded point, and many regions stay cheap") {
  using wavel::meshir::PlacedOp;
  using wavel::meshir::Rect;
  using wavel::meshir::Schedule;
  // One weight-holding op per region, on one PE, so a region's own resident bytes are its weight.
  auto schedule_of = [](const std::vector<Rect>& regions, const std::vector<std::int64_t>& weights) {
    Schedule s;
    s.grid_w_pes = s.grid_h_pes = 16;
    s.sram_per_pe_bytes = 1;  // every region too full: a diagnostic each
    s.regions = regions;
    for (std::size_t r = 0; r < regions.size(); ++r) {
      PlacedOp op;
      op.name = "op" + std::to_string(r);
      op.kernel = wavel::meshir::Kernel::meshgemv;
      op.region = static_cast<int>(r);
      op.used = Rect{regions[r].x, regions[r].y, 1, 1};
      op.work.weight_bytes = weights[r];
      s.ops.push_back(op);
    }
    return s;
  };
  std::uint64_t seed = 12345;
  auto next = [&](std::int64_t n) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::int64_t>((seed >> 33) % static_cast<std::uint64_t>(n));
  };
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<Rect> regions;
    std::vector<std::int64_t> weights;
    for (int r = 0; r < 6; ++r) {
      const std::int64_t x = next(12), y = next(12);
      regions.push_back(Rect{x, y, 1 + next(16 - x), 1 + next(16 - y)});
      weights.push_back(1 + next(1000));
    }
    const auto all = wavel::meshir::region_sram_per_pe_all(schedule_of(regions, weights));
    for (std::size_t r = 0; r < regions.size(); ++r) {
      std::int64_t deepest = 0;  // every PE of the region, counted directly
      for (std::int64_t px = regions[r].x; px < regions[r].x + regions[r].w; ++px) {
        for (std::int64_t py = regions[r].y; py < regions[r].y + regions[r].h; ++py) {
          std::int64_t load = 0;
          for (std::size_t q = 0; q < regions.size(); ++q) {
            if (q != r && regions[q].contains(px, py)) load += weights[q];
          }
          deepest = std::max(deepest, load);
        }
      }
      CHECK(all[r].resident_bytes == weights[r] + deepest);
    }
  }
  // 1000 nested regions in one step: every pair overlaps, and the diagnostics are capped.
  std::vector<Rect> nested;
  for (std::int64_t i = 0; i < 1000; ++i) nested.push_back(Rect{i % 8, i % 8, 16 - i % 8, 16 - i % 8});
  const Schedule many = schedule_of(nested, std::vector<std::int64_t>(nested.size(), std::int64_t{1} << 40));
  wavel::meshir::VerifyOptions options;
  options.file_label = "many.meshir";
  const auto diagnostics = wavel::meshir::verify(many, options);
  REQUIRE(diagnostics.size() == 1001);
  CHECK(diagnostics.back().message.find("more problems") != std::string::npos);
  CHECK(wavel::meshir::resident_bytes_per_pe_max(many) == 1000 * (std::int64_t{1} << 40));  // all cover (15, 15)
}

TEST_CASE("the spool describes itself: its records resume without a checkpoint, a torn tail is cut, altered bytes refused") {
  namespace d = wavel::engine;
  const auto dir = own_dir("hostile-spool");
  const auto path = (dir / "settings.spool").string();
  const std::vector<wavel::engine::InputFingerprint> inputs{{"build", "b1"}, {"model file 'm.json'", "00ff"}};
  const d::SpoolHeader header{"cafe", inputs, 77, 12};
  std::vector<wavel::engine::SpoolEntry> entries;
  {
    auto spool = d::Spool::create(path, header);
    entries.push_back(spool.append(4, "first result"));
    entries.push_back(spool.append(9, "second"));
    spool.sync();
    CHECK(spool.read(entries[1]) == "second");
    CHECK(entries[1].offset == entries[0].offset + 12 + 24);  // each record: task, size, hash, bytes
  }
  const auto whole = std::filesystem::file_size(path);
  std::vector<wavel::engine::SpoolEntry> found;
  {
    auto spool = d::Spool::recover(path, header, found);
    REQUIRE(found.size() == 2);
    CHECK(found[1].task == 9);
    CHECK(found[1].offset == entries[1].offset);
    CHECK(spool.read(found[0]) == "first result");
    (void)spool.append(11, "appended after a resume");
  }
  // A torn last append (a kill or a full disk mid-write) is cut off; the records before it stay.
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 3);
  (void)d::Spool::recover(path, header, found);
  CHECK(found.size() == 2);
  CHECK(std::filesystem::file_size(path) == whole);
  // Another config, other inputs, another plan: refused, naming what differs.
  auto [code, text] = outcome([&] { d::Spool::check(path, "beef", inputs); });
  CHECK(code == wavel::ExitCode::data_error);
  CHECK(text.find("another config") != std::string::npos);
  auto changed = inputs;
  changed[1].digest = "0100";
  std::tie(code, text) = outcome([&] { d::Spool::check(path, "cafe", changed); });
  CHECK(code == wavel::ExitCode::data_error);
  CHECK(text.find("the model file 'm.json' changed since") != std::string::npos);
  d::SpoolHeader other_plan = header;
  other_plan.plan_fingerprint = 78;
  std::tie(code, text) = outcome([&] { (void)d::Spool::recover(path, other_plan, found); });
  CHECK(text.find("another task plan") != std::string::npos);
  // A byte of the first record altered, with more after it: corruption, not a torn tail.
  { std::fstream(path, std::ios::in | std::ios::out | std::ios::binary).seekp(static_cast<std::streamoff>(entries[0].offset)).write("F", 1); }
  std::tie(code, text) = outcome([&] { (void)d::Spool::recover(path, header, found); });
  CHECK(code == wavel::ExitCode::data_error);
  CHECK(text.find(path) != std::string::npos);
  CHECK(text.find("task 4 is corrupt") != std::string::npos);
  std::filesystem::remove(path);
  std::tie(code, text) = outcome([&] { (void)d::Spool::recover(path, header, found); });
  CHECK(code == wavel::ExitCode::no_input);
  // In memory (no path) it behaves the same.
  auto memory = d::Spool::create("", header);
  const auto e = memory.append(1, "kept in memory");
  CHECK(memory.read(e) == "kept in memory");
}

TEST_CASE("files a run creates never follow a link planted in the output directory") {
  const auto dir = own_dir("hostile-links");
  const auto victim = dir / "victim";
  { std::ofstream(victim) << "precious"; }
  const auto planted = dir / "results.h5.partial";
  std::filesystem::create_symlink(victim, planted);
  const int fd = wavel::create_fresh_file(planted.string(), O_WRONLY);
  REQUIRE(fd >= 0);
  CHECK(::write(fd, "new", 3) == 3);
  ::close(fd);
  CHECK_FALSE(std::filesystem::is_symlink(planted));
  std::ifstream in(victim);
  std::string kept;
  std::getline(in, kept);
  CHECK(kept == "precious");
  // A directory of that name is not removed.
  std::filesystem::create_directory(dir / "d.partial");
  CHECK(wavel::create_fresh_file((dir / "d.partial").string(), O_WRONLY) < 0);
  CHECK(errno == EISDIR);
  // Files that must persist (the lock, a spool to resume) are refused when linked or not regular.
  std::filesystem::create_symlink(victim, dir / ".wavel-dse.lock");
  CHECK(wavel::open_regular_file((dir / ".wavel-dse.lock").string(), O_RDWR | O_CREAT) < 0);
  CHECK(errno == ELOOP);
  std::filesystem::create_hard_link(victim, dir / "hard");
  CHECK(wavel::open_regular_file((dir / "hard").string(), O_RDWR) < 0);
  CHECK(errno == EMLINK);
  REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
  CHECK(wavel::open_regular_file((dir / "fifo").string(), O_RDONLY) < 0);  // at once, not blocked
  CHECK(errno == EINVAL);
}

TEST_CASE("a checkpoint that is not a regular file, or too large, is refused at once") {
  const auto dir = own_dir("hostile-checkpoint-kind");
  const auto fifo = dir / "checkpoint.wckp";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto [code, text] = outcome([&] { wavel::engine::check_checkpoint(fifo.string(), "x", {}); });
  CHECK(code == wavel::ExitCode::data_error);
  CHECK(text.find("not a regular file") != std::string::npos);
  std::tie(code, text) = outcome([&] { wavel::engine::check_checkpoint("/dev/zero", "x", {}); });
  CHECK(code == wavel::ExitCode::data_error);
  const auto big = dir / "big.wckp";
  { std::ofstream(big) << "x"; }
  std::filesystem::resize_file(big, (std::uintmax_t{1} << 30) + 1);  // sparse
  std::tie(code, text) = outcome([&] { wavel::engine::check_checkpoint(big.string(), "x", {}); });
  CHECK(code == wavel::ExitCode::data_error);
  CHECK(text.find("more than the 1024 MiB") != std::string::npos);
  std::tie(code, text) = outcome([&] { wavel::engine::check_checkpoint((dir / "absent").string(), "x", {}); });
  CHECK(code == wavel::ExitCode::no_input);
}
