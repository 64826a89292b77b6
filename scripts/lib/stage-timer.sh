# Sourced by the CI scripts: times each stage and prints one table at the end of the run.
#   stage NAME CMD...   runs CMD, records NAME, its seconds and its exit status in $ARACH_STAGE_LOG
#                       (shared with the scripts a stage calls, so nested stages are recorded too) and
#                       returns CMD's status.
#   print_stage_table   prints the table and a one-line summary (called from an EXIT trap by the
#                       outermost script, so a failed run shows where its time went as well).
# The first script that sources this file owns the log; scripts it calls append to the same one.
if [ -z "${ARACH_STAGE_LOG:-}" ]; then
  ARACH_STAGE_LOG=$(mktemp)
  ARACH_STAGE_OWNER=$$
  ARACH_STAGE_START=$SECONDS
  export ARACH_STAGE_LOG
fi

stage() {
  local name=$1 t0=$SECONDS rc=0
  shift
  "$@" || rc=$?
  printf '%s\t%d\t%d\n' "$name" $((SECONDS - t0)) "$rc" >> "$ARACH_STAGE_LOG"
  return "$rc"
}

print_stage_table() {
  [ "${ARACH_STAGE_OWNER:-}" = "$$" ] || return 0
  local total=$((SECONDS - ARACH_STAGE_START))
  echo "[timing] stage                              seconds  status"
  awk -F'\t' '{ printf "[timing] %-34s %7d  %s\n", $1, $2, ($3 == 0 ? "ok" : "FAILED(" $3 ")") }' "$ARACH_STAGE_LOG"
  printf '[timing] %-34s %7d\n' total "$total"
  printf '[timing] summary: %s | total %dm%02ds\n' \
    "$(awk -F'\t' '{ printf "%s%s %ds", (NR > 1 ? ", " : ""), $1, $2 }' "$ARACH_STAGE_LOG")" $((total / 60)) $((total % 60))
  rm -f "$ARACH_STAGE_LOG"
}
