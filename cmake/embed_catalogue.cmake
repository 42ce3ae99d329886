# Writes OUTPUT, a C++ source holding every *.scn file of CATALOGUE_DIR as a string, so that the
# explorer carries its catalogue. Run at build time (see spec/CMakeLists.txt).
file(GLOB files RELATIVE "${CATALOGUE_DIR}" "${CATALOGUE_DIR}/*.scn")
list(SORT files)
set(body "")
foreach(f IN LISTS files)
  file(READ "${CATALOGUE_DIR}/${f}" text)
  string(APPEND body "      {\"${f}\", R\"fp8sm_scenario(${text})fp8sm_scenario\"},\n")
endforeach()
file(WRITE "${OUTPUT}.tmp" "// Generated from spec/catalogue/*.scn: do not edit.
#include <string>
#include <utility>
#include <vector>

namespace fp8sm::spec {
const std::vector<std::pair<std::string, std::string>>& embedded_catalogue_files() {
  static const std::vector<std::pair<std::string, std::string>> files = {
${body}  };
  return files;
}
}  // namespace fp8sm::spec
")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
