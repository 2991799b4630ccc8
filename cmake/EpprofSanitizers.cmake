# EPPROF_SANITIZE=address,undefined or thread instruments every target of the build.
#
# Sanitizer builds compile at -O1 with line tables only (-g1), whatever the
# build type: what a sanitizer report needs (ASan's own advice is -O1), and
# the CI job's largest cost otherwise. Measured with GCC 12 under
# -fsanitize=address,undefined: runtime/src/kernels/elementwise.cpp 147 s at
# -O2 -g against 44 s; tests/cli/run_cli_test.cpp 77 s against 41 s. The
# kernels' -O3 (runtime/CMakeLists.txt) is left out of these builds for the
# same reason. -Wmaybe-uninitialized is off there: at -O1, with the
# sanitizers' instrumentation, GCC 12 reports std::function members inside
# libstdc++'s <regex> as maybe uninitialized (GCC's manual warns that
# -fsanitize can produce such false positives); the release build keeps it.
if(EPPROF_SANITIZE)
  string(REPLACE ";" "," _san "${EPPROF_SANITIZE}")
  message(STATUS "epprof: building with -fsanitize=${_san} at -O1 -g1")
  add_compile_options(-fsanitize=${_san} -fno-omit-frame-pointer -fno-sanitize-recover=all -O1 -g1
                      $<$<CXX_COMPILER_ID:GNU>:-Wno-maybe-uninitialized>)
  add_link_options(-fsanitize=${_san})
endif()
