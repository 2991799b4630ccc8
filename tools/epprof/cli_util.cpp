// Small helpers shared by the subcommands.
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "cli.h"
#include "epprof/profiler.h"
#include "io/atomic_file.h"

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

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t at = s.find(',', start);
    out.push_back(s.substr(start, at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

std::string executable_dir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  std::string path(buf, size_t(n));
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

namespace {

volatile sig_atomic_t g_pending_signal = 0;
volatile sig_atomic_t g_finish_current_work = 0;

// Runs on the main thread only: a signal taken by another thread (the
// kernel picks one when the main thread blocks it, as it does while a file
// is renamed into place) is sent on to the main thread, where it waits
// until that rename is done. Exiting removes what temporaries remain (the
// named fallback's) in libepprof's writer and in the CLI's own.
void on_signal(int sig) {
  const int saved_errno = errno;
  const pid_t pid = getpid();
  if (static_cast<pid_t>(syscall(SYS_gettid)) != pid) {
    syscall(SYS_tgkill, pid, pid, sig);
    errno = saved_errno;
    return;
  }
  if (!g_finish_current_work || g_pending_signal != 0) {
    epprof_remove_temporary_files();
    io::remove_temporaries_at_exit();
    _exit(signal_exit_code(sig));
  }
  g_pending_signal = sig;
  errno = saved_errno;
}

}  // namespace

void install_signal_handlers(SignalMode mode) {
  g_finish_current_work = mode == SignalMode::kFinishCurrentWork;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;  // the work goes on after the first signal
    sigaction(sig, &sa, nullptr);
  }
}

int pending_signal() { return g_pending_signal; }

}  // namespace epprof::cli
