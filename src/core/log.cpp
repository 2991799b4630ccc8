#include "core/log.h"

#include <cstdio>
#include <mutex>

#include "epprof/profiler.h"

namespace epprof::core {
namespace {

std::mutex g_mu;
epprof_log_fn g_fn = nullptr;
void* g_user = nullptr;

}  // namespace

void log_warning(epprof_status_code code, const std::string& message) noexcept {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_fn) {
    g_fn(g_user, code, message.c_str());
  } else {
    std::fprintf(stderr, "%s\n", message.c_str());
  }
}

}  // namespace epprof::core

extern "C" EPPROF_API void epprof_set_log_callback(epprof_log_fn fn, void* user_data) {
  std::lock_guard<std::mutex> lock(epprof::core::g_mu);
  epprof::core::g_fn = fn;
  epprof::core::g_user = user_data;
}
