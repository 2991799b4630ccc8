# Writes OUT, a C++ header that defines the char array NAME holding the
# text of IN, so that a page's script can live in its own file (linted and
# read as JavaScript) and still be compiled into the binary.
#   cmake -DIN=file.js -DOUT=file_js.h -DNAME=kScript -P embed_text.cmake
file(READ "${IN}" text)
set(delim "EPPROF_EMBED")
string(FIND "${text}" ")${delim}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )${delim}\"")
endif()
get_filename_component(in_name "${IN}" NAME)
set(header "// Generated from ${in_name} by embed_text.cmake: edit that file, not this one.
#pragma once
namespace epprof::report {
inline constexpr char ${NAME}[] = R\"${delim}(${text})${delim}\";
}  // namespace epprof::report
")
# Rewritten only when it changes, so an unchanged script rebuilds nothing.
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
  if(old STREQUAL header)
    return()
  endif()
endif()
file(WRITE "${OUT}" "${header}")
