#!/usr/bin/env bash
# ci-gate.sh: a CI step that evaluates a system's outputs with judgeapp over HTTP and passes or fails on the
# release gate. It uploads the outputs (and the test set and rubric, or names stored versions of them),
# waits for the run, prints the Markdown summary, and exits
#   0  the gate passed
#   1  the gate blocked (a low mean, a regression, an invalid run, a calibration lock, a lead's block)
#   2  anything else: bad input, a bad token, the server unreachable, a run that failed (its judge out of
#      reach, say) or was cancelled, a run not finished in time
# Needs bash, curl and python3 (its standard library only). See docs/api.md.
#
#   JUDGEAPP_URL=https://judge.example.com JUDGEAPP_TOKEN=ja_… scripts/ci-gate.sh \
#       --testset evals/support/testset.jsonl --rubric evals/support/rubric.toml \
#       --outputs build/outputs.jsonl --judge small-a --system support-bot
set -euo pipefail

usage() {
  cat <<'EOF'
usage: ci-gate.sh (--testset F | --testset-version HASH) (--rubric R | --rubric-version HASH) [options]

  --url URL               the app's address (default $JUDGEAPP_URL); the token is read from $JUDGEAPP_TOKEN
  --testset F             test set, JSONL or CSV (id, input, and output unless --outputs gives them)
  --testset-version HASH  a stored test set instead: its content hash (12+ hex digits) or NAME@HASH
  --outputs F             the replies to judge, JSONL {"id", "output"}, one for every case
  --rubric R              rubric, TOML or JSON
  --rubric-version HASH   a stored rubric instead
  --judge J               the judge (default: the app's default judge)
  --system S              the system under test: its last release is the baseline
  --threshold X           the mean the gate requires (default 3.5)
  --baseline-mean M       the mean not to fall below (default: the system's last release)
  --baseline-run RUN_ID   take the baseline from this earlier run
  --title T               a title for the run's page
  --idempotency-key K     a retry with the same key gets the same run back (default: from the CI's run
                          id: $GITHUB_RUN_ID/$GITHUB_JOB/$GITHUB_RUN_ATTEMPT or $CI_JOB_ID, else random)
  --markdown OUT.md       also write the summary here ($GITHUB_STEP_SUMMARY gets it too, when set)
  --report OUT.json       also write the whole JSON report here
  --poll SECONDS          how often to ask for the run's status (default 5)
  --timeout SECONDS       give up (exit 2) when the run has not finished by then (default 3600)
EOF
}

die() { echo "ci-gate: $*" >&2; exit 2; }

url="${JUDGEAPP_URL:-}"
fields=()
markdown_out="" report_out="" poll=5 timeout=3600 key=""
while [ $# -gt 0 ]; do
  option="$1"
  case "$option" in
    -h|--help) usage; exit 0 ;;
  esac
  [ $# -ge 2 ] || { usage >&2; die "$option needs a value"; }
  value="$2"
  shift 2
  case "$option" in
    --url) url="$value" ;;
    --testset|--outputs|--rubric)
      [ -f "$value" ] || die "$option $value: no such file"
      fields+=(-F "${option#--}=@\"$value\"") ;;
    --testset-version|--rubric-version|--judge|--system|--threshold|--baseline-mean|--baseline-run|--title)
      name="${option#--}"
      fields+=(--form-string "${name//-/_}=$value") ;;
    --idempotency-key) key="$value" ;;
    --markdown) markdown_out="$value" ;;
    --report) report_out="$value" ;;
    --poll) poll="$value" ;;
    --timeout) timeout="$value" ;;
    *) usage >&2; die "unknown option $option" ;;
  esac
done
[ -n "$url" ] || die "no address: pass --url or set JUDGEAPP_URL"
[ -n "${JUDGEAPP_TOKEN:-}" ] || die "no token: set JUDGEAPP_TOKEN (make one on the app's /profile/ page or with manage.py api-token create USER)"
[[ "$poll" =~ ^[0-9]+([.][0-9]+)?$ && "$timeout" =~ ^[0-9]+$ ]] || die "--poll and --timeout take a number of seconds"
command -v curl >/dev/null || die "curl is not installed"
command -v python3 >/dev/null || die "python3 is not installed"
if [ -z "$key" ]; then
  if [ -n "${GITHUB_RUN_ID:-}" ]; then
    key="github-${GITHUB_REPOSITORY:-repo}-${GITHUB_RUN_ID}-${GITHUB_JOB:-job}-${GITHUB_RUN_ATTEMPT:-1}"
  elif [ -n "${CI_JOB_ID:-}" ]; then
    key="gitlab-${CI_PROJECT_ID:-project}-${CI_JOB_ID}"
  else
    key="ci-gate-$(python3 -c 'import uuid; print(uuid.uuid4())')"
  fi
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The token goes to curl in a header file, never on its command line (where `ps` would show it).
( umask 077; printf 'Authorization: Bearer %s\n' "$JUDGEAPP_TOKEN" > "$work/auth" )
api="${url%/}/api/v1"

# request METHOD URL OUT [curl args…]: the HTTP status on stdout, the body in OUT; 000 when unreachable.
request() {
  local method="$1" target="$2" out="$3" code
  shift 3
  # A POST retried after a lost answer is safe: the Idempotency-Key gets the same run back.
  code="$(curl --silent --show-error --max-time 120 --retry 3 --retry-connrefused --retry-delay 2 \
       --header "@$work/auth" --request "$method" --output "$out" --write-out '%{http_code}' "$@" "$target")" || true
  echo "${code:-000}"
}

# json FILE EXPR: a value from a JSON file (EXPR is Python over `d`); empty when it is not JSON.
json() {
  python3 - "$1" "$2" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1], encoding="utf-8"))
except (OSError, ValueError):
    sys.exit(0)
value = eval(sys.argv[2], {"d": d})
print(value if isinstance(value, str) else json.dumps(value))
PY
}

api_error() {  # status file: one line from an error answer
  local detail
  detail="$(json "$2" 'd.get("detail") or d.get("error") or ""' 2>/dev/null || true)"
  if [ "$1" = "000" ]; then
    die "cannot reach $api"
  fi
  die "HTTP $1: ${detail:-$(head -c 300 "$2" 2>/dev/null)}"
}

status="$(request POST "$api/runs/pointwise" "$work/run.json" --header "Idempotency-Key: $key" "${fields[@]}")"
case "$status" in
  200|201) ;;
  *) api_error "$status" "$work/run.json" ;;
esac
run_id="$(json "$work/run.json" 'd["run_id"]')"
page="$(json "$work/run.json" 'd["urls"]["page"]')"
[ -n "$run_id" ] || die "the answer to starting the run has no run_id"
if [ "$status" = "200" ]; then
  echo "ci-gate: run $run_id (already started under Idempotency-Key $key): $page" >&2
else
  echo "ci-gate: run $run_id started: $page" >&2
fi

deadline=$(( $(date +%s) + timeout ))
last=""
while :; do
  status="$(request GET "$api/runs/$run_id" "$work/status.json")"
  [ "$status" = "200" ] || api_error "$status" "$work/status.json"
  if [ "$(json "$work/status.json" 'd["finished"]')" = "true" ]; then
    break
  fi
  now="$(json "$work/status.json" '"%s %d/%d" % (d["status"], d["progress"]["done_units"] + d["progress"]["failed_units"], d["progress"]["total_units"])')"
  if [ "$now" != "$last" ]; then
    echo "ci-gate: run $run_id: $now" >&2
    last="$now"
  fi
  [ "$(date +%s)" -lt "$deadline" ] || die "run $run_id has not finished after ${timeout}s; see $page"
  sleep "$poll"
done
final="$(json "$work/status.json" 'd["status"]')"
echo "ci-gate: run $run_id: $final" >&2

status="$(request GET "$api/runs/$run_id/summary" "$work/summary.md")"
[ "$status" = "200" ] || api_error "$status" "$work/summary.md"
cat "$work/summary.md"
[ -z "$markdown_out" ] || cp "$work/summary.md" "$markdown_out"
[ -z "${GITHUB_STEP_SUMMARY:-}" ] || cat "$work/summary.md" >> "$GITHUB_STEP_SUMMARY"
if [ -n "$report_out" ]; then
  status="$(request GET "$api/runs/$run_id/report" "$work/report.json")"
  [ "$status" = "200" ] || api_error "$status" "$work/report.json"
  cp "$work/report.json" "$report_out"
fi

# A run that failed (a judge's server out of reach, a refused key) or was cancelled decided nothing: exit 2, as
# `manage.py evaluate` does (CONTRACT §3), not 1 ("blocked").
case "$final" in
  failed|cancelled) die "run $run_id $final: $(json "$work/status.json" 'd["error"]')" ;;
esac

status="$(request GET "$api/runs/$run_id/gate" "$work/gate.json")"
[ "$status" = "200" ] || api_error "$status" "$work/gate.json"
if [ "$(json "$work/gate.json" 'd["passed"]')" = "true" ]; then
  echo "GATE: PASSED · run $run_id" >&2
  exit 0
fi
echo "GATE: BLOCKED · run $run_id · $(json "$work/gate.json" '"; ".join(d["reasons"])')" >&2
exit 1
