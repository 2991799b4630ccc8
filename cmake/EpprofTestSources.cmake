# epprof_tests_at_O0(): the tests' own sources (those under tests/, whichever
# target compiles them) build at -O0 in every build; the code they test
# keeps the build's optimisation. Test code needs none: it calls into the
# libraries and checks what comes back, and the sanitizers check it as well
# (better) at -O0. The tests are about half of what a build compiles, and
# -O0 halves them: tests/cli/run_cli_test.cpp took 10.8 s against 24.0 s at
# -O2 -g, and 36 s against 76 s at the sanitizer builds' -O1 under
# ASan+UBSan; tests/opencl/opencl_ep_test.cpp 21 s against 56 s there.
# The whole RelWithDebInfo build took 321 s against 382 s, and ctest 61 s
# against 55 s (side by side on one 2-core VM).
# Called once every target is defined (the top-level CMakeLists.txt).
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
