# SPDX-License-Identifier: Apache-2.0
# holds.sh - what run.sh and node.sh both do with pcsamp holders, sourced
# by them (E: the example programs' folder; say: a line to the terminal and the
# summary).
#
# pcsamp_start N DIR: N pcsamp (35 s at most) with DIR/witness, logs in
# DIR/pcsamp-I.log; their pids (timeout's) in $pids.
pcsamp_start() {
	pids=
	_i=0
	while [ $_i -lt "$1" ]; do
		timeout -k 10 35 "$E/pcsamp" --witness "$2/witness" >"$2/pcsamp-$_i.log" 2>&1 &
		pids="$pids $!"
		_i=$((_i + 1))
	done
}

# pcsamp_said DIR: each holder's holds, samples per hold and CUPTI errors;
# the witness's overlaps and hand-off gaps (E to the next S); the CUPTI
# calls' times of every hold.
pcsamp_said() {
	for _f in "$1"/pcsamp-*.log; do
		say "$(basename "$_f"): holds $(grep -c '^event=hold ' "$_f"), samples per hold: $(grep '^event=hold ' "$_f" | grep -o 'samples=[0-9]*' | cut -d= -f2 | tr '\n' ' '), CUPTI errors: $(grep -c 'result=CUPTI_ERROR' "$_f")"
	done
	say "witness overlaps (X): $(grep -c '^X' "$1/witness" 2>/dev/null)"
	awk '$1 == "E" { e = $3 } $1 == "S" && e { printf "%.1f\n", ($3 - e) / 1e6; e = 0 }' "$1/witness" >"$1/gaps.txt" 2>/dev/null
	say "hand-off gaps, E to next S (ms): $(tr '\n' ' ' <"$1/gaps.txt")"
	say "acquire_ms: $(grep -ho 'acquire_ms=[0-9.]*' "$1"/pcsamp-*.log | cut -d= -f2 | tr '\n' ' ')"
	say "release_ms: $(grep -ho 'release_ms=[0-9.]*' "$1"/pcsamp-*.log | cut -d= -f2 | tr '\n' ' ')"
}
