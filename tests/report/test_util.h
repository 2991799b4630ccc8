// Helpers for the report tests: run the CLI, temporary files, parsing a
// trace with nlohmann-json (independent of the reader under test).
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>

#include "support/test_util.h"

namespace epprof::report_test {

struct CmdResult {
  int rc = -1;
  std::string out;  // stdout and stderr together
};

// The shell's run_shell (tests/support), under this file's names.
inline CmdResult run_cmd(const std::string& cmd) {
  epprof::testing::ShellResult r = epprof::testing::run_shell(cmd);
  return CmdResult{r.exit_code, std::move(r.output)};
}

inline std::string cli() { return EPPROF_CLI_PATH; }

// A fresh directory under /tmp, removed by the destructor.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/epprof_report_test.XXXXXX";
    path_ = mkdtemp(tmpl) ? tmpl : "/tmp";
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

inline nlohmann::json load_json(const std::string& path) { return nlohmann::json::parse(read_file(path)); }

inline void save_json(const std::string& path, const nlohmann::json& j) { write_file(path, j.dump()); }

// Numbers epprof writes as strings ("12"), others as numbers.
inline long long as_int(const nlohmann::json& v) {
  return v.is_string() ? std::stoll(v.get<std::string>()) : v.get<long long>();
}

}  // namespace epprof::report_test
