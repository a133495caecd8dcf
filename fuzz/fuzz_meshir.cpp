// MeshIR text: parse, then verify what parses (as check and simulate do before anything else).
#include <cstdint>
#include <string>

#include "fuzz_support.hpp"
#include "wavel/common/error.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/meshir/text.hpp"
#include "wavel/meshir/verify.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  wavel::fuzz::start_runtime();
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto parsed = wavel::meshir::parse_with_lines(text, "fuzz.meshir");
    wavel::meshir::VerifyOptions options{"fuzz.meshir", parsed.lines,
                                         [](const wavel::meshir::PlacedOp& op) { return wavel::cost::colours_needed(op); }};
    wavel::meshir::verify_or_throw(parsed.schedule, options);
    (void)wavel::meshir::print(parsed.schedule);
  } catch (const wavel::Error&) {
  }
  return 0;
}
