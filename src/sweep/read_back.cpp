// A finished sweep's settings read back from the engine's spool; see sweep_job.hpp.
#include <memory>

#include "wavel/common/error.hpp"
#include "wavel/sweep/setting_tasks.hpp"
#include "wavel/sweep/sweep_job.hpp"

namespace wavel::driver::detail {

namespace {

/// The texts of a setting's result in slot order: its schedules, then its front points.
template <class F>
void for_each_text(SettingResult& r, F&& f) {
  std::int32_t slot = 0;
  for (auto& s : r.schedules) f(s.meshir, s.meshir_ref, slot++);
  for (auto& p : r.front) f(p.meshir, p.meshir_ref, slot++);
}

}  // namespace

std::vector<SettingResult> read_back(const engine::Finished& finished, const std::vector<config::Setting>& settings) {
  std::vector<SettingResult> results;
  results.reserve(settings.size());
  for (std::size_t s = 0; s < settings.size(); ++s) {
    engine::stop_if_signalled("reading the results back");
    const std::string bytes = finished.spool->read(finished.entries.at(s));
    if (finished.restored.at(s)) {
      try {
        check_task_result(TaskResultKind::finish, bytes);
      } catch (const Error& e) {
        throw InputDataError("--resume: spool file '" + finished.spool->path() + "' holds a corrupt result for setting " +
                             std::to_string(settings[s].id) + ": " + e.what());
      }
    }
    Unpacker u(bytes);
    results.push_back(unpack_setting(u));
    for_each_text(results.back(), [&](std::string& text, TextRef& ref, std::int32_t slot) {
      if (text.empty()) return;
      ref = TextRef{static_cast<std::int64_t>(s), slot, text.size()};
      std::string().swap(text);
    });
  }
  return results;
}

TextFetch spool_texts(const engine::Finished& finished) {
  struct State {
    std::shared_ptr<const engine::Spool> spool;
    std::vector<engine::SpoolEntry> entries;
    std::int64_t cached = -1;
    std::vector<std::string> texts;
  };
  auto state = std::make_shared<State>(State{finished.spool, finished.entries, -1, {}});
  return [state](const TextRef& ref) {
    if (ref.setting_index < 0) return std::string();
    if (ref.setting_index != state->cached) {
      engine::stop_if_signalled("writing the schedules");
      const auto index = static_cast<std::size_t>(ref.setting_index);
      if (index >= state->entries.size()) {
        throw InternalError("a MeshIR text names setting index " + std::to_string(index) + " beyond the spool");
      }
      const std::string bytes = state->spool->read(state->entries[index]);
      Unpacker u(bytes);
      SettingResult r = unpack_setting(u);
      state->texts.clear();
      for_each_text(r, [&](std::string& text, TextRef&, std::int32_t) { state->texts.push_back(std::move(text)); });
      state->cached = ref.setting_index;
    }
    const auto slot = static_cast<std::size_t>(ref.slot);
    if (slot >= state->texts.size() || state->texts[slot].size() != ref.bytes) {
      throw InputDataError("spool file '" + state->spool->path() + "' changed under the run: MeshIR text " +
                           std::to_string(slot) + " of setting index " + std::to_string(ref.setting_index) +
                           " differs from when it was read");
    }
    return state->texts[slot];
  };
}

}  // namespace wavel::driver::detail
