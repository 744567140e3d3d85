// Shared helpers for the tests that run inside the two-node guest (scripts/numa-guest.sh).
// Inside the guest (SENTINEL_IN_GUEST=1) a missing second node is a failure; on the host the tests
// skip, so the binary is harmless in a plain ctest run.
#pragma once

#include <gtest/gtest.h>
#include <numa.h>

#include <cstdlib>

#include "../migrate/test_util.h"

#define SENTINEL_REQUIRE_TWO_NODES()                                                        \
  do {                                                                                      \
    if (!sentinel::migrate::testing::have_two_nodes()) {                                    \
      if (std::getenv("SENTINEL_IN_GUEST") != nullptr) FAIL() << "guest without node 1?";   \
      GTEST_SKIP() << "needs two memory nodes: ctest -L guest (scripts/numa-guest.sh)";     \
    }                                                                                       \
  } while (0)
