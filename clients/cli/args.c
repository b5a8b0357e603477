/* SPDX-License-Identifier: Apache-2.0 */
/* args.c - procctl's command line: one table of commands and one of
 * options, read by getopt_long (--key VALUE and --key=VALUE, anywhere
 * on the line, -- ending the options), and the help made of them.
 * complete.c writes the shell completions from the same tables. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define DATA_CMDS (CMD_BIT(CMD_PUBLISH) | CMD_BIT(CMD_DESIRED))
#define SEL_CMDS                                                                                       \
	(CMD_BIT(CMD_PS) | CMD_BIT(CMD_PUBLISH) | CMD_BIT(CMD_CLEAR) | CMD_BIT(CMD_WATCH) |            \
	 CMD_BIT(CMD_TOP) | CMD_BIT(CMD_DESIRED))

/* Those that select by the pod's namespace and labels (WatchEvents does not). */
#define POD_CMDS (CMD_BIT(CMD_PS) | CMD_BIT(CMD_PUBLISH) | CMD_BIT(CMD_CLEAR) | CMD_BIT(CMD_DESIRED))

/* The commands, as optable.c reads them (help last: its operand, a
 * command, is filled in by complete.c), ... */
const struct opt_cmd cli_cmds[NCMD + 1] = {
	[CMD_PS] = {"ps", NULL},
	[CMD_GET] = {"get", NULL},
	[CMD_STATE] = {"state", NULL},
	[CMD_PUBLISH] = {"publish", NULL},
	[CMD_CLEAR] = {"clear", NULL},
	[CMD_WATCH] = {"watch", NULL},
	[CMD_TOP] = {"top", NULL},
	[CMD_RESOURCES] = {"resources", NULL},
	[CMD_DESIRED] = {"desired", (const char *const[]){"ls", "set", "rm", NULL}},
	[CMD_HEALTH] = {"health", NULL},
	[CMD_VERSION] = {"version", NULL},
	[CMD_COMPLETION] = {"completion", (const char *const[]){"bash", "zsh", NULL}},
	[NCMD] = {"help", NULL},
};

/* ... and what their help says: synopsis, summary, text. */
static const struct {
	const char *synopsis, *summary, *help;
} texts[NCMD] = {
	[CMD_PS] = {"ps [SELECTOR]", "the attached processes",
		    "The attached processes (of SELECTOR only, when given; without --schema, of every\n"
		    "schema version): pid, consumer, schema version, pod UID, container ID, owner\n"
		    "(owned or passive), config generation, acked generation, how it was acked, and\n"
		    "the pod's namespace, name and container when the daemon follows the Kubernetes\n"
		    "API.\n"},
	[CMD_GET] = {"get [--pid] PID", "one process",
		     "One attached process, with its NSpid list, instance id, QoS class and lease.\n"},
	[CMD_STATE] = {"state [--pid] PID", "its state block: ack, resources, status bytes",
		       "The process's state block, read now: its last ack, its resource reports and its\n"
		       "status bytes.\n"},
	[CMD_PUBLISH] = {"publish SELECTOR DATA [--wait] [--allow-none]", "write a config",
			 "Write DATA as the config of the selected processes (the set is fixed when the call\n"
			 "starts). With --wait, wait up to --timeout for their acks. One row per process:\n"
			 "APPLIED, REJECTED (PSTATUS names the process's errno), PENDING, SUPERSEDED; or not\n"
			 "written: NOT_OWNER, CONFLICT, BROKEN, TOO_LARGE (over the process's payload\n"
			 "capacity), GONE or FAILED; without --wait, WRITTEN. A selector that matches no\n"
			 "process is an error (exit 4) unless --allow-none.\n"},
	[CMD_CLEAR] = {"clear SELECTOR [--wait] [--allow-none]",
		       "withdraw it (the process falls back to its defaults)",
		       "Withdraw the config of the selected processes: each sees no config once and falls\n"
		       "back to its defaults. --wait, --allow-none and the rows as for publish.\n"},
	[CMD_WATCH] = {"watch [SELECTOR] [--from TOKEN] [--count N] [--for DUR]",
		       "events as they come (a snapshot first, unless --from)",
		       "Events as they come: a snapshot of the attached processes first, then attached,\n"
		       "detached, acked, state changes, ownership changes, grants and releases, each with its\n"
		       "resume token. --from TOKEN continues after that event instead of a snapshot. It runs\n"
		       "until interrupted, or for --for DUR, or until --count N events (exit 0), or until\n"
		       "--timeout DUR when given (a watch has no timeout by default; ended by it before\n"
		       "--count events: exit 3). -o json prints one JSON document per line.\n"},
	[CMD_TOP] = {"top [SELECTOR] [--interval DUR] [--count N] [--for DUR]",
		     "a live view: processes, and who holds each resource",
		     "A live view of the node, refreshed every --interval (1s): each exclusive resource\n"
		     "with its holder, how long it has held it, blocked seconds and who waits, and a bar of\n"
		     "the last minute (a cell a second, a letter a holder, . nobody); then the processes\n"
		     "(of SELECTOR only, when given) with their config generation and ack. The processes\n"
		     "and grants come from a WatchEvents stream, the arbiters from one ListArbiters a\n"
		     "refresh: no process is read for it. It runs until interrupted, --count N frames or\n"
		     "--for DUR. -o json: one JSON line a frame (processes, arbiters as ListArbiters gives\n"
		     "them, and each resource's holds, in ms relative to the frame).\n"},
	[CMD_RESOURCES] = {"resources [KIND]", "exclusive resources: holders, blocked time",
			   "Every exclusive resource (of arbiter KIND only, when given: its name, or its number):\n"
			   "holder, time held, blocked and pending-release seconds, hand-offs and waiters. KIND\n"
			   "with no arbiter: NOT_FOUND.\n"},
	[CMD_DESIRED] = {"desired ls | set DSELECTOR DATA [--wait] | rm DSELECTOR [--clear [--wait]]",
			 "desired configs (kept by the daemon, given on attach)",
			 "Desired configs: stated once, given to the processes that match now and to every\n"
			 "process that attaches later (pid over container over pod over a label selector over a\n"
			 "namespace over consumer; among label selectors that match one process, the one with a\n"
			 "namespace, then the one with more requirements, then the one set first). DSELECTOR:\n"
			 "--consumer NAME [--schema N], narrowed by --pod UID, --container ID, --pid PID,\n"
			 "--namespace NS or --selector LABELS. ls lists\n"
			 "them (SOURCE: the [desired] section of the daemon's config file it comes from, or\n"
			 "api), set states one (--wait and the rows as for publish; a selector that matches\n"
			 "no process now is fine: it is for those to come), rm withdraws one and says how far\n"
			 "it had got: the processes that hold it keep it, unless --clear, which gives each what\n"
			 "applies without it (a less specific desired config, or none: a clear, back to its\n"
			 "defaults), with a row per process (--wait as for publish).\n"},
	[CMD_HEALTH] = {"health [--wait]", "the daemon's serving status",
			"The daemon's serving status; exit 0 when SERVING. With --wait, asks again until it\n"
			"serves (its socket there, its first discovery pass done), at most --timeout: for a\n"
			"daemon just started.\n"},
	[CMD_VERSION] = {"version", "this program's version", "This program's version and the API it speaks.\n"},
	[CMD_COMPLETION] = {"completion bash|zsh", "a shell's completion script",
			    "The completion script of SHELL on standard output, made from the tables this\n"
			    "program parses its arguments with: source <(procctl completion bash), or\n"
			    "`make install` puts both where bash-completion and zsh look.\n"},
};

const struct opt_program cli_program = {"procctl", "option", cli_cmds, NCMD + 1, cli_options, NOPT};

const struct opt_def cli_options[NOPT] = {
	[O_SOCKET] = {"socket", 0, "PATH", CMD_ALL},
	[O_SOCKET_UID] = {"socket-uid", 0, "UID", CMD_ALL},
	[O_SERVER] = {"server", 0, "HOST:PORT", CMD_ALL},
	[O_TLS_CA] = {"tls-ca", 0, "FILE", CMD_ALL},
	[O_TLS_CERT] = {"tls-cert", 0, "FILE", CMD_ALL},
	[O_TLS_KEY] = {"tls-key", 0, "FILE", CMD_ALL},
	[O_TLS_SERVER_NAME] = {"tls-server-name", 0, "NAME", CMD_ALL},
	[O_PLAINTEXT] = {"plaintext", 0, NULL, CMD_ALL},
	[O_TIMEOUT] = {"timeout", 0, "DUR", CMD_ALL},
	[O_OUTPUT] = {"output", 'o', "table|json", CMD_ALL},
	[O_HELP] = {"help", 'h', NULL, CMD_ALL},
	[O_PID] = {"pid", 0, "PID", SEL_CMDS | CMD_BIT(CMD_GET) | CMD_BIT(CMD_STATE)},
	[O_CONSUMER] = {"consumer", 0, "NAME", SEL_CMDS},
	[O_SCHEMA] = {"schema", 0, "N", SEL_CMDS},
	[O_POD] = {"pod", 0, "UID", SEL_CMDS},
	[O_CONTAINER] = {"container", 0, "ID", SEL_CMDS},
	[O_NAMESPACE] = {"namespace", 'n', "NS", POD_CMDS},
	[O_LABELS] = {"selector", 'l', "LABELS", POD_CMDS},
	[O_DATA] = {"data", 0, "STRING", DATA_CMDS},
	[O_FILE] = {"file", 0, "FILE", DATA_CMDS},
	[O_WAIT] = {"wait", 0, NULL, CMD_BIT(CMD_PUBLISH) | CMD_BIT(CMD_CLEAR) | CMD_BIT(CMD_DESIRED) | CMD_BIT(CMD_HEALTH)},
	[O_ALLOW_NONE] = {"allow-none", 0, NULL, CMD_BIT(CMD_PUBLISH) | CMD_BIT(CMD_CLEAR)},
	[O_CLEAR] = {"clear", 0, NULL, CMD_BIT(CMD_DESIRED)},
	[O_FROM] = {"from", 0, "TOKEN", CMD_BIT(CMD_WATCH)},
	[O_COUNT] = {"count", 0, "N", CMD_BIT(CMD_WATCH) | CMD_BIT(CMD_TOP)},
	[O_FOR] = {"for", 0, "DUR", CMD_BIT(CMD_WATCH) | CMD_BIT(CMD_TOP)},
	[O_INTERVAL] = {"interval", 0, "DUR", CMD_BIT(CMD_TOP)},
};

static const char global_help[] =
	"SELECTOR: --pid PID (alone) | --consumer NAME [--schema N] [--pod UID] [--container ID]\n"
	"  [-n|--namespace NS] [-l|--selector LABELS]\n"
	"  (--schema: the schema version; a write's default is 1, a listing's every version;\n"
	"  --namespace and --selector, as kubectl -l takes it: app=web,tier in (a,b),!canary,\n"
	"select by the pod as the Kubernetes API server sees it: the daemon's kubernetes_api)\n"
	"DATA: --data STRING | --file PATH | - (standard input)\n"
	"DUR: seconds, or with a unit: 500ms, 5s, 2m, 1h (--timeout: how long a call may take,\n"
	"default 10s, and how long --wait waits; the daemon refuses more than its max_wait_ms)\n"
	"The daemon: its Unix socket (--socket, else $PROCCTL_SOCKET, else " CLI_DEFAULT_SOCKET "), whose\n"
	"listener must run as root or this user (or --socket-uid UID, else $PROCCTL_SOCKET_UID: a daemon\n"
	"run as another user) before anything is sent to it; or\n"
	"--server HOST:PORT, its TCP listener, with TLS: --tls-ca FILE (the CA its certificate is of;\n"
	"default: the system's), --tls-cert FILE --tls-key FILE (this client's, for mTLS) and\n"
	"--tls-server-name NAME (a name its certificate carries, when HOST is not one: a pod IP);\n"
	"or --plaintext (TCP without TLS: read-only, unless the daemon allows writes).\n"
	"-o table|json (--output): aligned columns, or the API's JSON.\n"
	"Options take their value as --OPTION VALUE or --OPTION=VALUE, before or after the command;\n"
	"-- ends them.\n"
	"Exit status: 0 done, 1 failed (or a process refused or missed the config), 2 bad usage,\n"
	"3 not done in time (--wait's acks, watch's --count), 4 no process matched the selector\n"
	"(publish, clear).\n";

#define USAGE_HEAD "procctl [--socket PATH | --server HOST:PORT TLS] [--timeout DUR] [-o table|json]"

static void list_commands(FILE *f)
{
	size_t k;
	fprintf(f, "usage: " USAGE_HEAD " COMMAND ...\n");
	for (k = 0; k < NCMD; k++) {
		if (strlen(texts[k].synopsis) > 34)
			fprintf(f, "  %s\n  %-34s  %s\n", texts[k].synopsis, "", texts[k].summary);
		else
			fprintf(f, "  %-34s  %s\n", texts[k].synopsis, texts[k].summary);
	}
	fprintf(f, "Each command's own: procctl COMMAND --help\n%s", global_help);
}

/* procctl COMMAND --help, procctl help [COMMAND]: on stdout, 0. */
static int help(int cmd)
{
	if (cmd < 0) {
		list_commands(stdout);
		return 0;
	}
	printf("usage: " USAGE_HEAD " %s\n\n%s\n%s", texts[cmd].synopsis, texts[cmd].help, global_help);
	return 0;
}

int bad_usage(const char *word, const char *why)
{
	if (!word) {
		fprintf(stderr, "procctl: %s\n", why);
		list_commands(stderr);
		return 2;
	}
	fprintf(stderr, "procctl: %s: %s (procctl --help lists the commands and options)\n", word, why);
	return 2;
}

int cli_command_find(const char *name)
{
	int k;
	for (k = 0; k < NCMD; k++)
		if (!strcmp(cli_cmds[k].name, name))
			return k;
	return -1;
}

static int parse_dur(const char *s, int64_t *ms)
{
	char *end;
	double v = strtod(s, &end), unit;
	if (!strcmp(end, "ms"))
		unit = 1;
	else if (!*end || !strcmp(end, "s"))
		unit = 1000;
	else if (!strcmp(end, "m"))
		unit = 60000;
	else if (!strcmp(end, "h"))
		unit = 3600000;
	else
		return -1;
	v *= unit;
	if (end == s || !(v >= 0 && v <= 86400000)) /* at most a day; also refuses nan and inf */
		return -1;
	*ms = (int64_t)v;
	return 0;
}

int parse_int(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (!*s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

int given(const char *s)
{
	return s && *s;
}

/* A bad value, named: 2. */
static int bad_value(const char *opt, const char *val, const char *want)
{
	fprintf(stderr, "procctl: %s: '%s' is not %s\n", opt, val, want);
	return 2;
}

#define DUR_WANT "a duration (seconds, or 500ms, 5s, 2m, 1h; at most a day)"

/* One option's value into o (or cli_to): 0, or 2 (said, naming it as
 * it was given: short_name, -x; else --name). */
static int take(int id, int short_name, const char *v, struct opts *o)
{
	const struct opt_def *d = &cli_options[id];
	char as[40];
	const char **str[] = {[O_SOCKET] = &cli_to.socket, [O_SERVER] = &cli_to.server, [O_TLS_CA] = &cli_to.ca,
			      [O_TLS_CERT] = &cli_to.cert, [O_TLS_KEY] = &cli_to.key,
			      [O_TLS_SERVER_NAME] = &cli_to.server_name};
	long n;
	if (short_name)
		snprintf(as, sizeof as, "-%c", d->short_name);
	else
		snprintf(as, sizeof as, "--%s", d->name);
	switch (id) {
	case O_SOCKET: case O_SERVER: case O_TLS_CA: case O_TLS_CERT: case O_TLS_KEY: case O_TLS_SERVER_NAME:
		if (!*v)
			return bad_value(as, v, "a value");
		*str[id] = v;
		break;
	case O_SOCKET_UID:
		if (parse_int(v, 0, 0x7fffffff, &cli_to.socket_uid) < 0)
			return bad_value(as, v, "a uid (0 to 2147483647)");
		break;
	case O_PLAINTEXT: cli_to.plaintext = 1; break;
	case O_TIMEOUT:
		if (parse_dur(v, &cli_timeout_ms) < 0)
			return bad_value(as, v, DUR_WANT);
		o->timeout_given = 1;
		break;
	case O_OUTPUT:
		if (strcmp(v, "json") && strcmp(v, "table"))
			return bad_value(as, v, "table or json");
		cli_json = !strcmp(v, "json");
		break;
	case O_HELP: o->help = 1; break;
	case O_PID:
		if (parse_int(v, 1, 0x7fffffff, &n) < 0)
			return bad_value(as, v, "a pid (1 to 2147483647)");
		o->sel.pid = (int32_t)n;
		break;
	case O_CONSUMER: o->sel.consumer = (char *)v; break;
	case O_SCHEMA:
		if (parse_int(v, 1, 0x7fffffff, &n) < 0)
			return bad_value(as, v, "a schema version (1 to 2147483647)");
		o->sel.schema_version = (uint32_t)n;
		break;
	case O_POD: o->sel.pod_uid = (char *)v; break;
	case O_CONTAINER: o->sel.container_id = (char *)v; break;
	case O_NAMESPACE: o->sel.namespace_ = (char *)v; break;
	case O_LABELS: o->sel.label_selector = (char *)v; break;
	case O_DATA: o->data = v; break;
	case O_FILE: o->file = v; break;
	case O_WAIT: o->wait = 1; break;
	case O_ALLOW_NONE: o->allow_none = 1; break;
	case O_CLEAR: o->clear = 1; break;
	case O_FROM: o->from = v; break;
	case O_COUNT:
		if (parse_int(v, 1, 1L << 30, &o->count) < 0)
			return bad_value(as, v, "a count (1 to 1073741824)");
		break;
	case O_FOR:
		if (parse_dur(v, &o->for_ms) < 0 || !o->for_ms)
			return bad_value(as, v, DUR_WANT ", over 0");
		break;
	case O_INTERVAL:
		if (parse_dur(v, &o->interval_ms) < 0 || o->interval_ms < 100)
			return bad_value(as, v, DUR_WANT ", 100ms or more");
		break;
	}
	o->given |= 1ull << id;
	return 0;
}

/* getopt's optstring: "-:" (operands in order, a missing value ':'),
 * then each short name, with ':' when it takes a value. */
static const char *short_opts(void)
{
	static char buf[2 + 2 * NOPT + 1];
	size_t i, n = 0;
	if (buf[0])
		return buf;
	buf[n++] = '-';
	buf[n++] = ':';
	for (i = 0; i < NOPT; i++)
		if (cli_options[i].short_name) {
			buf[n++] = cli_options[i].short_name;
			if (cli_options[i].value)
				buf[n++] = ':';
		}
	buf[n] = 0;
	return buf;
}

/* The option whose short name is c. */
static int short_id(int c)
{
	int i;
	for (i = 0; i < NOPT && cli_options[i].short_name != c; i++)
		;
	return i;
}

/* An option getopt_long refused (word: argv[optind - 1]), said: 2. */
static int refused(const char *word, int missing)
{
	char why[256];
	opt_refusal(&cli_program, word, missing, optopt, why, sizeof why);
	fprintf(stderr, "procctl: %s (procctl --help lists the commands and options)\n", why);
	return 2;
}

/* A word that is not an option: the command, or an argument of it. */
static int operand(char *w, struct opts *o)
{
	if (o->cmd < 0 && !o->help_cmd) {
		if (!strcmp(w, "help")) {
			o->help_cmd = 1;
			return 0;
		}
		if ((o->cmd = cli_command_find(w)) < 0)
			return bad_usage(w, "no such command");
		return 0;
	}
	if (!strcmp(w, "-") && o->cmd >= 0 && (CMD_BIT(o->cmd) & DATA_CMDS)) { /* DATA from standard input */
		if (o->stdin_data)
			return bad_usage(w, "given twice");
		o->stdin_data = 1;
		return 0;
	}
	if (o->nargs >= CLI_MAX_ARGS)
		return bad_usage(w, "not expected here");
	o->args[o->nargs++] = w;
	return 0;
}

int no_operands(const struct opts *o)
{
	return o->nargs ? bad_usage(o->args[0], "not expected here") : 0;
}

/* The options the command does not take, named: 2; else 0. */
static int not_taken(const struct opts *o)
{
	size_t k;
	for (k = 0; k < NOPT; k++)
		if ((o->given >> k & 1) && !(cli_options[k].cmds & CMD_BIT(o->cmd))) {
			char what[96];
			snprintf(what, sizeof what, "not an option of %s (procctl %s --help)", cli_cmds[o->cmd].name,
				 cli_cmds[o->cmd].name);
			fprintf(stderr, "procctl: --%s: %s\n", cli_options[k].name, what);
			return 2;
		}
	return 0;
}

int cli_parse(int argc, char **argv, struct opts *o, int *done)
{
	struct option lo[NOPT + 1];
	int c, e;

	memset(o, 0, sizeof *o);
	o->interval_ms = 1000;
	procctl__v1__selector__init(&o->sel);
	o->cmd = -1;
	*done = 1;
	opt_longopts(&cli_program, lo);
	opterr = 0;
	optind = 0; /* a fresh scan, whatever ran before */
	/* "-": operands come in order, as code 1 (POSIXLY_CORRECT or not);
	 * ":": a missing value is ':' */
	while ((c = getopt_long(argc, argv, short_opts(), lo, NULL)) != -1) {
		if (c == 1)
			e = operand(optarg, o);
		else if (c == '?' || c == ':')
			e = refused(argv[optind - 1], c == ':');
		else
			e = take(c >= OPT_VAL(0) ? c - OPT_VAL(0) : short_id(c), c < OPT_VAL(0), optarg, o);
		if (e)
			return e;
	}
	for (; optind < argc; optind++) /* after "--" */
		if ((e = operand(argv[optind], o)))
			return e;
	if (o->help_cmd) {
		if (o->nargs > 1 || o->cmd >= 0 || (o->nargs && cli_command_find(o->args[0]) < 0))
			return bad_usage(o->nargs ? o->args[o->nargs - 1] : "help", o->nargs > 1 ? "not expected here"
										 : "no such command");
		return help(o->nargs ? cli_command_find(o->args[0]) : -1);
	}
	if (o->help)
		return help(o->cmd);
	if (o->cmd < 0)
		return bad_usage(NULL, "no command");
	if ((e = not_taken(o)))
		return e;
	if (o->sel.pid && o->cmd != CMD_DESIRED && (o->given & CLI_SEL_OPTS & ~(1ull << O_PID))) {
		fprintf(stderr, "procctl: --pid names one process: give it alone, or select with --consumer NAME "
				"[--schema N] [--pod UID] [--container ID] [--namespace NS] [--selector LABELS]\n");
		return 2;
	}
	/* A write is for one schema version: 1 unless said; a listing's
	 * filter, every version unless said. */
	if (given(o->sel.consumer) && !o->sel.schema_version && o->cmd != CMD_PS && o->cmd != CMD_WATCH)
		o->sel.schema_version = 1;
	*done = 0;
	return 0;
}
