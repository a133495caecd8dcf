// Kernel measurement files (calibrate KERNEL.yaml...): the reader, the wafer check and the predictions.
#include <cstdint>
#include <string>

#include "fuzz_support.hpp"
#include "wavel/calibrate/kernels.hpp"
#include "wavel/common/error.hpp"
#include "wavel/cost/params.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  wavel::fuzz::start_runtime();
  try {
    const auto set =
        wavel::calibrate::parse_kernel_set(std::string(reinterpret_cast<const char*>(data), size), "fuzz/kernels.yaml");
    const auto wafer = *wavel::wafer::find_wafer_preset("wse3");
    wavel::calibrate::check_on_wafer(set, wafer);
    const auto params = wavel::cost::default_params(wafer);
    for (const auto& point : set.points) (void)wavel::calibrate::predict_kernel_cycles(point, wafer, params);
  } catch (const wavel::Error&) {
  }
  return 0;
}
