#!/bin/sh
# Runs every fuzz target in the module for FUZZTIME each and writes a
# summary table: per target the execs, the new interesting inputs the
# engine kept (in its cache, not in testdata) and the failures found.
# A failure's input is written by go test under the package's
# testdata/fuzz/FuzzX/ (commit it as a regression seed once fixed).
#
# Environment: GO (go), FUZZTIME (10s), FUZZPARALLEL (workers; default
# go's, which is GOMAXPROCS), FUZZOUT (.cache/fuzz: logs and summary.txt),
# FUZZ (a regexp: only targets whose "pkg FuzzName" matches).
# Exits 1 when any target found a failure or did not build.
set -u
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-10s}
FUZZOUT=${FUZZOUT:-.cache/fuzz}
FUZZ=${FUZZ:-.}
mkdir -p "$FUZZOUT"
summary="$FUZZOUT/summary.txt"
rows="$FUZZOUT/rows.txt"
: >"$rows"
module=$($GO list -m)
par=""
[ -n "${FUZZPARALLEL:-}" ] && par="-parallel $FUZZPARALLEL"

# Targets: grep the test files rather than `go test -list`, which would
# build every package's tests first.
targets=$(grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' . |
	sed 's|^\./||; s|/[^/]*_test\.go:func | |' | sort -u)

failed=0
echo "$targets" | while read -r dir name; do
	[ -n "$dir" ] || continue
	pkg="$module/$dir"
	echo "$pkg $name" | grep -Eq -- "$FUZZ" || continue
	log="$FUZZOUT/$(echo "$dir" | tr / _)_$name.log"
	start=$(date +%s)
	# shellcheck disable=SC2086
	$GO test -run '^$' -fuzz "^$name\$" -fuzztime "$FUZZTIME" $par "./$dir" >"$log" 2>&1
	rc=$?
	secs=$(($(date +%s) - start))
	last=$(grep 'execs:' "$log" | tail -n 1)
	execs=$(echo "$last" | sed -n 's/.*execs: \([0-9]*\).*/\1/p')
	# The last line's own rate is of its last instant (often 0/sec): the
	# rate reported is execs over the fuzzing time.
	elapsed=$(echo "$last" | sed -n 's/.*elapsed: \([0-9]*\)s.*/\1/p')
	rate=$(awk -v e="${execs:-0}" -v s="${elapsed:-0}" 'BEGIN { if (s > 0) printf "%d/s", e / s; else print "-" }')
	interesting=$(echo "$last" | sed -n 's/.*new interesting: \([0-9]*\).*/\1/p')
	finding=$(sed -n 's/.*Failing input written to \(.*\)$/\1/p' "$log" | head -n 1)
	status=ok
	if [ $rc -ne 0 ]; then
		if [ -n "$finding" ]; then status="FOUND $dir/$finding"; else status="FAIL (see $log)"; fi
	fi
	printf '%-34s %-28s %10s %12s %5s %5ss  %s\n' "$dir" "$name" "${execs:-0}" "${rate:--}" "${interesting:-0}" "$secs" "$status" | tee -a "$rows"
done

{
	printf 'fuzz summary (FUZZTIME=%s, %s)\n' "$FUZZTIME" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	printf '%-34s %-28s %10s %12s %5s %6s  %s\n' package target execs rate new time status
	cat "$rows"
	total=$(awk '{s += $3} END {print s + 0}' "$rows")
	n=$(wc -l <"$rows")
	bad=$(grep -c -e ' FOUND ' -e ' FAIL ' "$rows")
	printf '%d targets, %d execs, %d with findings or failures\n' "$n" "$total" "$bad"
} >"$summary"
echo
cat "$summary"
grep -q -e ' FOUND ' -e ' FAIL ' "$rows" && failed=1
exit $failed
