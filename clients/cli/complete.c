/* SPDX-License-Identifier: Apache-2.0 */
/* complete.c - procctl completion bash|zsh: the completion script of a
 * shell, from args.c's tables (cli_program), help's operand being any
 * command. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cmd_completion(const struct opts *o)
{
	struct opt_cmd cmds[NCMD + 1];
	const char *names[NCMD + 1];
	struct opt_program p = cli_program;
	int k;
	if (o->nargs != 1 || (strcmp(o->args[0], "bash") && strcmp(o->args[0], "zsh")))
		return bad_usage(o->nargs ? o->args[o->nargs - 1] : "completion", "give one shell: bash or zsh");
	for (k = 0; k <= NCMD; k++) {
		cmds[k] = cli_cmds[k];
		names[k] = k < NCMD ? cli_cmds[k].name : NULL;
	}
	cmds[NCMD].words = names;
	p.cmds = cmds;
	return opt_completion(stdout, &p, o->args[0]) < 0 || fflush(stdout) ? 1 : 0;
}
