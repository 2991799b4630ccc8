// The status object behind epprof_status, and the guard that keeps C++
// exceptions from crossing the C ABI.
#pragma once

#include <exception>
#include <new>
#include <string>

#include "epprof/status.h"

struct epprof_status {
  epprof_status_code code;
  std::string message;
};

namespace epprof::base {

// A new status; never throws. On allocation failure returns a shared static
// OUT_OF_MEMORY status that epprof_status_release recognises.
epprof_status* make_status(epprof_status_code code, const std::string& message) noexcept;
epprof_status* out_of_memory_status() noexcept;

// A status whose message is built by `message()` (which may allocate):
// for error paths inside noexcept code.
template <class F>
epprof_status* status_from(epprof_status_code code, F&& message) noexcept {
  try {
    return make_status(code, message());
  } catch (...) {
    return out_of_memory_status();
  }
}

// For a null pointer argument: "<function>: <what> is NULL".
inline epprof_status* null_argument(const char* function, const char* what) noexcept {
  return make_status(EPPROF_INVALID_ARGUMENT, std::string(function) + ": " + what + " is NULL");
}

}  // namespace epprof::base

// Every C entry point body runs inside these, so an exception becomes a
// status instead of crossing the ABI. Inside, `fn` is the entry point's name,
// which its error messages start with.
#define EPPROF_API_BEGIN \
  try {                  \
    [[maybe_unused]] const char* const fn = __func__;
#define EPPROF_API_END                                                          \
  }                                                                             \
  catch (const std::bad_alloc&) {                                               \
    return ::epprof::base::out_of_memory_status();                               \
  }                                                                             \
  catch (const std::exception& e) {                                             \
    return ::epprof::base::make_status(EPPROF_INTERNAL, e.what());               \
  }                                                                             \
  catch (...) {                                                                 \
    return ::epprof::base::make_status(EPPROF_INTERNAL, "unknown C++ exception"); \
  }
