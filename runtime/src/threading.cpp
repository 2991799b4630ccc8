#include "threading.h"

#include "epprof/rt/blas.h"
#include "kernels/conv_direct.h"
#include "kernels/sgemm.h"

#include <fstream>
#include <set>
#include <string>
#include <utility>

// OpenBLAS's own API (its cblas.h, e.g. Debian's
// openblas-pthread/cblas.h): thread count and kernel set. Declared here rather than taken from the
// cblas.h the build finds, which Debian's alternatives may point at another
// BLAS's header; the library linked is always libopenblas.
extern "C" {
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
char* openblas_get_corename(void);
}

namespace epprof::rt::detail {

namespace {

// "0-3,8,10-11" (a sysfs CPU list) → the CPU numbers; empty on a parse error.
std::set<int> parse_cpu_list(const std::string& text) {
  std::set<int> cpus;
  size_t i = 0;
  auto number = [&](int& out) {
    if (i >= text.size() || text[i] < '0' || text[i] > '9') return false;
    long v = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9' && v < 1000000) v = v * 10 + (text[i++] - '0');
    out = static_cast<int>(v);
    return true;
  };
  while (i < text.size() && text[i] != '\n') {
    int lo = 0, hi = 0;
    if (!number(lo)) return {};
    hi = lo;
    if (i < text.size() && text[i] == '-') {
      ++i;
      if (!number(hi) || hi < lo || hi - lo > 65536) return {};
    }
    for (int c = lo; c <= hi; ++c) cpus.insert(c);
    if (i < text.size() && text[i] == ',') ++i;
  }
  return cpus;
}

bool read_int(const std::string& path, int& out) {
  std::ifstream in(path);
  return static_cast<bool>(in >> out);
}

}  // namespace

int physical_cores() {
  std::ifstream online("/sys/devices/system/cpu/online");
  std::string list;
  if (!std::getline(online, list)) return 0;
  std::set<std::pair<int, int>> cores;
  for (int cpu : parse_cpu_list(list)) {
    const std::string topo = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    int package = 0, core = 0;
    if (!read_int(topo + "physical_package_id", package) || !read_int(topo + "core_id", core)) return 0;
    cores.emplace(package, core);
  }
  return static_cast<int>(cores.size());
}

void set_blas_threads(int threads) {
  if (threads < 1) threads = 1;
  if (openblas_get_num_threads() != threads) openblas_set_num_threads(threads);
}

int blas_threads() { return openblas_get_num_threads(); }

}  // namespace epprof::rt::detail

namespace epprof::rt {

std::string blas_kernels() {
  const char* name = openblas_get_corename();
  return name ? name : "";
}

std::string sgemm_kernels() {
  const char* name = kernels::sgemm_kernel();
  return *name ? name : "openblas";
}

std::string conv_direct_kernels() {
  switch (kernels::conv_direct_lanes()) {
    case 16: return "avx512";
    case 8: return "avx2";
    default: return "none";
  }
}

}  // namespace epprof::rt
