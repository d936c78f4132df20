#!/usr/bin/env bash
# probegate GitHub Action: run one scan and publish it (docs/github-action.md).
#
# Inputs arrive as PG_* variables (action.yml maps them in runs.env). Every value reaches
# probegate as one argv element of a bash array: never eval'ed, never word-split, never
# pasted into a command string. The `args` input is split by `python -m probegate.github
# split-args` (POSIX shell quoting, nothing expanded). JSON parsing, escaping, outputs, the job
# summary and the annotations are in src/probegate/github.py.
#
# Everything the scan prints (it may quote the agent under test) is printed between
# ::stop-commands::TOKEN and ::TOKEN:: with a random TOKEN, so no line of it is a workflow
# command. Outside that block this script prints only workflow commands of its own.
set -euo pipefail
exec 2>&1 # one stream: the stop-commands block must cover stderr too, in order
export PYTHONUNBUFFERED=1

py=python3

die() { # $1 is always a fixed string of this script, never an input
	printf '::error title=probegate action::%s\n' "$1"
	exit 4
}

work=$(mktemp -d) || die "cannot create a temporary directory"
trap 'rm -rf -- "$work"' EXIT
: >"$work/start" # files older than this are left over from an earlier step

input_error=""
parse_bool() { # parse_bool VARIABLE INPUT_NAME VALUE DEFAULT
	case "${3:-$4}" in
	true | True | TRUE) printf -v "$1" true ;;
	false | False | FALSE) printf -v "$1" false ;;
	*)
		printf -v "$1" '%s' "$4"
		input_error="the $2 input must be true or false"
		;;
	esac
}

out_dir=${PG_OUTPUT_DIR:-probegate-out}
formats=${PG_FORMATS:-json,sarif,md}
baseline=${PG_BASELINE:-}
allow_mismatch=false
annotations=true
job_summary=true
parse_bool allow_mismatch allow-mismatch "${PG_ALLOW_MISMATCH:-}" false
parse_bool annotations annotations "${PG_ANNOTATIONS:-}" true
parse_bool job_summary job-summary "${PG_JOB_SUMMARY:-}" true

extra=()
if "$py" -m probegate.github split-args "--error-file=$work/args.err" >"$work/args"; then
	mapfile -d '' -t extra <"$work/args"
elif [[ -s $work/args.err ]]; then
	input_error=$(<"$work/args.err") # printed escaped by `finish`, never here
else
	die "cannot run python3 -m probegate.github"
fi

cmd=(probegate scan)
add() { # --flag=value keeps a value that starts with "-" a value
	if [[ -n $2 ]]; then cmd+=("$1=$2"); fi
}
add --config "${PG_CONFIG:-}"
add --mode "${PG_MODE:-}"
add --fail-under "${PG_FAIL_UNDER:-}"
add --fail-on "${PG_FAIL_ON:-}"
add --baseline "$baseline"
add --tolerance "${PG_TOLERANCE:-}"
add --concurrency "${PG_CONCURRENCY:-}"
add --budget-usd "${PG_BUDGET_USD:-}"
add --judge "${PG_JUDGE:-}"
add --shard "${PG_SHARD:-}"
if [[ $allow_mismatch == true ]]; then cmd+=(--allow-mismatch); fi
# JSON is always written: the outputs and the summary are read from it.
cmd+=("--output=json,$formats" "--output-dir=$out_dir")
cmd+=("${extra[@]}")
if [[ -n ${PG_TARGET:-} ]]; then cmd+=(-- "$PG_TARGET"); fi

compare_flags=()
if [[ -n ${PG_TOLERANCE:-} ]]; then compare_flags+=("--tolerance=$PG_TOLERANCE"); fi
if [[ $allow_mismatch == true ]]; then compare_flags+=(--allow-mismatch); fi

token=$("$py" -m probegate.github token) || die "cannot run python3 -m probegate.github"
log="$work/scan.log"
: >"$log"
scan_rc=2
compare_rc=""
scan_json="$out_dir/scan.json"

printf '::group::probegate scan\n'
printf '::stop-commands::%s\n' "$token"
if [[ -z $input_error ]]; then
	set +e
	"${cmd[@]}" 2>&1 | tee -a -- "$log"
	scan_rc=${PIPESTATUS[0]}
	# The regression diff for the summary, and the baseline gate, from this run's scan.json.
	if [[ -n $baseline && $scan_rc =~ ^[013]$ && -f $scan_json && $scan_json -nt $work/start ]]; then
		probegate compare "${compare_flags[@]}" --output=json "--output-path=$out_dir/baseline-diff.json" \
			-- "$baseline" "$scan_json" 2>&1 | tee -a -- "$log"
		compare_rc=${PIPESTATUS[0]}
		if [[ $compare_rc =~ ^[01]$ ]]; then
			probegate compare "${compare_flags[@]}" --output=md "--output-path=$out_dir/baseline-diff.md" \
				-- "$baseline" "$scan_json" >/dev/null 2>&1
		fi
	fi
	set -e
fi
# A newline first: agent text without one would otherwise swallow the marker.
printf '\n::%s::\n' "$token"
printf '::endgroup::\n'

set +e
"$py" -m probegate.github finish \
	"--scan-rc=$scan_rc" \
	"--compare-rc=$compare_rc" \
	"--output-dir=$out_dir" \
	"--baseline=$baseline" \
	"--annotations=$annotations" \
	"--job-summary=$job_summary" \
	"--log=$log" \
	"--since=$work/start" \
	"--input-error=$input_error" \
	"--result-file=$work/result"
set -e
code=""
if [[ -s $work/result ]]; then code=$(<"$work/result"); fi
if [[ ! $code =~ ^[0-4]$ ]]; then
	die "the Action's publishing step failed; the scan's own exit code was $scan_rc"
fi
exit "$code"
