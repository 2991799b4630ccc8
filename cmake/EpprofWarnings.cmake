# Warnings applied to every first-party target through epprof_warnings().
add_library(epprof_warnings INTERFACE)
target_compile_options(epprof_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor>
  $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra -Wpedantic>)
