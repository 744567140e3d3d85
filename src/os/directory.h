// Directory listings of /sys and /proc: the entries of one directory, and the threads of this process
// (/proc/self/task). Like the rest of os/, this is the one place Sentinel reads directories; the open and
// the close go through the table of os/os.h (open_read, close), so the fault injector can fail a listing
// as it fails a file read. The entries are read with getdents64(2) into a buffer on the stack: nothing
// here allocates, so a caller that must not allocate may list a directory (its callback then must not
// either).
//
// Contract: the kernel's convention, as os.h's. 0 when the listing was read to its end, -1 with errno set
// when the directory could not be opened or read (entries seen before a read failed have been visited).
// "." and ".." are never visited; the order is the kernel's (callers that need an order sort).
//
// Thread safety: free functions over the caller's callback and context; safe from any thread, and as
// async-signal-safe as open(2), getdents64(2) and the callback are. The callback may throw: the
// directory is closed on the way out.
#pragma once

#include <sys/types.h>

#include <type_traits>

namespace sentinel::os {

using DirectoryEntryFn = void (*)(const char* name, void* ctx);
using ThreadFn = void (*)(pid_t tid, void* ctx);

// Calls visit(name, ctx) for every entry of `path`.
int list_directory(const char* path, DirectoryEntryFn visit, void* ctx);
// Calls visit(tid, ctx) for every thread of this process now.
int for_each_thread(ThreadFn visit, void* ctx);

// The same with a callable (a lambda that captures), called as visit(name) / visit(tid).
template <typename Visit>
int list_directory(const char* path, Visit&& visit) {
  using V = std::remove_reference_t<Visit>;
  return list_directory(path, [](const char* name, void* ctx) { (*static_cast<V*>(ctx))(name); },
                        const_cast<std::remove_const_t<V>*>(&visit));
}
template <typename Visit>
int for_each_thread(Visit&& visit) {
  using V = std::remove_reference_t<Visit>;
  return for_each_thread([](pid_t tid, void* ctx) { (*static_cast<V*>(ctx))(tid); },
                         const_cast<std::remove_const_t<V>*>(&visit));
}

}  // namespace sentinel::os
