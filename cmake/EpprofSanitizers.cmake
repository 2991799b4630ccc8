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

# epprof_tests_at_O0(): in sanitizer builds, the tests' own sources (those
# under tests/, whichever target compiles them) build at -O0; the code they
# test stays at -O1. The sanitizers check test code as well at -O0, and the
# tests are half of what a sanitizer build compiles: under ASan+UBSan,
# tests/cli/run_cli_test.cpp took 36 s at -O0 against 76 s at -O1,
# tests/opencl/opencl_ep_test.cpp 21 s against 56 s. Called once every
# target is defined (the top-level CMakeLists.txt).
function(_epprof_targets_below dir out)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    _epprof_targets_below("${sub}" below)
    list(APPEND targets ${below})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

function(epprof_tests_at_O0)
  if(NOT EPPROF_SANITIZE)
    return()
  endif()
  _epprof_targets_below("${PROJECT_SOURCE_DIR}" targets)
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "INTERFACE_LIBRARY" OR type STREQUAL "UTILITY")
      continue()
    endif()
    get_target_property(sources ${target} SOURCES)
    get_target_property(source_dir ${target} SOURCE_DIR)
    set(test_sources)
    foreach(source IN LISTS sources)
      if(source MATCHES "^\\$<")  # generator expressions (object libraries' objects)
        continue()
      endif()
      get_filename_component(path "${source}" ABSOLUTE BASE_DIR "${source_dir}")
      if(path MATCHES "^${PROJECT_SOURCE_DIR}/tests/")
        list(APPEND test_sources "${path}")
      endif()
    endforeach()
    if(test_sources)
      # A source's options come after the target's on the command line: -O0 wins.
      set_source_files_properties(${test_sources} TARGET_DIRECTORY ${target} PROPERTIES COMPILE_OPTIONS -O0)
    endif()
  endforeach()
endfunction()
