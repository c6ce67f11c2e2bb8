#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# Configures and builds the whole tree.
#   scripts/build.sh [normal]   -> build/       RelWithDebInfo (-O2, line tables), warnings are errors
#   scripts/build.sh asan       -> build-asan/  clang, -O1 -g1, AddressSanitizer + UBSan, -Werror,
#                                  libraries instrumented for coverage: the libFuzzer targets
#                                  (tests/fuzz, scripts/fuzz.sh) are built from the same tree
#   scripts/build.sh tsan       -> build-tsan/  -O1 -g1, ThreadSanitizer, -Werror; only the
#                                  concurrency tests and the programs they start
# Extra arguments after the flavour go to the cmake configure step.
# MIZARMP_BUILD_TARGETS="t1 t2" builds only those targets (the demo builds just its binaries).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FLAVOUR=${1:-normal}
shift || true

# Debian's clang-14 (scripts/install-deps.sh), the ASan flavour's compiler: libFuzzer needs it,
# and it compiles this code a quarter to a third faster than g++ with the same sanitizers. g++
# builds build/ and build-tsan/, so both compilers' warnings are errors.
CLANG=(-DCMAKE_C_COMPILER="$(command -v clang-14 || command -v clang || echo clang)"
       -DCMAKE_CXX_COMPILER="$(command -v clang++-14 || command -v clang++ || echo clang++)")

case "$FLAVOUR" in
  normal)
    BUILD_DIR="$ROOT/build"
    # -O2 as shipped; -g1 (line tables: a stack with file:line, no variables) rather than -g,
    # which makes g++ take half as long again on this code. The packages strip debug info
    # anyway (cmake/packaging.cmake). For a debugger's view of variables, append
    # "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g -DNDEBUG".
    FLAGS=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DMIZARMP_WERROR=ON
           "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
           "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
    ;;
  asan)
    BUILD_DIR="$ROOT/build-asan"
    # -O1 -g1 (line tables): what ASan recommends, symbolized stacks with file:line, and about
    # half the compile time of -O2 -g on this code (gRPC/protobuf/json-heavy translation units).
    FLAGS=("${CLANG[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMIZARMP_SANITIZE=ON -DMIZARMP_FUZZ=ON
           -DMIZARMP_WERROR=ON
           "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
           "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG")
    ;;
  tsan)
    BUILD_DIR="$ROOT/build-tsan"
    FLAGS=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DMIZARMP_TSAN=ON -DMIZARMP_WERROR=ON
           "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
           "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG")
    DEFAULT_TARGETS=mizarmp_concurrency_tests
    ;;
  *)
    echo "usage: $0 [normal|asan|tsan] [extra cmake args...]" >&2
    exit 2
    ;;
esac

JOBS=$(nproc 2>/dev/null || echo 2)
echo "build: $FLAVOUR -> $BUILD_DIR (-j$JOBS)"
cmake -S "$ROOT" -B "$BUILD_DIR" "${FLAGS[@]}" "$@"
TARGETS=()
for t in ${MIZARMP_BUILD_TARGETS:-${DEFAULT_TARGETS:-}}; do
  TARGETS+=(--target "$t")
done
cmake --build "$BUILD_DIR" -j"$JOBS" "${TARGETS[@]}"
