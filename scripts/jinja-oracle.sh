#!/usr/bin/env bash
# Checks the chat-template engine against Jinja2 itself (the true reference; used here as a test oracle only):
#  1. tests/jinja_oracle/cases.json (the construct cases tests/unit/jinja_test.cc renders) is what Jinja2 3.1,
#     configured as transformers configures it, gives today (regenerated and compared);
#  2. arach-run chat-template prints every case of ../shared/fixtures/chat byte for byte (and exits non-zero
#     with the template's message for the error cases), going through the command line tool.
# Exits 77 (skipped) without python3-jinja2.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
fixtures=${ARACH_FIXTURES:-../shared/fixtures}
python=""
for candidate in /usr/bin/python3 python3; do
  if command -v "$candidate" >/dev/null && "$candidate" -c "import jinja2" 2>/dev/null; then python=$candidate; break; fi
done
[ -n "$python" ] || { echo "[jinja-oracle] python3-jinja2 not found: skipped"; exit 77; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
"$python" tests/jinja_oracle/make_cases.py "$scratch/cases.json"
if ! diff -q "$scratch/cases.json" tests/jinja_oracle/cases.json >/dev/null; then
  echo "[jinja-oracle] FAIL: Jinja2 renders tests/jinja_oracle/cases.json differently now:"
  diff "$scratch/cases.json" tests/jinja_oracle/cases.json | head -20
  exit 1
fi
echo "[jinja-oracle] tests/jinja_oracle/cases.json matches Jinja2 $("$python" -c 'import jinja2; print(jinja2.__version__)')"
if [ ! -f "$fixtures/chat/cases.json" ]; then
  echo "[jinja-oracle] no fixtures at $fixtures: the arach-run check is skipped"
  exit 0
fi
"$python" - "$build/tools/arach-run" "$fixtures/chat" "$scratch" <<'PY'
import json, subprocess, sys
run, chat, scratch = sys.argv[1:4]
templates = json.load(open(f"{chat}/templates.json"))
fixture = json.load(open(f"{chat}/cases.json"))
failures = 0
for i, case in enumerate(fixture["cases"]):
    spec = templates[case["template"]]
    config = {"chat_template": spec["template"], **{k: v for k, v in spec["tokens"].items() if v is not None}}
    json.dump(config, open(f"{scratch}/tokenizer_config.json", "w"))
    json.dump(fixture["conversations"][case["conversation"]], open(f"{scratch}/conversation.json", "w"), ensure_ascii=False)
    args = [run, "chat-template", f"--tokenizer_config={scratch}/tokenizer_config.json", f"--conversation={scratch}/conversation.json"]
    if case["add_generation_prompt"]:
        args.append("--add_generation_prompt")
    if case["extra"]:
        args.append("--extra=" + json.dumps(case["extra"]))
    result = subprocess.run(args, capture_output=True)
    label = f'{case["template"]} / {case["conversation"]} / agp={case["add_generation_prompt"]} / extra={case["extra"]}'
    if "error" in case:
        ok = result.returncode != 0 and case["error"] in result.stderr.decode()
    else:
        ok = result.returncode == 0 and result.stdout.decode() == case["text"]
    if not ok:
        failures += 1
        print(f"[jinja-oracle] FAIL {label}: rc={result.returncode} {result.stderr.decode()[:200]}")
print(f"[jinja-oracle] arach-run chat-template: {len(fixture['cases']) - failures}/{len(fixture['cases'])} fixture cases exact")
sys.exit(1 if failures else 0)
PY
