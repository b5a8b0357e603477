/* SPDX-License-Identifier: Apache-2.0 */
/* cmdline.h - procctl-node's command line: its own flags (--config,
 * --check-config, --uninstall, --version, --help, --completion) and every
 * key of the config file's global part as a flag, read with getopt_long
 * from one table (optable.h): --key VALUE and --key=VALUE, -- ending
 * them; it takes no operands. */
#ifndef PROCCTL_CMDLINE_H
#define PROCCTL_CMDLINE_H

#include <stddef.h>
#include <stdio.h>

enum cmdline_action { CMDLINE_RUN, CMDLINE_HELP, CMDLINE_VERSION, CMDLINE_COMPLETION };

struct cmdline_key {
	char key[40];      /* as the config file names it: lease_ms */
	const char *value; /* argv's */
};

struct cmdline {
	enum cmdline_action action; /* the last of --help, --version, --completion wins */
	const char *config;         /* --config FILE, or NULL */
	const char *shell;          /* --completion SHELL: bash or zsh */
	int check, uninstall;       /* --check-config, --uninstall */
	struct cmdline_key *keys;   /* the keys given, in order (malloc'd) */
	size_t nkeys;
};

/* Read argv into cl (argv is kept, not copied): 0, or -EINVAL with err
 * naming the flag and what is wrong ("--bogus: no such flag",
 * "--lease-ms: needs a value", "--uninstall: takes no value"), or
 * -ENOMEM. cmdline_free frees it either way. */
int cmdline_parse(struct cmdline *cl, int argc, char **argv, char *err, size_t errlen);
void cmdline_free(struct cmdline *cl);

/* The completion script of shell ("bash" or "zsh") for these flags: 0,
 * -EINVAL for another shell, -E2BIG when the keys do not fit the table. */
int cmdline_completion(FILE *f, const char *shell);

#endif
