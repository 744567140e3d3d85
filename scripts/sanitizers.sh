#!/usr/bin/env bash
# The sanitizer stage of CI (scripts/test.sh runs it unless SENTINEL_SANITIZERS=0):
#   - AddressSanitizer + UndefinedBehaviorSanitizer over the unit suites (not the preload's hazard suite:
#     ASan and Sentinel both replace malloc, and a preloaded ASan-built libsentinel.so crashes at start
#     because the ASan runtime is not first in the library list);
#   - ThreadSanitizer over the suites with threads racing on shared state: the migration engine, the
#     fast-memory budget (placer) and the step detector.
# Only those test targets are built (not the tree, not the PyTorch tests), in build-asan and build-tsan
# next to the main build directory. Any sanitizer report fails the stage (halt_on_error).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${SENTINEL_BUILD_DIR:-$root/build}"
jobs="$(nproc)"

configure() {  # configure DIR FLAGS
  cmake -S "$root" -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS="$2" -DCMAKE_C_FLAGS="$2" \
    -DCMAKE_EXE_LINKER_FLAGS="$2" -DCMAKE_SHARED_LINKER_FLAGS="$2" -DCMAKE_MODULE_LINKER_FLAGS="$2" \
    -DSENTINEL_BUILD_BENCH=OFF -DSENTINEL_GUEST_TESTS=OFF >/dev/null
}

asan_dir="$build-asan"
asan_flags="-O1 -g1 -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
asan_suites=(core_test profile_io_test profile_builder_test plan_tests manage_tests sentinel_place_tests
             sentinel_topo_tests sampler_test sentinel_migrate_tests os_test)
echo "== AddressSanitizer + UBSan: unit suites"
configure "$asan_dir" "$asan_flags"
cmake --build "$asan_dir" -j "$jobs" --target "${asan_suites[@]}"
# handle_segv=0: the sampler's death tests fault on purpose and check that the fault reaches their own
# handlers, which ASan's SEGV handler would take first.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:strict_string_checks=1:handle_segv=0:allow_user_segv_handler=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
for suite in "${asan_suites[@]}"; do
  exe="$(find "$asan_dir/tests" -type f -name "$suite" -perm -u+x | head -n 1)"
  echo "-- $suite"
  "$exe" --gtest_brief=1
done

tsan_dir="$build-tsan"
tsan_flags="-O1 -g1 -fsanitize=thread -fno-omit-frame-pointer"
echo "== ThreadSanitizer: migration engine, budget and step detector"
configure "$tsan_dir" "$tsan_flags"
cmake --build "$tsan_dir" -j "$jobs" --target sentinel_migrate_tests sentinel_place_tests core_test
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
"$tsan_dir/tests/migrate/sentinel_migrate_tests" --gtest_brief=1
"$tsan_dir/tests/place/sentinel_place_tests" --gtest_brief=1
"$tsan_dir/tests/core/core_test" --gtest_brief=1 --gtest_filter='StepDetector*'
echo "== sanitizers: no reports"
