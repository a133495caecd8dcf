# Finds MPI, parallel HDF5, yaml-cpp, CLI11, Eigen and Kokkos, papering over Debian 12 quirks.
find_package(MPI REQUIRED COMPONENTS C CXX)

set(HDF5_PREFER_PARALLEL TRUE)
find_package(HDF5 REQUIRED COMPONENTS C)
include(CheckSymbolExists)
set(CMAKE_REQUIRED_INCLUDES ${HDF5_INCLUDE_DIRS} ${MPI_C_INCLUDE_DIRS})
check_symbol_exists(H5_HAVE_PARALLEL "H5pubconf.h" WAVEL_HDF5_IS_PARALLEL)
unset(CMAKE_REQUIRED_INCLUDES)
if(NOT WAVEL_HDF5_IS_PARALLEL)
  message(FATAL_ERROR "wavel-dse needs parallel HDF5 (Debian: libhdf5-openmpi-dev); found ${HDF5_INCLUDE_DIRS}")
endif()
add_library(wavel_hdf5 INTERFACE)
target_include_directories(wavel_hdf5 INTERFACE ${HDF5_INCLUDE_DIRS})
target_link_libraries(wavel_hdf5 INTERFACE ${HDF5_C_LIBRARIES} MPI::MPI_C)
target_compile_definitions(wavel_hdf5 INTERFACE ${HDF5_DEFINITIONS})
add_library(wavel::hdf5 ALIAS wavel_hdf5)

find_package(yaml-cpp REQUIRED)
add_library(wavel_yaml INTERFACE)
if(TARGET yaml-cpp::yaml-cpp)        # yaml-cpp 0.8
  target_link_libraries(wavel_yaml INTERFACE yaml-cpp::yaml-cpp)
elseif(TARGET yaml-cpp)              # yaml-cpp 0.7 (Debian 12)
  target_link_libraries(wavel_yaml INTERFACE yaml-cpp)
else()
  target_include_directories(wavel_yaml INTERFACE ${YAML_CPP_INCLUDE_DIR})
  target_link_libraries(wavel_yaml INTERFACE ${YAML_CPP_LIBRARIES})
endif()
add_library(wavel::yaml ALIAS wavel_yaml)

find_package(CLI11 2.1 CONFIG REQUIRED)

# Header-only; calibration's Levenberg-Marquardt solver (unsupported/Eigen/NonLinearOptimization).
find_package(Eigen3 3.3 REQUIRED NO_MODULE)

# Choose the install with -DKokkos_ROOT (scripts/setup.sh passes .deps/kokkos or KOKKOS_ROOT).
find_package(Kokkos REQUIRED)
# Debian's Trilinos Kokkos exports an include directory that does not exist.
get_target_property(_wavel_kokkos_inc Kokkos::kokkos INTERFACE_INCLUDE_DIRECTORIES)
if(_wavel_kokkos_inc)
  foreach(_dir IN LISTS _wavel_kokkos_inc)
    if(NOT _dir MATCHES "^\\$<" AND NOT EXISTS "${_dir}" AND Kokkos_INCLUDE_DIRS)
      message(STATUS "Kokkos: exported include dir ${_dir} is missing; using ${Kokkos_INCLUDE_DIRS}")
      set_target_properties(Kokkos::kokkos PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${Kokkos_INCLUDE_DIRS}")
      break()
    endif()
  endforeach()
endif()
message(STATUS "Kokkos ${Kokkos_VERSION} from ${Kokkos_DIR}; devices: ${Kokkos_DEVICES}")
