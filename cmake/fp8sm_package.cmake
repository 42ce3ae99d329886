# fp8sm as a CMake package: what `cmake --install <build> --prefix P` puts under P, and how a
# user's find_package(fp8sm CONFIG) gets it back (README.md, "Using fp8sm from your CMake
# project"; examples/consumer/ is such a user, tests/install/ builds it against an install).
#
#   P/include/fp8sm/<folder>/<name>.hpp   the public headers, under their in-tree include paths
#                                         ("runtime/context.hpp"); the fp8sm:: targets put
#                                         P/include/fp8sm on their users' include path
#   P/lib/libfp8sm_*.a                    the static libraries
#   P/lib/cmake/fp8sm/                    fp8sm-config.cmake, -config-version.cmake, the targets
#   P/bin/explorer, P/bin/train_mlp, P/bin/train_transformer
#
# Included by the top-level CMakeLists.txt after every library is defined.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(FP8SM_INSTALL_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}/fp8sm")
set(FP8SM_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/fp8sm")

# The libraries a user may link, by their names in the package: fp8sm_<name> is fp8sm::<name>,
# in the build tree (an ALIAS) as in an install. The CUDA and MPI ones exist only where built.
# A library here must link only libraries here, imported targets the config finds again
# (cmake/fp8sm-config.cmake.in) and build-only helpers under $<BUILD_INTERFACE:...>: CMake
# refuses to generate an export that names anything else.
set(fp8sm_package_libraries
  spec statemachine driver interpreter explorer_model explorer_search explorer_report checker checker_mpi
  kernels kernels_device kernels_nvrtc kernels_cuda
  amax_reduction amax_reduction_mpi
  runtime runtime_device runtime_cuda runtime_backends)
set(fp8sm_package_targets "")
foreach(name IN LISTS fp8sm_package_libraries)
  if(TARGET fp8sm_${name})
    set_target_properties(fp8sm_${name} PROPERTIES EXPORT_NAME ${name})
    add_library(fp8sm::${name} ALIAS fp8sm_${name})
    list(APPEND fp8sm_package_targets fp8sm_${name})
  endif()
endforeach()

install(TARGETS ${fp8sm_package_targets} EXPORT fp8sm-targets
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        INCLUDES DESTINATION "${FP8SM_INSTALL_INCLUDEDIR}")
install(EXPORT fp8sm-targets NAMESPACE fp8sm:: DESTINATION "${FP8SM_INSTALL_CMAKEDIR}")

# The public headers. The table's own headers stay behind: they read Boost.MSM, which needs
# the Boost.MPL limits of fp8sm_boost_msm before any Boost header, and only machine.cpp includes
# them (statemachine/machine.hpp keeps the machine behind a pointer), so a user's program
# neither sees Boost nor defines those limits. tests/install/ checks that no installed header
# includes Boost or a header left out here.
foreach(folder spec driver interpreter explorer kernels runtime)
  set(left_out "")
  if(folder STREQUAL "runtime" AND NOT TARGET fp8sm_amax_reduction_mpi)
    set(left_out PATTERN "mpi_amax_reduction.hpp" EXCLUDE)
  endif()
  if(folder STREQUAL "explorer" AND NOT TARGET fp8sm_checker_mpi)
    set(left_out PATTERN "mpi_ranks.hpp" EXCLUDE)
  endif()
  install(DIRECTORY "${PROJECT_SOURCE_DIR}/${folder}/" DESTINATION "${FP8SM_INSTALL_INCLUDEDIR}/${folder}"
          FILES_MATCHING PATTERN "*.hpp" PATTERN "*.cuh" ${left_out})
endforeach()
install(DIRECTORY "${PROJECT_SOURCE_DIR}/statemachine/" DESTINATION "${FP8SM_INSTALL_INCLUDEDIR}/statemachine"
        FILES_MATCHING PATTERN "*.hpp"
        PATTERN "transition_table.hpp" EXCLUDE
        PATTERN "states.hpp" EXCLUDE
        PATTERN "guards.hpp" EXCLUDE
        PATTERN "actions.hpp" EXCLUDE)

# The programs. Their link path goes into their installed RPATH, so that an installed
# The examples find the CUDA libraries where they were linked against them, as the build's do.
set_target_properties(explorer train_mlp train_transformer PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
install(TARGETS explorer train_mlp train_transformer RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")

# The config finds the CUDA toolkit and MPI only where the package's libraries link them.
set(FP8SM_PACKAGE_HAS_CUDA FALSE)
if(TARGET fp8sm_kernels_cuda)
  set(FP8SM_PACKAGE_HAS_CUDA TRUE)
endif()
set(FP8SM_PACKAGE_HAS_MPI FALSE)
if(TARGET fp8sm_amax_reduction_mpi)
  set(FP8SM_PACKAGE_HAS_MPI TRUE)
endif()
configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/fp8sm-config.cmake.in"
                              "${PROJECT_BINARY_DIR}/fp8sm-config.cmake"
                              INSTALL_DESTINATION "${FP8SM_INSTALL_CMAKEDIR}")
# Before 1.0 a minor version may change the API: only the same major.minor is compatible.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/fp8sm-config-version.cmake"
                                 VERSION "${PROJECT_VERSION}" COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/fp8sm-config.cmake"
              "${PROJECT_BINARY_DIR}/fp8sm-config-version.cmake"
              "${PROJECT_SOURCE_DIR}/cmake/FindxxHash.cmake"
        DESTINATION "${FP8SM_INSTALL_CMAKEDIR}")
