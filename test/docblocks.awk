# SPDX-License-Identifier: Apache-2.0
# docblocks.awk - a page's fenced blocks as files, for a runner to run as
# a reader would (test/docs.sh; test/debs/run.sh for docs/hosts.md): each
# ```sh block as dir/NN.sh (starting with an echo of where it is), each
# ```c block as dir/NN.c (and dir/NN.name when its first line names a
# file: `/* example.c: ... */`). `make`, `make demo` and `make test` lines
# are kept as comments (make test is CI itself, make demo's script is the
# demo test); another make line, a fence not at the start of a line, or a
# fence other than sh, c and text fails (exit 1: a command no test would
# see).
# Usage: awk -v dir=DIR -v page=PAGE -f docblocks.awk PAGE
!fence && (/^[ \t]+```/ || /^[ \t]*~~~/) {
	printf "docs: %s line %d: a fence this test does not read (only ``` at the start of a line)\n", page, NR > "/dev/stderr"
	bad = 1
}
/^```/ {
	if (fence) {
		if (out != "") close(out)
		fence = 0; out = ""
		next
	}
	fence = 1; first = 1
	lang = substr($0, 4)
	if (lang == "sh" || lang == "c") {
		n++
		out = sprintf("%s/%02d.%s", dir, n, lang)
		if (lang == "sh")
			printf "echo \"## %s line %d\"\n", page, NR + 1 > out
	} else if (lang != "text") {
		printf "docs: %s line %d: a ```%s block (only sh, c and text)\n", page, NR, lang > "/dev/stderr"
		bad = 1
	}
	next
}
fence && first && out ~ /\.c$/ && match($0, /^\/\* [A-Za-z0-9_-]+\.c[: ]/) {
	name = substr($0, 4, RLENGTH - 4)
	printf "%s\n", name > sprintf("%s/%02d.name", dir, n)
}
fence { first = 0 }
fence && out ~ /\.sh$/ && /^make( demo| test)?[ \t]*(#.*)?$/ { print ": " $0 > out; next }
fence && out ~ /\.sh$/ && /^make/ {
	printf "docs: %s line %d: %s is run by no test\n", page, NR, $0 > "/dev/stderr"
	bad = 1
}
fence && out != "" { print > out }
END {
	if (fence) { printf "docs: %s ends inside a fence\n", page > "/dev/stderr"; bad = 1 }
	exit bad
}
