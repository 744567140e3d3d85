#include "core/output_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/temp_dir.h"

namespace sentinel {
namespace {

class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(tmp_.ok()); }

  std::string at(const std::string& name) const { return dir_ + "/" + name; }
  static std::string slurp(const std::string& path) {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }
  static void spit(const std::string& path, const std::string& text) { std::ofstream(path) << text; }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    DIR* d = opendir(dir_.c_str());
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    closedir(d);
    return names;
  }
  static bool is_symlink(const std::string& path) {
    struct stat st;
    return lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
  }

  testing::TempDir tmp_{"sentinel-output-file"};
  const std::string& dir_ = tmp_.path();
};

TEST_F(OutputFileTest, WritesTheWholeFileOwnerOnlyAndLeavesNoTemporary) {
  const Status written = write_file_replacing(at("stats.json"), "{\"a\":1}\n");
  ASSERT_TRUE(written.is_ok()) << written.message();
  EXPECT_EQ(slurp(at("stats.json")), "{\"a\":1}\n");
  struct stat st;
  ASSERT_EQ(stat(at("stats.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(entries(), std::vector<std::string>{"stats.json"});
}

TEST_F(OutputFileTest, ReplacesAnExistingFileWhole) {
  spit(at("p.json"), std::string(10000, 'x'));
  const Status written = write_file_replacing(at("p.json"), "short");
  ASSERT_TRUE(written.is_ok()) << written.message();
  EXPECT_EQ(slurp(at("p.json")), "short");
}

TEST_F(OutputFileTest, ASymlinkPlantedAtTheTargetIsReplacedNotWrittenThrough) {
  spit(at("victim"), "precious");
  ASSERT_EQ(symlink(at("victim").c_str(), at("stats.json").c_str()), 0);
  const Status written = write_file_replacing(at("stats.json"), "data");
  ASSERT_TRUE(written.is_ok()) << written.message();
  EXPECT_EQ(slurp(at("victim")), "precious");
  EXPECT_FALSE(is_symlink(at("stats.json")));
  EXPECT_EQ(slurp(at("stats.json")), "data");
}

TEST_F(OutputFileTest, SymlinksPlantedAtPredictableTemporaryNamesAreNeverFollowed) {
  spit(at("victim"), "precious");
  // Every name an older writer (or a guess) would use: path.tmp, path~, .path.tmp.
  for (const char* name : {"t.json.tmp", "t.json~", ".t.json.tmp", ".t.json.0000000000000000.tmp"}) {
    ASSERT_EQ(symlink(at("victim").c_str(), at(name).c_str()), 0);
  }
  for (int i = 0; i < 20; ++i) {
    const Status written = write_file_replacing(at("t.json"), "round " + std::to_string(i));
    ASSERT_TRUE(written.is_ok()) << written.message();
  }
  EXPECT_EQ(slurp(at("victim")), "precious");
  EXPECT_EQ(slurp(at("t.json")), "round 19");
  EXPECT_TRUE(is_symlink(at("t.json.tmp")));
}

// Whether the test directory's file system has unnamed files (O_TMPFILE); probed on its own, not through
// OutputFile.
bool has_unnamed_files(const std::string& dir) {
  const int fd = open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  close(fd);
  return true;
}

TEST_F(OutputFileTest, TheTemporaryIsUnnamedWhileWrittenAndNamedInTheTargetDirectoryAtCommit) {
  ASSERT_TRUE(has_unnamed_files(dir_)) << dir_ << ": no O_TMPFILE here; the unnamed path is not tested";
  OutputFile f;
  const Status opened = f.open(at("timeline.jsonl"));
  ASSERT_TRUE(opened.is_ok()) << opened.message();
  EXPECT_TRUE(f.is_unnamed());
  EXPECT_TRUE(f.write("line\n"));
  EXPECT_EQ(entries(), std::vector<std::string>{});  // no name in the directory until commit
  const Status committed = f.commit();
  ASSERT_TRUE(committed.is_ok()) << committed.message();
  EXPECT_EQ(slurp(at("timeline.jsonl")), "line\n");
  EXPECT_EQ(entries(), std::vector<std::string>{"timeline.jsonl"});
  struct stat st;
  ASSERT_EQ(stat(at("timeline.jsonl").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(OutputFileTest, AnAbandonedFileLeavesTheOldContentsAndNoTemporary) {
  spit(at("plan.json"), "old plan");
  {
    OutputFile f;
    const Status opened = f.open(at("plan.json"));
    ASSERT_TRUE(opened.is_ok()) << opened.message();
    f.write("half a new pl");
  }  // destroyed without commit
  EXPECT_EQ(slurp(at("plan.json")), "old plan");
  EXPECT_EQ(entries(), std::vector<std::string>{"plan.json"});
}

// A process killed mid-write: the target holds the old file (or nothing), never a truncated one.
TEST_F(OutputFileTest, AKillMidWriteLeavesTheOldFileOrNothing) {
  spit(at("old.json"), "complete old contents");
  for (const std::string name : {"old.json", "new.json"}) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      OutputFile f;
      if (!f.open(at(name)).is_ok()) _exit(2);
      f.write(std::string(1 << 20, 'y'));
      raise(SIGKILL);  // between write and commit
      _exit(3);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << status;
  }
  EXPECT_EQ(slurp(at("old.json")), "complete old contents");
  EXPECT_EQ(access(at("new.json").c_str(), F_OK), -1);
  // Where the file system has unnamed files, not even a hidden temporary is left (before: one per kill).
  if (has_unnamed_files(dir_)) {
    EXPECT_EQ(entries(), std::vector<std::string>{"old.json"});
  }
}

TEST_F(OutputFileTest, AMissingDirectoryIsAnErrorNamingThePath) {
  const Status missing = write_file_replacing(at("no/such/dir/x.json"), "x");
  EXPECT_FALSE(missing.is_ok());
  EXPECT_NE(std::string(missing.message()).find("no/such/dir/x.json"), std::string::npos) << missing.message();
  EXPECT_FALSE(write_file_replacing("", "x").is_ok());
}

TEST_F(OutputFileTest, AStreamAppearsWholeOnlyAtCommit) {
  spit(at("timeline.jsonl"), "previous run\n");
  OutputFileStream out;
  const Status opened = out.open(at("timeline.jsonl"));
  ASSERT_TRUE(opened.is_ok()) << opened.message();
  std::string expected;
  for (int i = 0; i < 20000; ++i) {  // several times the stream's buffer
    out << "{\"line\":" << i << "}\n";
    expected += "{\"line\":" + std::to_string(i) + "}\n";
  }
  out.flush();
  EXPECT_EQ(slurp(at("timeline.jsonl")), "previous run\n");
  const Status committed = out.commit();
  ASSERT_TRUE(committed.is_ok()) << committed.message();
  EXPECT_EQ(slurp(at("timeline.jsonl")), expected);
  EXPECT_EQ(entries(), std::vector<std::string>{"timeline.jsonl"});
}

TEST_F(OutputFileTest, AStreamThatCannotOpenIsBadAndDoesNotCommit) {
  OutputFileStream out;
  EXPECT_FALSE(out.open(at("missing/t.jsonl")).is_ok());
  EXPECT_TRUE(out.bad());
  out << "ignored";
  EXPECT_FALSE(out.commit().is_ok());
}

TEST_F(OutputFileTest, AppendRefusesASymlinkAndNeverTruncates) {
  spit(at("victim"), "precious");
  ASSERT_EQ(symlink(at("victim").c_str(), at("sentinel.log").c_str()), 0);
  int refused = 0;
  const Status symlinked = open_append_no_follow(at("sentinel.log"), &refused);
  EXPECT_FALSE(symlinked.is_ok());
  EXPECT_EQ(refused, -1);
  EXPECT_NE(std::string(symlinked.message()).find("sentinel.log"), std::string::npos) << symlinked.message();
  EXPECT_EQ(slurp(at("victim")), "precious");

  spit(at("run.log"), "first run\n");
  int fd = -1;
  const Status appended = open_append_no_follow(at("run.log"), &fd);
  ASSERT_TRUE(appended.is_ok()) << appended.message();
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "second run\n", 11), 11);
  close(fd);
  EXPECT_EQ(slurp(at("run.log")), "first run\nsecond run\n");

  int fresh = -1;
  const Status created = open_append_no_follow(at("new.log"), &fresh);
  ASSERT_TRUE(created.is_ok()) << created.message();
  ASSERT_GE(fresh, 0);
  close(fresh);
  struct stat st;
  ASSERT_EQ(stat(at("new.log").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

}  // namespace
}  // namespace sentinel
