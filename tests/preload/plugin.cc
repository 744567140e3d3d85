// A library loaded with dlopen after the program started: it allocates objects in its constructor and
// hands them across the library boundary.
#include <cstdlib>
#include <cstring>

namespace {
void* g_made_at_load = nullptr;
__attribute__((constructor)) void load() {
  g_made_at_load = std::malloc(1 << 20);
  std::memset(g_made_at_load, 0x5a, 1 << 20);
}
}  // namespace

extern "C" void* plugin_buffer() { return g_made_at_load; }
extern "C" void* plugin_make(size_t n) { return std::calloc(1, n); }
extern "C" void plugin_free(void* p) { std::free(p); }
