// The "cpu" device: software and hardware events through perf_event_open,
// PMU-native events named through libpfm4. Each pass is one perf group
// counting the owner thread; a boundary is one read() of the group leader
// (PERF_FORMAT_GROUP | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING).
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>

#include "base/status.h"
#include "counters/backend.h"

#ifdef EPPROF_HAVE_LIBPFM
#include <perfmon/pfmlib_perf_event.h>
#endif

namespace epprof::counters {
namespace {

constexpr uint64_t kReadFormat =
    PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;

// Whether events exclude kernel mode: decided once, by the first probe that
// is refused with kernel counting and accepted without (perf_event_paranoid
// > 1 without CAP_PERFMON).
std::atomic<bool> g_exclude_kernel{false};

int perf_open(const CounterDef& c, int group_fd, bool leader) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = c.perf.type;
  attr.config = c.perf.config;
  attr.config1 = c.perf.config1;
  attr.config2 = c.perf.config2;
  attr.read_format = kReadFormat;
  attr.disabled = leader ? 1 : 0;  // members follow their leader
  attr.exclude_hv = 1;
  attr.exclude_kernel = g_exclude_kernel.load(std::memory_order_relaxed) ? 1 : 0;
  const long fd = syscall(SYS_perf_event_open, &attr, 0 /* this thread */, -1 /* any cpu */,
                          group_fd, PERF_FLAG_FD_CLOEXEC);
  return fd < 0 ? -errno : int(fd);
}

std::string read_first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

bool path_exists(const char* path) {
  struct stat st;
  return ::stat(path, &st) == 0;
}

// Why perf_event_open refused, in words a user can act on.
std::string errno_reason(int err) {
  std::string why = std::string("perf_event_open failed: ") + strerrorname_np(err) + " (" +
                    std::strerror(err) + ")";
  switch (err) {
    case EACCES:
    case EPERM: {
      const std::string paranoid = read_first_line("/proc/sys/kernel/perf_event_paranoid");
      why += "; /proc/sys/kernel/perf_event_paranoid is " + (paranoid.empty() ? "unreadable" : paranoid) +
             ": counting needs CAP_PERFMON (or CAP_SYS_ADMIN), or a setting of at most 2 "
             "(user-space counting of one's own threads); where it already is, a seccomp filter "
             "(a container's default profile) may be blocking perf_event_open";
      break;
    }
    case ENOENT:
    case EOPNOTSUPP:
    case ENODEV:
      why += ": the kernel has no PMU driver for this event on this machine";
      break;
    case ENOSYS:
      why += ": this kernel was built without perf events";
      break;
    default:
      break;
  }
  return why;
}

// Opens and closes `c` alone; 0 or -errno.
int probe(const CounterDef& c) {
  int fd = perf_open(c, -1, true);
  if ((fd == -EACCES || fd == -EPERM) && !g_exclude_kernel) {
    g_exclude_kernel = true;  // paranoid > 1 without CAP_PERFMON: user space only
    fd = perf_open(c, -1, true);
    if (fd < 0) g_exclude_kernel = false;
  }
  if (fd < 0) return fd;
  ::close(fd);
  return 0;
}

struct PmuInfo {
  bool sysfs_cpu = false;  // /sys/bus/event_source/devices/cpu (or the hybrid cpu_core)
  bool pfm_ok = false;     // libpfm4 initialised
  bool pfm_core = false;   // libpfm4 found a core PMU on this host
  std::string pfm_name;
  uint32_t programmable = 4;  // generic counters (assumed 4 when unknown)
  uint32_t fixed = 0;
  std::string pfm_error;
};

PmuInfo detect_pmu() {
  PmuInfo info;
  info.sysfs_cpu = path_exists("/sys/bus/event_source/devices/cpu") ||
                   path_exists("/sys/bus/event_source/devices/cpu_core");
#ifdef EPPROF_HAVE_LIBPFM
  const int rc = pfm_initialize();
  info.pfm_ok = rc == PFM_SUCCESS;
  if (!info.pfm_ok) {
    info.pfm_error = std::string("libpfm4: ") + pfm_strerror(rc);
    return info;
  }
  for (int p = PFM_PMU_NONE + 1; p < PFM_PMU_MAX; ++p) {
    pfm_pmu_info_t pi;
    std::memset(&pi, 0, sizeof pi);
    pi.size = sizeof pi;
    if (pfm_get_pmu_info(pfm_pmu_t(p), &pi) != PFM_SUCCESS || !pi.is_present) continue;
    if (pi.type != PFM_PMU_TYPE_CORE) continue;
    info.pfm_core = true;
    info.pfm_name = pi.name ? pi.name : "";
    if (pi.num_cntrs > 0) info.programmable = uint32_t(pi.num_cntrs);
    info.fixed = pi.num_fixed_cntrs > 0 ? uint32_t(pi.num_fixed_cntrs) : 0;
    break;
  }
#else
  info.pfm_error = "epprof was built without libpfm4 (install libpfm4-dev)";
#endif
  return info;
}

// A CPU counter counted through perf_event_open with this type and config.
CounterDef perf_def(std::string name, std::string unit, std::string backend, uint32_t type, uint64_t config,
                    std::string description) {
  const bool software = type == PERF_TYPE_SOFTWARE;
  CounterDef c = CounterDef::named(std::move(name), std::move(unit), std::move(backend), "cpu",
                                   software ? EPPROF_COUNTER_SOFTWARE : EPPROF_COUNTER_HARDWARE,
                                   std::move(description));
  c.perf.type = type;
  c.perf.config = config;
  c.slot = software ? Slot::None : Slot::Programmable;
  return c;
}

class PerfGroups final : public GroupSet {
 public:
  ~PerfGroups() override {
    for (auto& g : groups_)
      for (int fd : g.fds) ::close(fd);
  }
  int select(uint32_t pass) noexcept override {
    for (size_t p = 0; p < groups_.size(); ++p) {
      Group& g = groups_[p];
      const bool want = pass == EPPROF_COUNTER_PASS_MULTIPLEX || pass == p;
      if (g.fds.empty() || g.enabled == want) continue;
      if (::ioctl(g.fds[0], want ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0) != 0)
        return errno;
      g.enabled = want;
    }
    return 0;
  }
  int read(uint32_t pass, uint64_t* buf, size_t words) noexcept override {
    const Group& g = groups_[pass];
    if (g.fds.empty()) {  // nothing counted by the OS in this pass
      buf[0] = buf[1] = buf[2] = 0;
      return 0;
    }
    const ssize_t want = ssize_t((3 + g.fds.size()) * sizeof(uint64_t));
    if (size_t(want) > words * sizeof(uint64_t)) return EOVERFLOW;
    const ssize_t got = ::read(g.fds[0], buf, size_t(want));
    if (got != want) return got < 0 ? errno : EIO;
    return 0;
  }

  struct Group {
    std::vector<int> fds;  // leader first
    bool enabled = false;
  };
  std::vector<Group> groups_;
};

class PerfBackend final : public Backend {
 public:
  PerfBackend() : pmu_(detect_pmu()) {}

  uint32_t num_programmable() const override { return pmu_.programmable; }

  std::vector<CounterDef> list() override {
    std::vector<CounterDef> out;
    const struct {
      const char* name;
      const char* unit;
      uint64_t config;
      const char* description;
    } kSoftware[] = {
        {"task-clock", "ns", PERF_COUNT_SW_TASK_CLOCK, "CPU time the thread ran, in nanoseconds."},
        {"cpu-clock", "ns", PERF_COUNT_SW_CPU_CLOCK, "CPU clock time while counting (a per-CPU timer), in nanoseconds."},
        {"context-switches", "count", PERF_COUNT_SW_CONTEXT_SWITCHES, "Times the thread was switched out."},
        {"cpu-migrations", "count", PERF_COUNT_SW_CPU_MIGRATIONS, "Times the thread moved to another CPU."},
        {"page-faults", "count", PERF_COUNT_SW_PAGE_FAULTS, "Page faults (minor and major)."},
        {"minor-faults", "count", PERF_COUNT_SW_PAGE_FAULTS_MIN, "Page faults served without I/O."},
        {"major-faults", "count", PERF_COUNT_SW_PAGE_FAULTS_MAJ, "Page faults that needed I/O."},
        {"alignment-faults", "count", PERF_COUNT_SW_ALIGNMENT_FAULTS, "Unaligned accesses the kernel fixed up."},
        {"emulation-faults", "count", PERF_COUNT_SW_EMULATION_FAULTS, "Instructions the kernel emulated."},
    };
    for (const auto& s : kSoftware) {
      CounterDef c = perf_def(s.name, s.unit, "perf_event", PERF_TYPE_SOFTWARE, s.config, s.description);
      const int rc = probe(c);
      if (rc < 0) mark_unsupported(&c, errno_reason(-rc));
      out.push_back(std::move(c));
    }
    const struct {
      const char* name;
      uint64_t config;
      const char* description;
    } kHardware[] = {
        {"cycles", PERF_COUNT_HW_CPU_CYCLES, "Core clock cycles while the thread ran."},
        {"instructions", PERF_COUNT_HW_INSTRUCTIONS, "Instructions retired."},
        {"cache-references", PERF_COUNT_HW_CACHE_REFERENCES, "Last-level cache accesses."},
        {"cache-misses", PERF_COUNT_HW_CACHE_MISSES, "Last-level cache misses."},
        {"branch-instructions", PERF_COUNT_HW_BRANCH_INSTRUCTIONS, "Branch instructions retired."},
        {"branch-misses", PERF_COUNT_HW_BRANCH_MISSES, "Mispredicted branches."},
    };
    for (const auto& h : kHardware) {
      CounterDef c = perf_def(h.name, "count", "perf_event", PERF_TYPE_HARDWARE, h.config, h.description);
      // Intel-style fixed counters hold cycles and instructions without a
      // programmable slot.
      if (pmu_.fixed >= 2 && (h.config == PERF_COUNT_HW_CPU_CYCLES || h.config == PERF_COUNT_HW_INSTRUCTIONS))
        c.slot = Slot::Fixed;
      const int rc = probe(c);
      if (rc < 0) mark_unsupported(&c, hardware_reason(-rc));
      out.push_back(std::move(c));
    }
    return out;
  }

  bool resolve_native(const std::string& name, CounterDef* out, std::string* note) override {
#ifdef EPPROF_HAVE_LIBPFM
    if (!pmu_.pfm_ok) {
      *note = pmu_.pfm_error;
      return false;
    }
    perf_event_attr attr;
    std::memset(&attr, 0, sizeof attr);
    pfm_perf_encode_arg_t arg;
    std::memset(&arg, 0, sizeof arg);
    arg.size = sizeof arg;
    arg.attr = &attr;
    const int rc = pfm_get_os_event_encoding(name.c_str(), PFM_PLM3 | PFM_PLM0, PFM_OS_PERF_EVENT, &arg);
    if (rc != PFM_SUCCESS) {
      *note = pmu_.pfm_core ? "libpfm4 (" + pmu_.pfm_name + "): " + pfm_strerror(rc)
                            : "PMU-native events cannot be named here: libpfm4 finds no core PMU on "
                              "this machine";
      return false;
    }
    CounterDef c = perf_def(name, "count", "libpfm4", attr.type, attr.config,
                            "PMU-native event, encoded by libpfm4 as perf type " + std::to_string(attr.type) +
                                ", config 0x" + to_hex(attr.config) + ".");
    c.perf.config1 = attr.config1;
    c.perf.config2 = attr.config2;
    const int prc = probe(c);
    if (prc < 0) mark_unsupported(&c, c.kind == EPPROF_COUNTER_SOFTWARE ? errno_reason(-prc) : hardware_reason(-prc));
    *out = std::move(c);
    return true;
#else
    (void)name, (void)out;
    *note = pmu_.pfm_error;
    return false;
#endif
  }

  epprof_status* open(const Plan& plan, std::unique_ptr<GroupSet>* out) override {
    auto groups = std::make_unique<PerfGroups>();
    groups->groups_.resize(plan.num_passes);
    for (uint32_t p = 0; p < plan.num_passes; ++p) {
      auto& g = groups->groups_[p];
      for (size_t idx : plan.members[p]) {
        const CounterDef& c = *plan.counters[idx];
        const bool leader = g.fds.empty();
        const int fd = perf_open(c, leader ? -1 : g.fds[0], leader);
        if (fd < 0) {
          const int err = -fd;
          const epprof_status_code code =
              (err == EMFILE || err == ENFILE) ? EPPROF_RESOURCE_EXHAUSTED : EPPROF_UNSUPPORTED;
          return base::status_from(code, [&] {
            return "epprof_counting_context_create: cannot count '" + c.name + "' (pass " +
                   std::to_string(p) + "): " + errno_reason(err);
          });
        }
        g.fds.push_back(fd);
      }
    }
    *out = std::move(groups);
    return nullptr;
  }

 private:
  static void mark_unsupported(CounterDef* c, std::string reason) {
    c->supported = false;
    c->unsupported_reason = std::move(reason);
  }

  std::string hardware_reason(int err) const {
    std::string why = "unsupported on this machine: ";
    if (!pmu_.sysfs_cpu)
      why += "no CPU PMU (/sys/bus/event_source/devices/cpu is missing, as on most virtual "
             "machines); ";
    return why + errno_reason(err);
  }

  static std::string to_hex(uint64_t v) {
    char buf[20];
    std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
    return buf;
  }

  PmuInfo pmu_;
};

}  // namespace

std::unique_ptr<Backend> make_perf_backend() { return std::make_unique<PerfBackend>(); }

}  // namespace epprof::counters
