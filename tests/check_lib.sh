# Sourced by the shell tests: `check DESCRIPTION COMMAND...` runs COMMAND, prints ok/FAILED with the
# description and counts; `checks_summary` prints the totals and returns non-zero on any failure.
passes=0
failures=0
check() {
  if "${@:2}"; then echo "ok: $1"; passes=$((passes + 1)); return 0; fi
  echo "FAILED: $1"
  failures=$((failures + 1))
  return 1
}
checks_summary() {
  echo "$passes passed, $failures failed"
  [ "$failures" -eq 0 ]
}
