// JsonWriter's write-behind: full buffers written by a helper thread while
// formatting goes on. In the concurrency tests, so that ThreadSanitizer sees
// every hand-off in CI.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include "base/thread.h"
#include "export/json_writer.h"
#include "support/test_util.h"

namespace epprof::exporter {
namespace {

using epprof::testing::TempFile;

// Numbers, strings and raw text through a buffer so small that nearly every
// item hands one off: the file holds them all, in order.
TEST(WriteBehind, ManyHandOffsKeepEveryByteInOrder) {
  TempFile file;
  JsonWriter w(file.fd, JsonWriter::kMinBufferSize);
  std::string expected;
  for (uint64_t i = 0; i < 200000; ++i) {
    w.u64(i);
    expected += std::to_string(i);
    w.string("n");
    expected += "\"n\"";
    if (i % 1000 == 0) {
      const std::string big(700, char('a' + i / 1000 % 26));  // more than a buffer: written in place
      w.raw(big);
      expected += big;
    }
  }
  ASSERT_TRUE(w.flush()) << w.error();
  EXPECT_EQ(w.bytes_written(), expected.size());
  EXPECT_TRUE(file.contents() == expected);
}

// A failed write on the writer thread fails the writer: the next hand-off
// or flush reports it, and nothing more is written after the gap.
TEST(WriteBehind, AWriteErrorOnTheWriterThreadReachesTheCaller) {
  const int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
  if (fd < 0) GTEST_SKIP() << "/dev/full: " << std::strerror(errno);
  JsonWriter w(fd, 4096);
  int items = 0;
  for (; items < 100000 && w.ok(); ++items) w.string("kernel_time");
  EXPECT_FALSE(w.ok());
  EXPECT_LT(items, 2000) << "the error showed only after " << items << " items";
  EXPECT_NE(w.error().find(std::strerror(ENOSPC)), std::string::npos) << w.error();
  EXPECT_FALSE(w.flush());
  close(fd);
}

// Destroyed without a flush, the writer finishes the buffer it handed off
// and writes nothing afterwards: the file is a prefix of the text, and the
// same size a moment later.
TEST(WriteBehind, DestructionWaitsForTheBufferInFlight) {
  TempFile file;
  std::string expected;
  {
    JsonWriter w(file.fd, 4096);
    for (int i = 0; i < 5000; ++i) {
      w.raw("{\"i\":");
      w.i64(i);
      w.raw("},");
      expected += "{\"i\":" + std::to_string(i) + "},";
    }
  }
  const std::string first = file.contents();
  EXPECT_GT(first.size(), 0u);
  EXPECT_LT(first.size(), expected.size());  // the last buffer was never handed off
  EXPECT_EQ(expected.compare(0, first.size(), first), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(file.contents().size(), first.size());
}

size_t threads_in_process() {
  size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) n += entry.is_directory();
  return n;
}

// Allowed one CPU, the writer writes in place: no thread is started, and
// the text is whole.
TEST(WriteBehind, OneCpuWritesInPlace) {
  cpu_set_t all, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &all)) {
      CPU_SET(c, &one);
      break;
    }
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  TempFile file;
  std::string expected;
  size_t threads_while_writing;
  {
    const size_t threads_before = threads_in_process();
    JsonWriter w(file.fd, 4096);
    for (int i = 0; i < 5000; ++i) {
      w.u64(uint64_t(i));
      expected += std::to_string(i);
    }
    threads_while_writing = threads_in_process() - threads_before;
    EXPECT_TRUE(w.flush()) << w.error();
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof all, &all), 0);
  EXPECT_EQ(threads_while_writing, 0u);
  EXPECT_TRUE(file.contents() == expected);
}

bool blocks_all(const sigset_t& mask) {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM, SIGCHLD})
    if (!sigismember(&mask, sig)) return false;
  return true;
}

TEST(QuietThread, BlocksEverySignalAndLeavesTheCallersMask) {
  sigset_t before, after, inside;
  pthread_sigmask(SIG_SETMASK, nullptr, &before);
  ASSERT_FALSE(sigismember(&before, SIGUSR1)) << "the test runner blocks SIGUSR1 already";
  base::quiet_thread([&inside] { pthread_sigmask(SIG_SETMASK, nullptr, &inside); }).join();
  pthread_sigmask(SIG_SETMASK, nullptr, &after);
  EXPECT_TRUE(blocks_all(inside));
  EXPECT_FALSE(sigismember(&after, SIGUSR1));
  EXPECT_FALSE(sigismember(&after, SIGINT));
}

}  // namespace
}  // namespace epprof::exporter
