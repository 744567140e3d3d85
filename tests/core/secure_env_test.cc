// A setuid program (secure execution, AT_SECURE) must not read Sentinel's variables: whoever starts it
// could otherwise choose where Sentinel writes files inside it. Runs a setuid-root copy of
// secure_env_probe as an unprivileged user; needs root to create that copy (skipped otherwise).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

class SecureEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to make a setuid-root copy of the probe";
    if (access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "needs setpriv (util-linux)";
    // Next to the build tree, not /tmp: the copy must be on a file system mounted without nosuid.
    dir_ = std::string(SENTINEL_PROBE_DIR) + "/secure-env-XXXXXX";
    ASSERT_NE(mkdtemp(dir_.data()), nullptr);
    ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
    probe_ = dir_ + "/probe";
    ASSERT_EQ(std::system(("cp '" SENTINEL_SECURE_ENV_PROBE "' '" + probe_ + "'").c_str()), 0);
  }
  void TearDown() override {
    if (!dir_.empty()) std::system(("rm -rf '" + dir_ + "'").c_str());
  }

  // Runs the probe as nobody with hostile SENTINEL_* values; returns its output line.
  std::string run_as_nobody() const {
    const std::string command =
        "env SENTINEL_MODE=passthrough SENTINEL_LOG_FILE=/etc/attacker SENTINEL_TYPO=1 "
        "setpriv --reuid=65534 --regid=65534 --clear-groups '" + probe_ + "'";
    FILE* p = popen(command.c_str(), "r");
    char line[1024] = {};
    if (p == nullptr) return "popen failed";
    if (fgets(line, sizeof line, p) == nullptr) line[0] = '\0';
    pclose(p);
    return line;
  }

  std::string dir_;
  std::string probe_;
};

TEST_F(SecureEnvTest, AnOrdinaryProgramReadsTheVariables) {
  EXPECT_EQ(run_as_nobody(), "secure=0 mode=passthrough log_file=/etc/attacker unknown=1\n");
}

TEST_F(SecureEnvTest, ASetuidProgramIgnoresEverySentinelVariable) {
  ASSERT_EQ(chown(probe_.c_str(), 0, 0), 0);
  ASSERT_EQ(chmod(probe_.c_str(), 04755), 0);
  EXPECT_EQ(run_as_nobody(), "secure=1 mode=track log_file= unknown=0\n");
}

}  // namespace
