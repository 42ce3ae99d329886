# The explorer's layers, enforced when CMake configures (explorer/CMakeLists.txt): a file of a
# layer may include the project's headers of the folders it is given and no others, so an
# include that runs back up (the model reading the search, the search reading a report) stops
# the configure step with the file and the line, before anything compiles. Linking alone would
# not catch it: every folder's headers are on every target's include path (the repository's
# top, as "folder/name.hpp").
#
#   fp8sm_check_layer(explorer/search MAY_INCLUDE spec statemachine explorer/model explorer/search)
#
# Only quoted includes of the project's own folders are checked (a system or third-party header
# is included with <...>).
set(fp8sm_project_folders spec statemachine driver interpreter kernels runtime explorer)

function(fp8sm_check_layer layer)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "MAY_INCLUDE")
  file(GLOB files RELATIVE "${PROJECT_SOURCE_DIR}" CONFIGURE_DEPENDS
       "${PROJECT_SOURCE_DIR}/${layer}/*.hpp" "${PROJECT_SOURCE_DIR}/${layer}/*.cpp")
  foreach(file IN LISTS files)
    file(STRINGS "${PROJECT_SOURCE_DIR}/${file}" includes REGEX "^#include \"")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^#include \"([^\"]*)\".*" "\\1" header "${line}")
      get_filename_component(folder "${header}" DIRECTORY)
      string(REGEX REPLACE "/.*" "" top "${folder}")
      if(NOT top IN_LIST fp8sm_project_folders)
        continue()
      endif()
      if(NOT folder IN_LIST arg_MAY_INCLUDE)
        list(JOIN arg_MAY_INCLUDE ", " allowed)
        message(FATAL_ERROR "${file}: #include \"${header}\" runs against the layers: ${layer} may "
                            "include the headers of ${allowed} only (docs/architecture.md)")
      endif()
    endforeach()
  endforeach()
endfunction()
