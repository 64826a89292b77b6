# Sourced by scripts/test.sh: print_failed_test_tails BUILD_DIR [LINES] prints, for each failed test in ctest's
# LastTest.log, its first 12 lines that name a failure or an error and its last LINES (default 12) lines.
# ctest --output-on-failure prints a failed test's output where the test ended, often thousands of lines above
# the summary, out of view of a CI log read from its tail; this puts the gist right above the timing table.
print_failed_test_tails() {
  local log="$1/Testing/Temporary/LastTest.log" lines=${2:-12}
  [ -f "$log" ] || return 0
  echo "[test] each failed test's failure lines and last $lines lines (from $log):"
  awk -v keep="$lines" '
    /^[0-9]+\/[0-9]+ Testing: / { name = substr($0, index($0, ": ") + 2); n = 0; in_output = 0; ended = 0; next }
    /^Output:$/ { in_output = 1; getline; next }  # skips the separator line under "Output:"
    /^<end of output>$/ { in_output = 0; ended = 1; next }
    in_output { out[n++] = $0; next }
    ended && /^Test Fail/ {  # "Test Failed." (ctest writes it for failures and time-outs alike)
      printf "[test] ---- %s (%s) ----\n", name, $0
      shown = 0
      for (i = 0; i < n && shown < 12; i++) if (out[i] ~ /FAIL|Failure|[Ee]rror:|[Tt]imeout/) { print out[i]; shown++ }
      print "[test] ...last lines:"
      for (i = (n > keep ? n - keep : 0); i < n; i++) print out[i]
      ended = 0
    }' "$log"
}
