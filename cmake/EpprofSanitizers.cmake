# EPPROF_SANITIZE=address,undefined or thread instruments every target of the build.
if(EPPROF_SANITIZE)
  string(REPLACE ";" "," _san "${EPPROF_SANITIZE}")
  message(STATUS "epprof: building with -fsanitize=${_san}")
  add_compile_options(-fsanitize=${_san} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_san})
endif()
