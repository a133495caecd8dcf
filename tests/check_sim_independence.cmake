# Fails when the simulator (sim/) includes or links the cost model, the search or anything above
# them. Run as: cmake -DSOURCE_DIR=... -DLINK_FILE=.../sim_link_interface.cmake -P this file.
include(${LINK_FILE})
set(failures "")
# 1. Link interface: the simulator links wavel::base only, and wavel::base links nothing.
foreach(lib IN LISTS SIM_LINK_LIBRARIES SIM_INTERFACE_LINK_LIBRARIES)
  if(NOT lib STREQUAL "wavel::base" AND NOT lib STREQUAL "wavel_base")
    list(APPEND failures "wavel_sim links '${lib}' (only wavel::base is allowed)")
  endif()
endforeach()
if(NOT "${BASE_LINK_LIBRARIES}" STREQUAL "")
  list(APPEND failures "wavel_base links '${BASE_LINK_LIBRARIES}' (it must link nothing)")
endif()
foreach(src IN LISTS BASE_SOURCES)
  if(src MATCHES "src/(cost|search|calibrate|baselines|sweep|engine|report|compare|commands|cli|config|io)/")
    list(APPEND failures "wavel_base compiles ${src}")
  endif()
endforeach()
# 2. Includes and names: no header of the model's side, no cost:: or search:: name, anywhere in sim/.
file(GLOB_RECURSE files ${SOURCE_DIR}/sim/*.cpp ${SOURCE_DIR}/sim/*.hpp ${SOURCE_DIR}/sim/*.txt)
foreach(f IN LISTS files)
  file(STRINGS ${f} lines)
  foreach(line IN LISTS lines)
    if(line MATCHES "#include[ \t]*[\"<]wavel/(cost|search|calibrate|baselines|sweep|engine|report|compare|commands|cli|config|io|workload)/" OR
       line MATCHES "#include[ \t]*[\"<].*src/(cost|search)/" OR
       line MATCHES "(^|[^a-z_])(cost|search)::" OR
       line MATCHES "wavel::(core|cli)")
      list(APPEND failures "${f}: ${line}")
    endif()
  endforeach()
endforeach()
if(failures)
  list(JOIN failures "\n  " text)
  message(FATAL_ERROR "the simulator is not independent of the cost model:\n  ${text}")
endif()
list(LENGTH files n)
message(STATUS "sim independence: ${n} files scanned, link interface '${SIM_LINK_LIBRARIES}'")
