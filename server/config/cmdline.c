/* SPDX-License-Identifier: Apache-2.0 */
/* cmdline.c - procctl-node's command line (cmdline.h): one table, its
 * own flags then the config keys (config.c's), made once and read by
 * getopt_long and by the completion scripts alike. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cmdline.h"
#include "config.h"
#include "optable.h"

enum { F_CONFIG, F_CHECK, F_UNINSTALL, F_VERSION, F_HELP, F_COMPLETION, NFIXED };

#define MAX_FLAGS 64

static struct table {
	struct opt_def opts[MAX_FLAGS];
	char names[MAX_FLAGS][40];
	struct opt_program p;
} t;

/* The table: the fixed flags, then each key ('-' for '_'; its value as
 * completion offers it); NULL when they do not fit (a key added to
 * config.c past MAX_FLAGS, or a longer name: every test that starts the
 * daemon says so). */
static const struct opt_program *table(void)
{
	static const struct opt_def fixed[NFIXED] = {
		[F_CONFIG] = {"config", 0, "FILE", 0},       [F_CHECK] = {"check-config", 0, NULL, 0},
		[F_UNINSTALL] = {"uninstall", 0, NULL, 0},   [F_VERSION] = {"version", 0, NULL, 0},
		[F_HELP] = {"help", 'h', NULL, 0},           [F_COMPLETION] = {"completion", 0, "bash|zsh", 0},
	};
	const char *name, *form;
	size_t i, k, n = NFIXED;
	if (t.p.nopts)
		return &t.p;
	memcpy(t.opts, fixed, sizeof fixed);
	for (i = 0; (name = node_cfg_key(i, &form)); i++, n++) {
		if (n == MAX_FLAGS || strlen(name) >= sizeof t.names[n])
			return NULL;
		for (k = 0; name[k]; k++)
			t.names[n][k] = name[k] == '_' ? '-' : name[k];
		t.opts[n].name = t.names[n];
		/* a removed key is still taken, to be refused with its reason */
		t.opts[n].value = !form ? "VALUE" : !strcmp(form, "BOOL") ? "true|false" :
				  !strcmp(form, "LEVEL") ? "info|debug" : form;
	}
	t.p = (struct opt_program){"procctl-node", "flag", NULL, 0, t.opts, n};
	return &t.p;
}

static int fail(char *err, size_t errlen, const char *what)
{
	snprintf(err, errlen, "%s", what);
	return -EINVAL;
}

/* Flag k (its value v) into cl: 0, or -EINVAL (err). */
static int take(struct cmdline *cl, const struct opt_program *p, size_t k, const char *v, char *err, size_t errlen)
{
	struct cmdline_key *key;
	size_t i;
	switch (k) {
	case F_CONFIG:
		if (cl->config)
			return fail(err, errlen, "--config: given twice (one file; flags override it)");
		cl->config = v;
		return 0;
	case F_CHECK: cl->check = 1; return 0;
	case F_UNINSTALL: cl->uninstall = 1; return 0;
	case F_VERSION: cl->action = CMDLINE_VERSION; return 0;
	case F_HELP: cl->action = CMDLINE_HELP; return 0;
	case F_COMPLETION:
		if (strcmp(v, "bash") && strcmp(v, "zsh"))
			return fail(err, errlen, "--completion: bash or zsh");
		cl->action = CMDLINE_COMPLETION;
		cl->shell = v;
		return 0;
	}
	key = &cl->keys[cl->nkeys++];
	for (i = 0; p->opts[k].name[i] && i + 1 < sizeof key->key; i++)
		key->key[i] = p->opts[k].name[i] == '-' ? '_' : p->opts[k].name[i];
	key->key[i] = 0;
	key->value = v;
	return 0;
}

int cmdline_parse(struct cmdline *cl, int argc, char **argv, char *err, size_t errlen)
{
	const struct opt_program *p = table();
	struct option lo[MAX_FLAGS + 1];
	int c, r;
	memset(cl, 0, sizeof *cl);
	if (!p)
		return fail(err, errlen, "the config keys do not fit the flags' table (cmdline.c's MAX_FLAGS)");
	if (!(cl->keys = calloc((size_t)(argc > 0 ? argc : 1), sizeof *cl->keys)))
		return -ENOMEM;
	opt_longopts(p, lo);
	opterr = 0;
	optind = 0; /* a fresh scan */
	/* "-": an operand comes as code 1 (refused); ":": a missing value is ':' */
	while ((c = getopt_long(argc, argv, "-:h", lo, NULL)) != -1) {
		if (c == 1) {
			snprintf(err, errlen, "%s: not a flag (procctl-node takes no operands)", optarg);
			return -EINVAL;
		}
		if (c == '?' || c == ':') {
			opt_refusal(p, argv[optind - 1], c == ':', optopt, err, errlen);
			return -EINVAL;
		}
		if ((r = take(cl, p, c == 'h' ? F_HELP : (size_t)(c - OPT_VAL(0)), optarg, err, errlen)) < 0)
			return r;
	}
	if (optind < argc) {
		snprintf(err, errlen, "%s: not a flag (procctl-node takes no operands)", argv[optind]);
		return -EINVAL;
	}
	return 0;
}

void cmdline_free(struct cmdline *cl)
{
	free(cl->keys);
	cl->keys = NULL;
}

int cmdline_completion(FILE *f, const char *shell)
{
	return table() ? opt_completion(f, table(), shell) : -E2BIG;
}
