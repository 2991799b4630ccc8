#include "io/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace epprof::io {
namespace {

namespace fs = std::filesystem;

// A fresh empty directory, removed with its contents at scope exit.
struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl = ::testing::TempDir() + "atomic_file_test.XXXXXX";
    EXPECT_NE(mkdtemp(tmpl.data()), nullptr) << std::strerror(errno);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::vector<std::string> entries() const { return list(path); }
  static std::vector<std::string> list(const std::string& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
};

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_all(int fd, const std::string& s) {
  ASSERT_EQ(write(fd, s.data(), s.size()), ssize_t(s.size())) << std::strerror(errno);
}

TEST(AtomicFile, CommitPublishesContent) {
  TempDir dir;
  const std::string final_path = dir.path + "/trace.json";
  std::string error;
  auto file = AtomicFile::create(final_path, &error);
  ASSERT_NE(file, nullptr) << error;
  ASSERT_GE(file->fd(), 0);
  write_all(file->fd(), "[{\"cat\":\"Session\"}]\n");

  // Before commit the temporary has no name: nothing is visible.
  EXPECT_TRUE(dir.entries().empty());
  EXPECT_EQ(file->target_path(), final_path);

  ASSERT_TRUE(file->commit(&error)) << error;
  EXPECT_EQ(file->fd(), -1);
  EXPECT_EQ(read_file(final_path), "[{\"cat\":\"Session\"}]\n");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"trace.json"});

  // Committing twice fails and does not disturb the published file.
  EXPECT_FALSE(file->commit(&error));
  EXPECT_NE(error.find(final_path), std::string::npos) << error;
  file.reset();
  EXPECT_EQ(read_file(final_path), "[{\"cat\":\"Session\"}]\n");
}

TEST(AtomicFile, CommitReplacesExistingFile) {
  TempDir dir;
  const std::string final_path = dir.path + "/trace.json";
  std::ofstream(final_path) << "old contents";
  auto file = AtomicFile::create(final_path, nullptr);
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(read_file(final_path), "old contents");  // untouched until commit
  write_all(file->fd(), "new");
  ASSERT_TRUE(file->commit(nullptr));
  EXPECT_EQ(read_file(final_path), "new");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"trace.json"});
}

TEST(AtomicFile, DestroyWithoutCommitLeavesNothing) {
  TempDir dir;
  {
    auto file = AtomicFile::create(dir.path + "/trace.json", nullptr);
    ASSERT_NE(file, nullptr);
    write_all(file->fd(), "partial trace");
  }
  EXPECT_TRUE(dir.entries().empty());
}

TEST(AtomicFile, ConcurrentFilesToOnePathLastCommitWins) {
  TempDir dir;
  auto a = AtomicFile::create(dir.path + "/trace.json", nullptr);
  auto b = AtomicFile::create(dir.path + "/trace.json", nullptr);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  write_all(a->fd(), "a");
  write_all(b->fd(), "b");
  ASSERT_TRUE(a->commit(nullptr));
  ASSERT_TRUE(b->commit(nullptr));
  EXPECT_EQ(read_file(dir.path + "/trace.json"), "b");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"trace.json"});
}

TEST(AtomicFile, NonexistentDirectoryFails) {
  TempDir dir;
  const std::string missing = dir.path + "/no/such/dir";
  std::string error;
  auto file = AtomicFile::create(missing + "/trace.json", &error);
  EXPECT_EQ(file, nullptr);
  EXPECT_NE(error.find("'" + missing + "'"), std::string::npos) << error;
  EXPECT_NE(error.find(std::strerror(ENOENT)), std::string::npos) << error;
  EXPECT_TRUE(dir.entries().empty());
}

TEST(AtomicFile, ParentIsRegularFileFails) {
  // Tests may run as root, which can write anywhere; a file as the parent
  // "directory" fails for root too.
  TempDir dir;
  const std::string not_a_dir = dir.path + "/plain_file";
  std::ofstream(not_a_dir) << "x";
  std::string error;
  EXPECT_EQ(AtomicFile::create(not_a_dir + "/trace.json", &error), nullptr);
  EXPECT_NE(error.find("'" + not_a_dir + "'"), std::string::npos) << error;
  EXPECT_NE(error.find(std::strerror(ENOTDIR)), std::string::npos) << error;
}

TEST(AtomicFile, FinalPathThatIsADirectoryFailsAtCreate) {
  TempDir dir;
  std::string error;
  EXPECT_EQ(AtomicFile::create(dir.path, &error), nullptr);
  EXPECT_NE(error.find(dir.path), std::string::npos) << error;
  EXPECT_NE(error.find("it is a directory"), std::string::npos) << error;
  EXPECT_EQ(AtomicFile::create(dir.path + "/", &error), nullptr);
  EXPECT_NE(error.find(dir.path), std::string::npos) << error;
}

TEST(AtomicFile, ModeFollowsUmask) {
  TempDir dir;
  const mode_t old_mask = umask(027);
  auto file = AtomicFile::create(dir.path + "/trace.json", nullptr);
  umask(old_mask);
  ASSERT_NE(file, nullptr);
  ASSERT_TRUE(file->commit(nullptr));
  struct stat st;
  ASSERT_EQ(stat((dir.path + "/trace.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
}

TEST(AtomicFile, RelativePathUsesCurrentDirectory) {
  TempDir dir;
  char cwd[PATH_MAX];
  ASSERT_NE(getcwd(cwd, sizeof cwd), nullptr);
  ASSERT_EQ(chdir(dir.path.c_str()), 0);
  auto file = AtomicFile::create("trace.json", nullptr);
  const bool committed = file && file->commit(nullptr);
  file.reset();
  ASSERT_EQ(chdir(cwd), 0);
  EXPECT_TRUE(committed);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"trace.json"});
}


// Output-path rules (issue 15, item 1). Each of these replaced the special
// file, or the link itself, before the rules existed.

TEST(OutputPath, SymlinkIsFollowedAndItsTargetReplacedInItsDirectory) {
  TempDir dir;
  ASSERT_EQ(mkdir((dir.path + "/real").c_str(), 0755), 0);
  std::ofstream(dir.path + "/real/trace.json") << "old";
  ASSERT_EQ(symlink("real/trace.json", (dir.path + "/link.json").c_str()), 0);
  auto file = AtomicFile::create(dir.path + "/link.json", nullptr);
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(file->target_path(), dir.path + "/real/trace.json");
  write_all(file->fd(), "new");
  ASSERT_TRUE(file->commit(nullptr));
  struct stat st;
  ASSERT_EQ(lstat((dir.path + "/link.json").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode)) << "the symlink itself was replaced";
  EXPECT_EQ(read_file(dir.path + "/real/trace.json"), "new");
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"link.json", "real"}));
  EXPECT_EQ(TempDir::list(dir.path + "/real"), std::vector<std::string>{"trace.json"});
}

TEST(OutputPath, DanglingSymlinkCreatesItsTarget) {
  TempDir dir;
  ASSERT_EQ(symlink((dir.path + "/target.json").c_str(), (dir.path + "/link.json").c_str()), 0);
  auto file = AtomicFile::create(dir.path + "/link.json", nullptr);
  ASSERT_NE(file, nullptr);
  write_all(file->fd(), "x");
  ASSERT_TRUE(file->commit(nullptr));
  EXPECT_EQ(read_file(dir.path + "/target.json"), "x");
}

TEST(OutputPath, SymlinkLoopIsRefused) {
  TempDir dir;
  ASSERT_EQ(symlink("b", (dir.path + "/a").c_str()), 0);
  ASSERT_EQ(symlink("a", (dir.path + "/b").c_str()), 0);
  std::string error;
  EXPECT_EQ(AtomicFile::create(dir.path + "/a", &error), nullptr);
  EXPECT_NE(error.find(std::strerror(ELOOP)), std::string::npos) << error;
}

TEST(OutputPath, FifoIsRefused) {
  TempDir dir;
  const std::string fifo = dir.path + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  std::string error;
  EXPECT_EQ(AtomicFile::create(fifo, &error), nullptr);
  EXPECT_NE(error.find("'" + fifo + "'"), std::string::npos) << error;
  EXPECT_NE(error.find("it is a FIFO"), std::string::npos) << error;
  struct stat st;
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"fifo"});
}

TEST(OutputPath, SymlinkToFifoIsRefused) {
  TempDir dir;
  ASSERT_EQ(mkfifo((dir.path + "/fifo").c_str(), 0644), 0);
  ASSERT_EQ(symlink("fifo", (dir.path + "/link").c_str()), 0);
  std::string error;
  EXPECT_EQ(AtomicFile::create(dir.path + "/link", &error), nullptr);
  EXPECT_NE(error.find("a symlink to"), std::string::npos) << error;
  EXPECT_NE(error.find("it is a FIFO"), std::string::npos) << error;
}

TEST(OutputPath, SocketIsRefused) {
  TempDir dir;
  const std::string path = dir.path + "/sock";
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(path.size(), sizeof addr.sun_path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << std::strerror(errno);
  std::string error;
  EXPECT_EQ(AtomicFile::create(path, &error), nullptr);
  close(fd);
  EXPECT_NE(error.find("it is a socket"), std::string::npos) << error;
}

TEST(OutputPath, DeviceNodeIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "mknod of a device node needs root";
  TempDir dir;
  const std::string dev = dir.path + "/null";
  ASSERT_EQ(mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0) << std::strerror(errno);
  std::string error;
  EXPECT_EQ(AtomicFile::create(dev, &error), nullptr);
  EXPECT_NE(error.find("it is a character device"), std::string::npos) << error;
  struct stat st;
  ASSERT_EQ(lstat(dev.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "the device node was replaced";
}

TEST(OutputPath, AnInputOfTheCommandIsRefused) {
  TempDir dir;
  const std::string model = dir.path + "/m.onnx";
  std::ofstream(model) << "model bytes";
  ASSERT_EQ(link(model.c_str(), (dir.path + "/hard.onnx").c_str()), 0);
  ASSERT_EQ(symlink("m.onnx", (dir.path + "/soft.onnx").c_str()), 0);
  for (const std::string& out : {model, dir.path + "/hard.onnx", dir.path + "/soft.onnx", dir.path + "/./m.onnx"}) {
    std::string error;
    EXPECT_EQ(AtomicFile::create(out, &error, {dir.path + "/other", model}), nullptr) << out;
    EXPECT_NE(error.find("it is the input '" + model + "'"), std::string::npos) << error;
  }
  EXPECT_EQ(read_file(model), "model bytes");
  // Another path is fine, and so is an input that does not exist.
  EXPECT_TRUE(check_output_path(dir.path + "/trace.json", {model, dir.path + "/missing"}, nullptr, nullptr));
}

TEST(OutputPath, KilledWriterLeavesNothing) {
  TempDir dir;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto file = AtomicFile::create(dir.path + "/trace.json", nullptr);
    if (file) (void)!write(file->fd(), "partial", 7);
    raise(SIGKILL);
    _exit(1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_TRUE(dir.entries().empty());
}

// The named fallback (no O_TMPFILE) behaves as the unnamed temporary does,
// and a handler about to _exit removes its temporaries: a child process
// that writes two files, then exits as the CLI's signal handler does,
// leaves nothing in the directory. Without remove_temporaries_at_exit()
// the two named temporaries would stay.
TEST(AtomicFile, NamedTemporariesAreRemovedByAnExitingHandler) {
  TempDir dir;
  force_named_temporaries_for_testing(true);
  {
    auto file = AtomicFile::create(dir.path + "/kept.json", nullptr);
    ASSERT_NE(file, nullptr);
    EXPECT_EQ(dir.entries().size(), 1u);  // the named temporary
    write_all(file->fd(), "whole");
    ASSERT_TRUE(file->commit(nullptr));
    EXPECT_EQ(dir.entries(), std::vector<std::string>{"kept.json"});
  }
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto a = AtomicFile::create(dir.path + "/a.json", nullptr);
    auto b = AtomicFile::create(dir.path + "/b.json", nullptr);
    if (a && b && TempDir::list(dir.path).size() == 3) {
      (void)!write(a->fd(), "partial", 7);
      remove_temporaries_at_exit();
      _exit(0);
    }
    _exit(1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  force_named_temporaries_for_testing(false);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child did not see its two named temporaries";
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"kept.json"});
  EXPECT_EQ(read_file(dir.path + "/kept.json"), "whole");
}

}  // namespace
}  // namespace epprof::io
