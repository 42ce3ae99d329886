# Finds the xxHash library (Debian: libxxhash-dev, which ships no CMake package of its own) and
# defines the imported target xxHash::xxhash, the name xxHash's own CMake build exports.
# Used by the build (CMakeLists.txt) and installed beside fp8sm-config.cmake, which finds it
# again for a user: fp8sm's static libraries link it, so their users' programs must too.
#
# Sets xxHash_FOUND, XXHASH_LIBRARY and XXHASH_INCLUDE_DIR.

find_path(XXHASH_INCLUDE_DIR NAMES xxhash.h)
find_library(XXHASH_LIBRARY NAMES xxhash)

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(xxHash REQUIRED_VARS XXHASH_LIBRARY XXHASH_INCLUDE_DIR)

if(xxHash_FOUND AND NOT TARGET xxHash::xxhash)
  add_library(xxHash::xxhash UNKNOWN IMPORTED)
  set_target_properties(xxHash::xxhash PROPERTIES
    IMPORTED_LOCATION "${XXHASH_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${XXHASH_INCLUDE_DIR}")
endif()
mark_as_advanced(XXHASH_INCLUDE_DIR XXHASH_LIBRARY)
