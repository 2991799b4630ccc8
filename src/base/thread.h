// Helper threads that leave the host's signals to the host.
#pragma once

#include <pthread.h>
#include <signal.h>

#include <thread>
#include <utility>

namespace epprof::base {

// Starts `f` on a new thread with every signal blocked. A library's helper
// thread (a trace writer, a session's delivery, a listener) must not take a
// signal meant for the host: the host's handler would run on a thread the
// host does not know, and a blocking call there would see EINTR. Throws as
// std::thread's constructor does; the caller's signal mask is unchanged
// either way.
template <class F>
std::thread quiet_thread(F&& f) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // the new thread inherits this mask
  try {
    std::thread t(std::forward<F>(f));
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return t;
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    throw;
  }
}

}  // namespace epprof::base
