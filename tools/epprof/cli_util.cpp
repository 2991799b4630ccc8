// Small helpers shared by the subcommands.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "cli.h"

namespace epprof::cli {

int usage_error(const char* command, const std::string& message) {
  std::fprintf(stderr, "epprof %s: %s\nTry 'epprof %s --help'.\n", command, message.c_str(),
               command);
  return kExitUsage;
}

bool parse_int(const char* text, int64_t min, int64_t max, int64_t* out) {
  if (text == nullptr || *text == '\0') return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  if (errno != 0 || *end != '\0' || v < min || v > max) return false;
  *out = v;
  return true;
}

std::string executable_dir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  std::string path(buf, size_t(n));
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

}  // namespace epprof::cli
