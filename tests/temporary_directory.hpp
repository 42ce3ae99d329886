// A directory of the test's own under the system's temporary directory, removed with all it
// holds when the object goes. Every file a test writes, and every file a program it starts
// writes (scenarios, snapshots, standard error, caches), goes into one of these, so that a run
// of the tests leaves the temporary directory as it found it.
//
//   TemporaryDirectory here;                    // <temporary directory>/fp8sm-test-<pid>-XXXXXX
//   write(here.file("a.scn"), ...);             // a path inside it
//
// WithTemporaryDirectory is a gtest fixture whose every test has one (temporary_).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <system_error>

namespace fp8sm::test_support {

class TemporaryDirectory {
 public:
  TemporaryDirectory() : owner_(::getpid()) {
    // mkdtemp makes the directory, with a name no other process or object has.
    std::string pattern =
        (std::filesystem::temp_directory_path() / ("fp8sm-test-" + std::to_string(owner_) + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::system_error(errno, std::generic_category(), "cannot make a directory like " + pattern);
    }
    path_ = pattern;
  }

  // Removed by the process that made it only: a child that forked and exits leaves it to its
  // parent.
  ~TemporaryDirectory() {
    if (::getpid() != owner_) return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }

  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string string() const { return path_.string(); }
  // The path of `name` inside it (nothing is made).
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  pid_t owner_;
  std::filesystem::path path_;
};

// A fixture whose every test has a directory of its own, removed after it.
class WithTemporaryDirectory : public ::testing::Test {
 protected:
  TemporaryDirectory temporary_;
};

}  // namespace fp8sm::test_support
