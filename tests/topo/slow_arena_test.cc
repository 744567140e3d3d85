#include "topo/slow_arena.h"

#include <gtest/gtest.h>
#include <numa.h>
#include <numaif.h>

#include <cstring>
#include <vector>

namespace sentinel::topo {
namespace {

// The node each page of [p, p + len) is on, via move_pages in query mode.
std::vector<int> page_nodes(void* p, size_t len) {
  const size_t page = 4096;
  uintptr_t start = reinterpret_cast<uintptr_t>(p) & ~(page - 1);
  uintptr_t end = reinterpret_cast<uintptr_t>(p) + len;
  std::vector<void*> pages;
  for (uintptr_t a = start; a < end; a += page) pages.push_back(reinterpret_cast<void*>(a));
  std::vector<int> status(pages.size(), -1);
  EXPECT_EQ(move_pages(0, pages.size(), pages.data(), nullptr, status.data(), 0), 0);
  return status;
}

void check_arena_on(int node) {
  std::string error;
  auto arena = SlowArena::create(node, 8 << 20, &error);
  ASSERT_NE(arena, nullptr) << error;
  EXPECT_EQ(arena->node(), node);
  EXPECT_EQ(arena->capacity(), size_t{8} << 20);
  std::vector<char*> blocks;
  for (int i = 0; i < 64; ++i) {
    char* p = static_cast<char*>(arena->alloc(4096 + i * 100));
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(arena->owns(p));
    EXPECT_GE(arena->usable_size(p), size_t(4096 + i * 100));
    std::memset(p, i, 4096 + i * 100);
    blocks.push_back(p);
  }
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(blocks[i][0], static_cast<char>(i));
    EXPECT_EQ(blocks[i][4095 + i * 100], static_cast<char>(i));
    for (int n : page_nodes(blocks[i], 4096 + i * 100)) EXPECT_EQ(n, node);
  }
  int stack_var = 0;
  EXPECT_FALSE(arena->owns(&stack_var));
  for (char* p : blocks) arena->free(p);
  arena->free(nullptr);
}

TEST(SlowArena, AllocatesOnNodeZero) {
  if (numa_available() < 0) GTEST_SKIP() << "no NUMA support";
  check_arena_on(0);
}

TEST(SlowArena, AllocatesOnTheSlowNode) {
  if (numa_available() < 0 || numa_max_node() < 1 || numa_node_size64(1, nullptr) <= 0)
    GTEST_SKIP() << "needs a second memory node (run in the guest: ctest -L guest)";
  check_arena_on(1);
}

TEST(SlowArena, RejectsMissingNode) {
  std::string error;
  EXPECT_EQ(SlowArena::create(numa_max_node() + 1, 1 << 20, &error), nullptr);
  EXPECT_NE(error.find("does not exist"), std::string::npos) << error;
  EXPECT_EQ(SlowArena::create(-1, 1 << 20, &error), nullptr);
}

TEST(SlowArena, ExhaustionReturnsNull) {
  if (numa_available() < 0) GTEST_SKIP() << "no NUMA support";
  std::string error;
  auto arena = SlowArena::create(0, 2 << 20, &error);
  ASSERT_NE(arena, nullptr) << error;
  EXPECT_EQ(arena->alloc(64 << 20), nullptr);
}

}  // namespace
}  // namespace sentinel::topo
