// HF config.json: any file gives a ModelSpec or a wavel::Error; a ModelSpec also builds its op graph.
#include <cstdint>
#include <string>

#include "fuzz_support.hpp"
#include "wavel/common/error.hpp"
#include "wavel/workload/model.hpp"
#include "wavel/workload/workload.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  wavel::fuzz::start_runtime();
  const std::string path = wavel::fuzz::scratch_file(data, size, "-config.json");
  try {
    const auto model = wavel::workload::load_hf_config(path);
    (void)wavel::workload::parameter_count(model);
    // One decode step with a short context: the graph's products are checked, never overflowing.
    wavel::workload::WorkloadShape shape{wavel::workload::Phase::decode, 1, 16, 2};
    (void)wavel::workload::build_workload(model, shape);
  } catch (const wavel::Error&) {
  }
  return 0;
}
