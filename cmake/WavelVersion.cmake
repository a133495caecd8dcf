# Regenerates wavel/version_info.hpp on every build so --version carries the current git hash.
set(WAVEL_GENERATED_INCLUDE_DIR ${CMAKE_BINARY_DIR}/generated)
add_custom_target(wavel_version ALL
  COMMAND ${CMAKE_COMMAND}
          -DSOURCE_DIR=${CMAKE_SOURCE_DIR}
          -DOUTPUT=${WAVEL_GENERATED_INCLUDE_DIR}/wavel/version_info.hpp
          -DVERSION=${PROJECT_VERSION}
          -P ${CMAKE_SOURCE_DIR}/cmake/WriteVersionHeader.cmake
  BYPRODUCTS ${WAVEL_GENERATED_INCLUDE_DIR}/wavel/version_info.hpp
  COMMENT "Checking git revision"
  VERBATIM)
