#include "export/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
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

namespace epprof::exporter {
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
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path)) names.push_back(e.path().filename().string());
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

  // Before commit only the hidden temporary exists, next to the target.
  const auto before = dir.entries();
  ASSERT_EQ(before.size(), 1u);
  EXPECT_EQ(before[0].rfind(".trace.json.tmp.", 0), 0u) << before[0];
  EXPECT_EQ(before[0].size(), std::string(".trace.json.tmp.XXXXXX").size());
  EXPECT_EQ(dir.path + "/" + before[0], file->temp_path());
  EXPECT_FALSE(fs::exists(final_path));

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
    EXPECT_EQ(dir.entries().size(), 1u);
  }
  EXPECT_TRUE(dir.entries().empty());
}

TEST(AtomicFile, ConcurrentFilesGetDistinctTemporaries) {
  TempDir dir;
  auto a = AtomicFile::create(dir.path + "/trace.json", nullptr);
  auto b = AtomicFile::create(dir.path + "/trace.json", nullptr);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a->temp_path(), b->temp_path());
  EXPECT_EQ(dir.entries().size(), 2u);
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
  EXPECT_NE(error.find(std::strerror(EISDIR)), std::string::npos) << error;
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

}  // namespace
}  // namespace epprof::exporter
