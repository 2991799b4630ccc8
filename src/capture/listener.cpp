#include "capture/listener.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/status.h"
#include "base/thread.h"
#include "core/clock.h"
#include "core/log.h"

namespace epprof::capture {
namespace {

constexpr size_t kMaxConnections = 32;

std::string errno_text(int err) { return std::strerror(err); }

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool fill_address(const std::string& path, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof *addr);
  addr->sun_family = AF_UNIX;
  if (path.size() >= sizeof addr->sun_path) return false;
  std::memcpy(addr->sun_path, path.c_str(), path.size() + 1);
  return true;
}

// Whether a listener answers at `path`: 1 yes, 0 no (refused: a socket
// nobody listens on), -1 another error (errno set).
int probe(const std::string& path) {
  sockaddr_un addr;
  if (!fill_address(path, &addr)) return errno = ENAMETOOLONG, -1;
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int rc = connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  const int err = errno;
  close(fd);
  if (rc == 0) return 1;
  errno = err;
  return err == ECONNREFUSED ? 0 : -1;
}

// Removes "epprof-<pid>.sock" sockets of processes that no longer exist and
// that refuse connections: what killed hosts leave. The pid check keeps a
// live process's socket, bound but not yet listening, from being taken.
void sweep_stale(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  const pid_t self = getpid();
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind("epprof-", 0) != 0 || name.size() < 13 || name.compare(name.size() - 5, 5, ".sock") != 0) continue;
    const std::string digits = name.substr(7, name.size() - 12);
    if (digits.empty() || digits.size() > 10 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const long long pid = std::stoll(digits);
    if (pid <= 0 || pid > INT32_MAX || pid == self) continue;
    const std::string path = dir + "/" + name;
    struct stat st;
    if (lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    if (kill(pid_t(pid), 0) == 0 || errno != ESRCH) continue;
    if (probe(path) == 0) unlink(path.c_str());
  }
  closedir(d);
}

bool send_all(int fd, const std::string& line) {
  size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = send(fd, line.data() + off, line.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;  // a client that does not read is dropped
    off += size_t(n);
  }
  return true;
}

std::string error_line(const std::string& message, uint64_t id = 0) {
  std::string line = "{\"event\":\"error\"";
  if (id) line += ",\"id\":" + std::to_string(id);
  return line + ",\"error\":" + json_string(message) + "}\n";
}

}  // namespace

std::string default_socket_dir(uid_t uid) {
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && xdg[0] == '/') {
    struct stat st;
    if (lstat(xdg, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid) return std::string(xdg) + "/epprof";
  }
  return "/tmp/epprof-" + std::to_string(uid);
}

bool ensure_private_dir(const std::string& dir, uid_t uid, std::string* error, epprof_status_code* code) {
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    *code = EPPROF_IO_ERROR;
    *error = "cannot create the socket directory '" + dir + "': " + errno_text(errno);
    return false;
  }
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) {
    *code = EPPROF_IO_ERROR;
    *error = "cannot inspect the socket directory '" + dir + "': " + errno_text(errno);
    return false;
  }
  *code = EPPROF_FAILED_PRECONDITION;
  if (S_ISLNK(st.st_mode)) {
    *error = "the socket directory '" + dir + "' is a symlink; refusing it (another user may have planted it)";
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    *error = "the socket directory '" + dir + "' exists and is not a directory";
    return false;
  }
  if (st.st_uid != uid) {
    *error = "the socket directory '" + dir + "' belongs to uid " + std::to_string(st.st_uid) + ", not to uid " +
             std::to_string(uid) + "; refusing it";
    return false;
  }
  if (st.st_mode & 077) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
    *error = "the socket directory '" + dir + "' has mode " + mode +
             ": others can enter it; it must be 0700 (chmod 700 it, or remove it)";
    return false;
  }
  return true;
}

bool peer_credentials(int fd, PeerCred* out, std::string* error) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof cred) {
    *error = "cannot read the peer's credentials (SO_PEERCRED): " + errno_text(errno);
    return false;
  }
  out->pid = cred.pid;
  out->uid = cred.uid;
  out->gid = cred.gid;
  return true;
}

struct Listener::Conn {
  int fd = -1;
  PeerCred peer;
  std::string buf;
  int64_t deadline_ms = 0;
  bool waiting = false;     // its request was accepted; it waits for the answer
  bool read_closed = false; // the client shut down its writing side
  uint64_t request_id = 0;  // when waiting
};

epprof_status* Listener::start(const ListenerOptions& options, std::atomic<uint32_t>* pending,
                               std::unique_ptr<Listener>* out) {
  const uid_t uid = geteuid();
  const std::string dir = options.socket_dir.empty() ? default_socket_dir(uid) : options.socket_dir;
  if (dir[0] != '/')
    return base::make_status(EPPROF_INVALID_ARGUMENT,
                            "epprof_listener_start: socket_dir must be an absolute path, not '" + dir + "'");
  std::string error;
  epprof_status_code code = EPPROF_OK;
  if (!ensure_private_dir(dir, uid, &error, &code)) return base::make_status(code, "epprof_listener_start: " + error);
  std::unique_ptr<Listener> l(new Listener());
  l->path_ = dir + "/epprof-" + std::to_string(getpid()) + ".sock";
  l->owner_ = uid;
  l->pending_ = pending;
  l->request_timeout_ms_ = options.request_timeout_ms;
  sockaddr_un addr;
  if (!fill_address(l->path_, &addr))
    return base::make_status(EPPROF_INVALID_ARGUMENT, "epprof_listener_start: the socket path '" + l->path_ +
                                                         "' is longer than a Unix socket address holds (" +
                                                         std::to_string(sizeof addr.sun_path - 1) + " bytes)");
  sweep_stale(dir);
  struct stat st;
  if (lstat(l->path_.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return base::make_status(EPPROF_FAILED_PRECONDITION,
                              "epprof_listener_start: '" + l->path_ + "' exists and is not a socket; not touching it");
    const int alive = probe(l->path_);
    if (alive == 1)
      return base::make_status(EPPROF_FAILED_PRECONDITION,
                              "epprof_listener_start: a listener of this process already answers at '" + l->path_ + "'");
    if (alive < 0)
      return base::make_status(EPPROF_IO_ERROR, "epprof_listener_start: cannot probe '" + l->path_ + "': " +
                                                   errno_text(errno));
    unlink(l->path_.c_str());  // stale: left by a killed process that had our pid
  }
  l->listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (l->listen_fd_ < 0)
    return base::make_status(EPPROF_IO_ERROR, "epprof_listener_start: socket: " + errno_text(errno));
  if (bind(l->listen_fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
    return base::make_status(EPPROF_IO_ERROR,
                            "epprof_listener_start: cannot bind '" + l->path_ + "': " + errno_text(errno));
  // The directory already keeps others out; the mode says so again.
  if (chmod(l->path_.c_str(), 0600) != 0 || stat(l->path_.c_str(), &st) != 0 ||
      listen(l->listen_fd_, 16) != 0) {
    const int err = errno;
    unlink(l->path_.c_str());
    return base::make_status(EPPROF_IO_ERROR,
                            "epprof_listener_start: cannot listen on '" + l->path_ + "': " + errno_text(err));
  }
  l->dev_ = st.st_dev;
  l->ino_ = st.st_ino;
  l->wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (l->wake_fd_ < 0) {
    const int err = errno;
    unlink(l->path_.c_str());
    return base::make_status(EPPROF_IO_ERROR, "epprof_listener_start: eventfd: " + errno_text(err));
  }
  try {
    l->thread_ = base::quiet_thread([p = l.get()] { p->loop(); });
  } catch (...) {
    unlink(l->path_.c_str());
    throw;
  }
  *out = std::move(l);
  return nullptr;
}

Listener::~Listener() {
  stop();
  if (listen_fd_ >= 0) close(listen_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

void Listener::wake() {
  const uint64_t one = 1;
  ssize_t rc;
  do rc = write(wake_fd_, &one, sizeof one);
  while (rc < 0 && errno == EINTR);
}

void Listener::stop() {
  if (stopped_ || !thread_.joinable()) return;
  stopped_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    state_ = State::Idle;
  }
  pending_->store(0, std::memory_order_relaxed);
  wake();
  thread_.join();
  // Remove the file only if it is still ours.
  struct stat st;
  if (lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_) unlink(path_.c_str());
  close(listen_fd_);
  listen_fd_ = -1;
}

const epprof_trace_filter* Listener::borrow_filter(Current& cur) {
  const FilterRequest& in = cur.request.filter;
  auto pointers = [](const std::vector<std::string>& names, std::vector<const char*>* out) {
    out->clear();
    for (const std::string& n : names) out->push_back(n.c_str());
    return out->empty() ? nullptr : out->data();
  };
  epprof_trace_filter& f = cur.filter;
  f = epprof_trace_filter{};
  f.size = sizeof f;
  f.categories = in.categories;
  f.op_types = pointers(in.op_types, &cur.op_types);
  f.num_op_types = in.op_types.size();
  f.node_names = pointers(in.node_names, &cur.node_names);
  f.num_node_names = in.node_names.size();
  f.node_name_regex = in.node_name_regex.empty() ? nullptr : in.node_name_regex.c_str();
  f.ep_names = pointers(in.ep_names, &cur.ep_names);
  f.num_ep_names = in.ep_names.size();
  f.kernel_name_regex = in.kernel_name_regex.empty() ? nullptr : in.kernel_name_regex.c_str();
  return &f;
}

epprof_status* Listener::take(epprof_capture_request* out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ != State::Pending)
    return base::make_status(EPPROF_FAILED_PRECONDITION, "epprof_listener_take: no capture request is pending");
  state_ = State::Taken;
  pending_->store(0, std::memory_order_relaxed);
  epprof_capture_request r{};
  r.size = out->size;
  r.request_id = cur_.id;
  r.runs = cur_.request.runs;
  r.duration_ns = cur_.request.duration_ms * 1000000;
  r.trace_path = cur_.request.output.c_str();
  r.scope_name = cur_.request.scope_name.c_str();
  r.received_ns = cur_.received_ns;
  r.client_pid = uint32_t(cur_.client_pid);
  r.client_uid = uint32_t(owner_);
  if (cur_.request.filter.present) r.filter = borrow_filter(cur_);
  std::memcpy(out, &r, std::min(out->size, sizeof r));
  outbox_.push_back({cur_.id, "{\"event\":\"started\",\"id\":" + std::to_string(cur_.id) + "}\n", false});
  wake();
  return nullptr;
}

epprof_status* Listener::complete(uint64_t request_id, const epprof_capture_result& r) {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ != State::Taken || cur_.id != request_id)
    return base::make_status(EPPROF_FAILED_PRECONDITION, "epprof_listener_complete: request " +
                                                            std::to_string(request_id) + " is not the capture in progress");
  std::string line;
  if (r.code == EPPROF_OK) {
    const std::string trace = r.trace_path ? r.trace_path : cur_.request.output;
    const int64_t latency = r.first_run_ns > 0 ? r.first_run_ns - cur_.received_ns : -1;
    // A filtered trace is partial: the client hears how much it left out
    // (when the host's result says).
    const bool counted = r.size >= offsetof(epprof_capture_result, filtered_events) + sizeof r.filtered_events;
    const std::string filtered = cur_.request.filter.present && counted
                                     ? ",\"filtered_events\":" + std::to_string(r.filtered_events)
                                     : std::string();
    line = "{\"event\":\"done\",\"id\":" + std::to_string(request_id) + ",\"trace\":" + json_string(trace) +
           ",\"runs\":" + std::to_string(r.runs) + ",\"host_events\":" + std::to_string(r.host_events) +
           ",\"device_events\":" + std::to_string(r.device_events) + filtered +
           ",\"latency_ns\":" + std::to_string(latency) + ",\"summary\":" + json_string(r.summary ? r.summary : "") +
           "}\n";
  } else {
    std::string msg = r.message && *r.message ? r.message : "the host could not capture";
    line = error_line(msg + " (" + epprof_status_code_name(epprof_status_code(r.code)) + ")", request_id);
  }
  outbox_.push_back({request_id, std::move(line), true});
  state_ = State::Idle;
  cur_ = Current{};
  wake();
  return nullptr;
}

void Listener::accept_all(std::vector<Conn>& conns) {
  for (;;) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // EAGAIN, or out of descriptors: try again at the next poll
    }
    Conn c;
    c.fd = fd;
    std::string error;
    if (!peer_credentials(fd, &c.peer, &error)) {
      core::log_warning(EPPROF_FAILED_PRECONDITION, "epprof listener: refused a connection: " + error);
      send_all(fd, error_line("refused: " + error));
      close(fd);
      continue;
    }
    if (!peer_allowed(c.peer, owner_)) {
      const std::string who = "pid " + std::to_string(c.peer.pid) + " uid " + std::to_string(c.peer.uid);
      core::log_warning(EPPROF_FAILED_PRECONDITION, "epprof listener (" + path_ + "): refused a connection from " +
                                                        who + ": only uid " + std::to_string(owner_) +
                                                        " may capture this process");
      send_all(fd, error_line("refused: uid " + std::to_string(c.peer.uid) + " may not capture pid " +
                              std::to_string(getpid()) + ", which runs as uid " + std::to_string(owner_)));
      close(fd);
      continue;
    }
    if (conns.size() >= kMaxConnections) {
      send_all(fd, error_line("too many connections to this listener; try again"));
      close(fd);
      continue;
    }
    c.deadline_ms = steady_ms() + request_timeout_ms_;
    conns.push_back(std::move(c));
  }
}

bool Listener::handle_request(Conn& c, std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  Request req;
  std::string error;
  if (!parse_request(line, &req, &error)) {
    send_all(c.fd, error_line("bad request: " + error));
    return false;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) {
    send_all(c.fd, error_line("the listener is stopping"));
    return false;
  }
  if (state_ != State::Idle) {
    send_all(c.fd, error_line("a capture of pid " + std::to_string(getpid()) + " is already in progress (request " +
                              std::to_string(cur_.id) + " from pid " + std::to_string(cur_.client_pid) +
                              "); try again when it completes"));
    return false;
  }
  static std::atomic<uint64_t> next_id{0};
  cur_.id = next_id.fetch_add(1, std::memory_order_relaxed) + 1;
  cur_.request = std::move(req);
  cur_.received_ns = core::monotonic_ns();
  cur_.client_pid = c.peer.pid;
  state_ = State::Pending;
  c.waiting = true;
  c.request_id = cur_.id;
  c.buf.clear();
  c.buf.shrink_to_fit();
  if (!send_all(c.fd, "{\"event\":\"accepted\",\"id\":" + std::to_string(cur_.id) +
                          ",\"pid\":" + std::to_string(getpid()) + "}\n")) {
    state_ = State::Idle;
    return false;
  }
  pending_->store(1, std::memory_order_relaxed);
  return true;
}

void Listener::client_gone(const Conn& c) {
  if (!c.waiting) return;
  std::lock_guard<std::mutex> lock(mu_);
  // Not taken yet: the request goes with its client. Taken: the capture is
  // the host's now and runs to its end.
  if (state_ == State::Pending && cur_.id == c.request_id) {
    state_ = State::Idle;
    pending_->store(0, std::memory_order_relaxed);
  }
}

void Listener::loop() {
  std::vector<Conn> conns;
  std::vector<pollfd> fds;
  auto drop = [&](size_t i) {
    client_gone(conns[i]);
    close(conns[i].fd);
    conns.erase(conns.begin() + std::ptrdiff_t(i));
  };
  for (;;) {
    // Deliver what the host said, and see whether to stop.
    std::vector<Outgoing> out;
    bool stopping;
    {
      std::lock_guard<std::mutex> lock(mu_);
      out.swap(outbox_);
      stopping = stopping_;
    }
    for (const Outgoing& o : out) {
      for (size_t i = 0; i < conns.size(); ++i) {
        if (!conns[i].waiting || conns[i].request_id != o.request_id) continue;
        if (!send_all(conns[i].fd, o.line) || o.last) {
          conns[i].waiting = false;  // answered: nothing to cancel
          drop(i);
        }
        break;
      }
    }
    if (stopping) {
      for (Conn& c : conns) {
        if (c.waiting)
          send_all(c.fd, error_line("the listener of pid " + std::to_string(getpid()) +
                                        " stopped before the capture completed; no trace was written",
                                    c.request_id));
        close(c.fd);
      }
      return;
    }

    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    int64_t next_deadline = INT64_MAX;
    for (const Conn& c : conns) {
      fds.push_back({c.fd, short(c.read_closed ? 0 : POLLIN), 0});
      if (!c.waiting) next_deadline = std::min(next_deadline, c.deadline_ms);
    }
    int timeout = -1;
    if (next_deadline != INT64_MAX) timeout = int(std::max<int64_t>(0, std::min<int64_t>(next_deadline - steady_ms(), 60000)));
    const int rc = poll(fds.data(), fds.size(), timeout);
    if (rc < 0 && errno != EINTR) {
      core::log_warning(EPPROF_IO_ERROR, "epprof listener: poll failed: " + errno_text(errno));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    if (fds[0].revents) {
      uint64_t v;
      while (read(wake_fd_, &v, sizeof v) > 0) {
      }
    }
    const int64_t now = steady_ms();
    // Connections, back to front so that dropping one keeps the indices of
    // those still to visit (fds[i + 2] is conns[i]).
    for (size_t i = conns.size(); i-- > 0;) {
      Conn& c = conns[i];
      const short re = fds[i + 2].revents;
      if (c.waiting) {
        // Gone: closed (POLLHUP) or broken. A client that only shut down
        // its writing side (recv gives 0 without POLLHUP) still waits.
        if (re & (POLLHUP | POLLERR)) {
          drop(i);
        } else if (re & POLLIN) {
          char scratch[512];
          const ssize_t n = recv(c.fd, scratch, sizeof scratch, MSG_DONTWAIT);
          if (n == 0) c.read_closed = true;
          else if (n < 0 && errno != EAGAIN && errno != EINTR) drop(i);
        }
        continue;
      }
      bool eof = false;
      if (re & (POLLIN | POLLHUP | POLLERR)) {
        char chunk[4096];
        for (;;) {
          const ssize_t n = recv(c.fd, chunk, sizeof chunk, MSG_DONTWAIT);
          if (n > 0) {
            c.buf.append(chunk, size_t(n));
            if (c.buf.size() >= kMaxRequestBytes || c.buf.find('\n') != std::string::npos) break;
            continue;
          }
          if (n < 0 && errno == EINTR) continue;
          eof = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
          break;
        }
      }
      const size_t nl = c.buf.find('\n');
      if (nl != std::string::npos && nl < kMaxRequestBytes) {
        if (!handle_request(c, std::string_view(c.buf).substr(0, nl))) drop(i);
      } else if (c.buf.size() >= kMaxRequestBytes) {
        send_all(c.fd, error_line("bad request: request too long: more than " + std::to_string(kMaxRequestBytes) +
                                  " bytes without a newline"));
        drop(i);
      } else if (eof) {
        // A request ended by shutting down the writing side; an empty one
        // is a probe (another listener checking that this one is alive).
        c.read_closed = true;
        if (c.buf.empty() || !handle_request(c, c.buf)) drop(i);
      } else if (now >= c.deadline_ms) {
        send_all(c.fd, error_line("no complete request within " + std::to_string(request_timeout_ms_) + " ms"));
        drop(i);
      }
    }
    if (fds[1].revents & POLLIN) accept_all(conns);
  }
}

}  // namespace epprof::capture
