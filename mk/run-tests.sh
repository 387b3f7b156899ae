#!/usr/bin/env bash
# make test's driver: runs each test step (a make target) with its output in
# build/test-logs/STEP.log, prints one line a step, the log's tail when a
# step fails, and ends with one summary line. Every step runs even after a
# failure, so one run reports every broken step. `make test-verbose` runs the
# same steps with their whole output.
set -uo pipefail

logs=build/test-logs
mkdir -p "$logs"
passed=0 failed=0 failures=()
start=$SECONDS

fmt_time() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

for step in "$@"; do
  log="$logs/$step.log"
  t0=$SECONDS
  if make --no-print-directory "$step" >"$log" 2>&1; then
    passed=$((passed + 1))
    printf '  ok    %-22s %s\n' "$step" "$(fmt_time $((SECONDS - t0)))"
  else
    failed=$((failed + 1))
    failures+=("$step")
    printf '  FAIL  %-22s %s  (log: %s)\n' "$step" "$(fmt_time $((SECONDS - t0)))" "$log"
    echo "---- last 200 lines of $log ----"
    tail -n 200 "$log"
    echo "---- end of $log ----"
  fi
done

echo "make test took $(fmt_time $((SECONDS - start)))${failures:+; failed: ${failures[*]}}"
echo "test: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
