# Fails when the cost model, the search, the baselines, the deployments or the simulator hold a
# figure of a wafer preset: every hardware figure must come from the wafer description, so that a
# hardware what-if (wafer.sweep) reaches all of them. Run as: cmake -DSOURCE_DIR=... -P this file.
set(failures "")
file(GLOB_RECURSE files
  ${SOURCE_DIR}/src/cost/*.cpp ${SOURCE_DIR}/src/search/*.cpp ${SOURCE_DIR}/src/baselines/*.cpp
  ${SOURCE_DIR}/src/deploy/*.cpp ${SOURCE_DIR}/include/wavel/cost/*.hpp ${SOURCE_DIR}/include/wavel/search/*.hpp
  ${SOURCE_DIR}/sim/*.cpp ${SOURCE_DIR}/sim/*.hpp)
foreach(f IN LISTS files)
  file(STRINGS ${f} lines)
  foreach(line IN LISTS lines)
    # Clock, SRAM size, preset names, and any wafer-key field given a literal default.
    if(line MATCHES "1\\.1e9|1100000000|49152|48 \\* 1024|\"wse[23]\"" OR
       line MATCHES "(fmac_lanes|simd_fp16_lanes|link_bytes_per_cycle|sram_read_bytes_per_cycle|sram_write_bytes_per_cycle|scalar_division_cycles|routable_colours|sram_per_pe_bytes|clock_hz|grid_w_pes|grid_h_pes) = [1-9]")
      list(APPEND failures "${f}: ${line}")
    endif()
  endforeach()
endforeach()
if(failures)
  string(REPLACE ";" "\n  " text "${failures}")
  message(FATAL_ERROR "wafer preset figures in model or simulator code:\n  ${text}")
endif()
message(STATUS "no wafer preset figure in the cost model, search, baselines, deployments or simulator")
