/* SPDX-License-Identifier: Apache-2.0 */
/* optable.h - a command line as one table of options (and commands), as
 * procctl and procctl-node each have: getopt_long's table made from it
 * (--name VALUE and --name=VALUE), what getopt_long refused said in
 * words, and the completion scripts of bash and zsh, so the parser, its
 * errors and the completions never disagree. */
#ifndef PROCCTL_OPTABLE_H
#define PROCCTL_OPTABLE_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

/* One option: --name (and -x), its value's form: NULL for none; "FILE",
 * "DIR" or "PATH" completes file names; "a|b|c" one of those words;
 * anything else a value to type. cmds: bit i, the program's command i
 * takes it (ignored for a program without commands). */
struct opt_def {
	const char *name;
	char short_name;
	const char *value;
	unsigned cmds;
};

/* One command (a word after the program's options), and what its first
 * operand may be (NULL-terminated; NULL: anything). */
struct opt_cmd {
	const char *name;
	const char *const *words;
};

struct opt_program {
	const char *name; /* as typed: procctl, procctl-node */
	const char *noun; /* what its options are called in errors: "option", "flag" */
	const struct opt_cmd *cmds; /* none: a program of options alone */
	size_t ncmds;
	const struct opt_def *opts;
	size_t nopts;
};

/* getopt_long's val of option k. */
#define OPT_VAL(k) (256 + (int)(k))

/* getopt_long's table of p's options in lo (p->nopts + 1 entries; option
 * k's val is OPT_VAL(k); a short name is its own val, in getopt's
 * optstring too). */
void opt_longopts(const struct opt_program *p, struct option *lo);

/* What getopt_long refused, in words, into buf: word is argv[optind - 1]
 * after it returned '?' (or ':', missing set), letter its optopt (a short
 * option's letter, named even inside a cluster: -xo): "--x: no such
 * flag", "--x: needs a value", "--x: takes no value", "--x: ambiguous
 * (--xa, --xb)". */
void opt_refusal(const struct opt_program *p, const char *word, int missing, int letter, char *buf, size_t len);

/* The completion script of shell ("bash" or "zsh") for p on f: 0, or
 * -EINVAL for another shell. */
int opt_completion(FILE *f, const struct opt_program *p, const char *shell);

#endif
