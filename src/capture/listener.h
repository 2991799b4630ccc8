// The capture listener behind epprof/capture.h: a Unix socket in a private
// directory, served by one thread that multiplexes every connection with
// poll(), so that no client (a stalled one, a flood of garbage) can block
// it or the host. The host's side (pending, take, complete) only touches
// shared state under a mutex and wakes the thread; all socket I/O happens
// on the thread.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "capture/request.h"
#include "epprof/capture.h"

namespace epprof::capture {

// $XDG_RUNTIME_DIR/epprof when XDG_RUNTIME_DIR is an absolute path to a
// directory (not a symlink) owned by `uid`, else /tmp/epprof-<uid>.
std::string default_socket_dir(uid_t uid);

// Creates `dir` with mode 0700 if it does not exist; then checks that it is
// a directory, not a symlink, owned by `uid`, with no group or other
// access. On failure returns false, sets *error to a message naming the
// directory and the problem and *code to FAILED_PRECONDITION (unsafe) or
// IO_ERROR (cannot create or inspect).
bool ensure_private_dir(const std::string& dir, uid_t uid, std::string* error, epprof_status_code* code);

// The peer of a connected Unix socket, from SO_PEERCRED.
struct PeerCred {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};
// False (with *error) when the credentials cannot be read.
bool peer_credentials(int fd, PeerCred* out, std::string* error);
// Whether a peer may capture a host running as `owner`: same uid only.
inline bool peer_allowed(const PeerCred& peer, uid_t owner) { return peer.uid == owner; }

struct ListenerOptions {
  std::string socket_dir;          // empty: default_socket_dir(geteuid())
  int request_timeout_ms = 5000;
};

class Listener {
 public:
  // Binds the socket and starts the thread. `pending` is the word
  // epprof_listener_pending reads; it must outlive the listener. On error
  // returns a status and leaves nothing behind.
  static epprof_status* start(const ListenerOptions& options, std::atomic<uint32_t>* pending,
                              std::unique_ptr<Listener>* out);
  ~Listener();  // stop()
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  const std::string& socket_path() const { return path_; }
  epprof_status* take(epprof_capture_request* out);
  epprof_status* complete(uint64_t request_id, const epprof_capture_result& result);
  // Idempotent; joins the thread, closes the socket, removes its file.
  void stop();

 private:
  struct Conn;
  enum class State { Idle, Pending, Taken };
  struct Current {
    uint64_t id = 0;
    Request request;
    int64_t received_ns = 0;
    pid_t client_pid = 0;
    // request.filter as the C struct the host borrows (take), and the
    // arrays it points to; request no longer moves once taken.
    epprof_trace_filter filter{};
    std::vector<const char*> op_types, node_names, ep_names;
  };
  struct Outgoing {
    uint64_t request_id;
    std::string line;
    bool last;  // close the connection after it
  };

  Listener() = default;
  // The request's filter as the host borrows it, pointing into `cur`.
  static const epprof_trace_filter* borrow_filter(Current& cur);
  void loop();
  void wake();
  void accept_all(std::vector<Conn>& conns);
  // Handles a complete request line of `c`; returns false to close it.
  bool handle_request(Conn& c, std::string_view line);
  void client_gone(const Conn& c);

  std::string path_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  int listen_fd_ = -1;
  int wake_fd_ = -1;
  int request_timeout_ms_ = 5000;
  uid_t owner_ = 0;
  std::atomic<uint32_t>* pending_ = nullptr;
  std::thread thread_;
  bool stopped_ = false;  // stop() ran (host side only)

  std::mutex mu_;  // guards everything below
  State state_ = State::Idle;
  Current cur_;
  std::vector<Outgoing> outbox_;
  bool stopping_ = false;
};

}  // namespace epprof::capture
