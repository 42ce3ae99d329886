#!/usr/bin/env bash
# fp8sm as an installed CMake package, as a user gets it: installs the build tree into a
# temporary prefix, checks what is there, builds examples/consumer and the misuse programs of
# tests/install/misuse against it (find_package only, none of the build's settings) and runs
# them; then checks that every fp8sm:: target resolves for a user and that the installed
# programs start. Writes only under a temporary directory (and the build tree's
# install_manifest.txt).
#
#   test_install_consumer.sh <cmake> <build dir> <source dir> <C++ compiler>
set -euo pipefail
cmake=$1 build=$2 source=$3 cxx=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "FAIL: $*" >&2; exit 1; }
unset DESTDIR

"$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }

for f in bin/explorer bin/train_mlp bin/train_transformer lib/cmake/fp8sm/fp8sm-config.cmake lib/cmake/fp8sm/fp8sm-config-version.cmake \
         lib/cmake/fp8sm/fp8sm-targets.cmake include/fp8sm/runtime/fp8sm_runtime.hpp include/fp8sm/runtime/context.hpp; do
  [ -f "$prefix/$f" ] || fail "the install has no $f"
done

# The public headers stand alone: none reads Boost (the table's headers, which need the
# Boost.MPL limits, stay in the source tree) and every "..." include is an installed header.
include=$prefix/include/fp8sm
if grep -rln '#include <boost/' "$include"; then fail "installed headers include Boost (above)"; fi
while IFS= read -r line; do
  header=${line%%:*} included=${line#*\"}; included=${included%%\"*}
  [ -f "$include/$included" ] || fail "${header#"$include"/} includes \"$included\", which is not installed"
done < <(grep -r '^#include "' "$include")

# The exported targets carry no Boost.MPL definitions and no path of the source or build tree.
targets=$prefix/lib/cmake/fp8sm/fp8sm-targets.cmake
if grep -n 'BOOST_' "$targets"; then fail "fp8sm-targets.cmake defines Boost macros for users (above)"; fi
if grep -nF -e "$source" -e "$build" "$prefix"/lib/cmake/fp8sm/*.cmake; then fail "the package names the build machine's trees (above)"; fi

# The consumer: configure, build, run. Its exit status says whether the loss went down.
consumer=$tmp/consumer
"$cmake" -S "$source/examples/consumer" -B "$consumer" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >"$tmp/configure.log" 2>&1 \
  || { cat "$tmp/configure.log"; fail "configuring examples/consumer against the install"; }
"$cmake" --build "$consumer" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "building examples/consumer"; }
if grep -n 'BOOST_MPL' "$consumer/compile_commands.json"; then fail "the consumer is compiled with Boost.MPL definitions"; fi
grep -q -- "-I$include\|-isystem $include" "$consumer/compile_commands.json" \
  || fail "the consumer's include path does not name $include"
status=0
"$consumer/train_tiny" >"$tmp/run.log" 2>&1 || status=$?
cat "$tmp/run.log"
[ "$status" -eq 0 ] || fail "train_tiny exited $status"
grep -Eq '^final loss [0-9.]+$' "$tmp/run.log" || fail "train_tiny printed no final loss"
if readelf -d "$consumer/train_tiny" | grep 'NEEDED.*libcuda'; then fail "train_tiny needs a CUDA library"; fi

# The runtime API misused, as a user's program does it (tests/install/misuse/: one program per
# misuse), against the install: each must throw the documented type with a message naming the
# misuse, and leave its context training at 1/1 updates (each exits 0 only then).
misuse=$tmp/misuse
"$cmake" -S "$source/tests/install/misuse" -B "$misuse" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_BUILD_TYPE=Release >"$tmp/misuse-configure.log" 2>&1 \
  || { cat "$tmp/misuse-configure.log"; fail "configuring tests/install/misuse against the install"; }
"$cmake" --build "$misuse" -j"$(nproc)" >"$tmp/misuse-build.log" 2>&1 \
  || { cat "$tmp/misuse-build.log"; fail "building tests/install/misuse"; }
cases=0
for source_file in "$source"/tests/install/misuse/*.cpp; do
  name=$(basename "$source_file" .cpp)
  "$misuse/$name" >"$tmp/misuse-$name.log" 2>&1 || { cat "$tmp/misuse-$name.log"; fail "misuse program $name"; }
  grep -q '^ok: ' "$tmp/misuse-$name.log" || fail "misuse program $name checked nothing"
  cases=$((cases + 1))
done
[ "$cases" -ge 12 ] || fail "only $cases misuse programs ran"
echo "misuse programs against the install: $cases ok"

# Every fp8sm:: target resolves for a user (a dependency the config does not find fails the
# generate step), and the version file refuses another version.
all=$tmp/all
mkdir -p "$all"
cat >"$all/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.21)
project(fp8sm_all_targets LANGUAGES CXX)
find_package(fp8sm 99.0 CONFIG QUIET)
if(fp8sm_FOUND)
  message(FATAL_ERROR "find_package(fp8sm 99.0) accepted version ${fp8sm_VERSION}")
endif()
find_package(fp8sm CONFIG REQUIRED)
get_property(imported DIRECTORY PROPERTY IMPORTED_TARGETS)
list(FILTER imported INCLUDE REGEX "^fp8sm::")
message(STATUS "fp8sm targets: ${imported}")
file(WRITE "${CMAKE_BINARY_DIR}/main.cpp" "int main() { return 0; }\n")
add_executable(all_targets "${CMAKE_BINARY_DIR}/main.cpp")
target_link_libraries(all_targets PRIVATE ${imported})
CMAKE
"$cmake" -S "$all" -B "$all/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" >"$tmp/all.log" 2>&1 \
  || { cat "$tmp/all.log"; fail "a project linking every fp8sm:: target does not configure"; }
for name in runtime statemachine kernels spec checker explorer_model explorer_search explorer_report; do
  grep -Eq "fp8sm::$name(;|\$)" "$tmp/all.log" || fail "the package has no fp8sm::$name"
done

# The installed programs start and work.
"$prefix/bin/explorer" invariants >"$tmp/explorer.log" || fail "the installed explorer failed"
grep -q '^I1' "$tmp/explorer.log" || fail "the installed explorer listed no invariant I1"
"$prefix/bin/train_mlp" --steps 2 >"$tmp/train_mlp.log" || fail "the installed train_mlp failed"
"$prefix/bin/train_transformer" --steps 2 --checkpoint nested >"$tmp/train_transformer.log" ||
  fail "the installed train_transformer failed"
grep -q '^1 .* 1  1$' "$tmp/train_transformer.log" || fail "the installed train_transformer printed no step 1 at 1/1"
echo "install, consumer and installed programs: ok"
