# Writes OUTPUT, a C++ source defining FUNCTION (in NAMESPACE), which returns every file of
# DIR matching the semicolon-separated GLOBS as (name, text) pairs, so that a binary carries
# them. Run at build time (see kernels/cuda/CMakeLists.txt).
set(files "")
foreach(pattern IN LISTS GLOBS)
  file(GLOB matched RELATIVE "${DIR}" "${DIR}/${pattern}")
  list(APPEND files ${matched})
endforeach()
list(SORT files)
set(body "")
foreach(f IN LISTS files)
  file(READ "${DIR}/${f}" text)
  string(APPEND body "      {\"${f}\", R\"fp8sm_embedded(${text})fp8sm_embedded\"},\n")
endforeach()
file(WRITE "${OUTPUT}.tmp" "// Generated from ${GLOBS} in its source folder: do not edit.
#include <string>
#include <utility>
#include <vector>

namespace ${NAMESPACE} {
const std::vector<std::pair<std::string, std::string>>& ${FUNCTION}() {
  static const std::vector<std::pair<std::string, std::string>> files = {
${body}  };
  return files;
}
}  // namespace ${NAMESPACE}
")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
