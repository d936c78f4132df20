#!/usr/bin/env bash
# probegate GitHub Action: run one scan (or, with command: run, the scenario suites) and
# publish it (docs/github-action.md).
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
#
# A cancelled job: GitHub sends SIGINT, then SIGTERM 7.5 s later, to the container's PID 1,
# which is this script. The first one is passed on to the scan as SIGTERM (a scan stops
# cleanly on it and writes its partial report, exit 143; SIGINT would be ignored by a
# background process before the scan sets its handler); later ones are not passed on, so the
# scan finishes writing. Then the run is published as any other: outputs, job summary, and the
# files handed to the workspace's owner.
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

cancelled="" # the first INT or TERM received, by name
child=""     # the scan's process while it runs
# shellcheck disable=SC2317 # run by the traps below
on_signal() { # $1 is INT or TERM
	if [[ -z $cancelled ]]; then
		cancelled=$1
		if [[ -n $child ]]; then kill -TERM "$child" 2>/dev/null || true; fi
	fi
}
trap 'on_signal INT' INT
trap 'on_signal TERM' TERM

run_logged() { # run "$@" with its output to the log and stdout; its exit status in $child_rc
	# In the background, so a signal reaches the trap while it runs (bash runs a trap only
	# after the foreground command ends), and wait again until it has ended.
	rm -f -- "$work/fifo"
	mkfifo -- "$work/fifo"
	tee -a -- "$log" <"$work/fifo" &
	local tee_pid=$!
	"$@" >"$work/fifo" 2>&1 &
	child=$!
	if [[ -n $cancelled ]]; then kill -TERM "$child" 2>/dev/null || true; fi
	child_rc=0
	while :; do
		wait "$child" && child_rc=0 || child_rc=$?
		# A signal ends `wait` early (status above 128) with the scan still running (or not
		# reaped yet: kill -0 finds it, and the next `wait` gives its own status).
		if ! kill -0 "$child" 2>/dev/null; then break; fi
	done
	child=""
	wait "$tee_pid" || true
}

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

command=${PG_COMMAND:-scan}
out_dir=${PG_OUTPUT_DIR:-probegate-out}
formats=${PG_FORMATS:-json,sarif,md}
baseline=${PG_BASELINE:-}
requirements=${PG_REQUIREMENTS:-}
case $command in
scan | run) ;;
*)
	command=scan
	input_error="the command input must be scan or run"
	;;
esac
allow_mismatch=false
annotations=true
job_summary=true
parse_bool allow_mismatch allow-mismatch "${PG_ALLOW_MISMATCH:-}" false
parse_bool annotations annotations "${PG_ANNOTATIONS:-}" true
parse_bool job_summary job-summary "${PG_JOB_SUMMARY:-}" true
fork_pull_requests=${PG_FORK_PULL_REQUESTS:-skip}
case $fork_pull_requests in
skip | scan) ;;
*)
	fork_pull_requests=skip
	input_error="the fork-pull-requests input must be skip or scan"
	;;
esac

extra=()
if "$py" -m probegate.github split-args "--error-file=$work/args.err" >"$work/args"; then
	mapfile -d '' -t extra <"$work/args"
elif [[ -s $work/args.err ]]; then
	input_error=$(<"$work/args.err") # printed escaped by `finish`, never here
else
	die "cannot run python3 -m probegate.github"
fi

# The output directory and the store must not lead elsewhere through a committed symlink: the
# container writes as root. The refusal is printed escaped by `finish`, never here.
if [[ -z $input_error ]] && ! "$py" -m probegate.github check-locations "--output-dir=$out_dir" \
	"--error-file=$work/locations.err" >/dev/null 2>&1; then
	if [[ -s $work/locations.err ]]; then
		input_error=$(<"$work/locations.err")
	else
		die "cannot run python3 -m probegate.github"
	fi
fi

# A fork's pull request gets no secrets: skipped with a notice (fork-pull-requests: skip). A
# config file given as the target input is a deprecation notice. Both are printed escaped by
# `finish`, never here.
skipped=""
notice=""
if [[ -z $input_error ]]; then
	if "$py" -m probegate.github check-run "--command=$command" "--target=${PG_TARGET:-}" \
		"--fork-pull-requests=$fork_pull_requests" "--skip-file=$work/skip" \
		"--notice-file=$work/notice" "--error-file=$work/run.err" >/dev/null 2>&1; then
		skipped=$(<"$work/skip")
		notice=$(<"$work/notice")
	elif [[ -s $work/run.err ]]; then
		input_error=$(<"$work/run.err")
	else
		die "cannot run python3 -m probegate.github"
	fi
fi

# A baseline file that does not exist yet is the first run of a new repository: a notice, and
# the scan runs without the baseline gate. Anything else wrong with it is probegate's exit 2.
# A skipped run scans nothing, so it says nothing about a baseline.
missing_baseline=""
if [[ $command == scan && -z $skipped && -n $baseline && ! -e $baseline ]]; then
	missing_baseline=$baseline
	baseline=""
fi

add() { # --flag=value keeps a value that starts with "-" a value
	if [[ -n $2 ]]; then cmd+=("$1=$2"); fi
}
if [[ $command == run ]]; then
	# Inputs that only mean something to a scan are refused rather than silently ignored.
	scan_only=()
	for pair in "config=${PG_CONFIG:-}" "mode=${PG_MODE:-}" "fail-under=${PG_FAIL_UNDER:-}" \
		"fail-on=${PG_FAIL_ON:-}" "baseline=$baseline" "tolerance=${PG_TOLERANCE:-}" \
		"confirm=${PG_CONFIRM:-}" "concurrency=${PG_CONCURRENCY:-}" "budget-usd=${PG_BUDGET_USD:-}" \
		"judge=${PG_JUDGE:-}" "shard=${PG_SHARD:-}"; do
		if [[ -n ${pair#*=} ]]; then scan_only+=("${pair%%=*}"); fi
	done
	if [[ $allow_mismatch == true ]]; then scan_only+=(allow-mismatch); fi
	if ((${#scan_only[@]})); then
		input_error="command: run takes no ${scan_only[*]} input (scan only); use args for run's flags"
	elif [[ -z ${PG_TARGET:-} || -z ${PG_ADAPTER:-} ]]; then
		input_error="command: run needs the target input (a suite file or directory) and the adapter input (MODULE:ATTR)"
	fi
	# probegate run writes json, junit and md; the other formats are scan's.
	run_formats=json
	IFS=, read -ra wanted <<<"$formats"
	for format in "${wanted[@]}"; do
		format=${format// /}
		if [[ $format == junit || $format == md ]]; then run_formats+=",$format"; fi
	done
	cmd=(probegate run)
	add --adapter "${PG_ADAPTER:-}"
	cmd+=("--output=$run_formats" "--output-dir=$out_dir")
	cmd+=("${extra[@]}")
	cmd+=(-- "${PG_TARGET:-}")
else
	if [[ -n ${PG_ADAPTER:-} ]]; then
		input_error="the adapter input is for command: run; a scan names a python agent in its config (target.python) or with --python in args"
	fi
	cmd=(probegate scan)
	add --config "${PG_CONFIG:-}"
	add --mode "${PG_MODE:-}"
	add --fail-under "${PG_FAIL_UNDER:-}"
	add --fail-on "${PG_FAIL_ON:-}"
	add --baseline "$baseline"
	add --tolerance "${PG_TOLERANCE:-}"
	add --confirm "${PG_CONFIRM:-}"
	add --concurrency "${PG_CONCURRENCY:-}"
	add --budget-usd "${PG_BUDGET_USD:-}"
	add --judge "${PG_JUDGE:-}"
	add --shard "${PG_SHARD:-}"
	if [[ $allow_mismatch == true ]]; then cmd+=(--allow-mismatch); fi
	# JSON is always written: the outputs and the summary are read from it.
	cmd+=("--output=json,$formats" "--output-dir=$out_dir")
	cmd+=("${extra[@]}")
	if [[ -n ${PG_TARGET:-} ]]; then cmd+=(-- "$PG_TARGET"); fi
fi

compare_flags=()
if [[ -n ${PG_TOLERANCE:-} ]]; then compare_flags+=("--tolerance=$PG_TOLERANCE"); fi
if [[ $allow_mismatch == true ]]; then compare_flags+=(--allow-mismatch); fi

token=$("$py" -m probegate.github token) || die "cannot run python3 -m probegate.github"
log="$work/scan.log"
: >"$log"
scan_rc=2
compare_rc=""
scan_json="$out_dir/scan.json"

printf '::group::probegate %s\n' "$command"
printf '::stop-commands::%s\n' "$token"
# A python agent's own dependencies (the requirements input): a complete, hash-pinned lock,
# installed into a directory of its own that goes in front of the image's packages for the
# scan only. pip's output is inside the block: it echoes names from a file the user wrote.
agent_packages=""
if [[ -z $input_error && -z $skipped && -n $requirements ]]; then
	agent_packages="$work/agent-packages"
	set +e
	"$py" -m pip install --require-hashes --no-input --disable-pip-version-check \
		--no-cache-dir --no-compile --target "$agent_packages" -r "$requirements" 2>&1 | tee -a -- "$log"
	pip_rc=${PIPESTATUS[0]}
	set -e
	if [[ $pip_rc != 0 ]]; then
		input_error="pip could not install the requirements input (its error is in the log above); it must be a complete lock with a --hash for every package (pip install --require-hashes)"
	elif ! "$py" -m probegate.github check-packages "--packages=$agent_packages" \
		"--error-file=$work/packages.err" >/dev/null 2>&1; then
		if [[ -s $work/packages.err ]]; then
			input_error=$(<"$work/packages.err")
		else
			die "cannot run python3 -m probegate.github"
		fi
	fi
fi
if [[ -n $cancelled ]]; then
	scan_rc=143 # cancelled before the scan began: nothing to publish but that
elif [[ -z $input_error && -z $skipped ]]; then
	set +e
	if [[ -n $agent_packages ]]; then
		run_logged env "PYTHONPATH=$agent_packages${PYTHONPATH:+:$PYTHONPATH}" "${cmd[@]}"
	else
		run_logged "${cmd[@]}"
	fi
	scan_rc=$child_rc
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
	"--command=$command" \
	"--missing-baseline=$missing_baseline" \
	"--skipped=$skipped" \
	"--notice=$notice" \
	"--result-file=$work/result"
set -e
code=""
if [[ -s $work/result ]]; then code=$(<"$work/result"); fi
if [[ ! $code =~ ^([0-4]|130|143)$ ]]; then
	die "the Action's publishing step failed; the scan's own exit code was $scan_rc"
fi
exit "$code"
