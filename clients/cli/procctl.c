/* SPDX-License-Identifier: Apache-2.0 */
/* procctl - the command line of procctl-node, on the gRPC C core over the
 * daemon's Unix socket (like crictl for a container runtime), or over TCP
 * with mTLS from anywhere in the cluster (connect.c).
 *
 * Usage: procctl [--socket PATH | --server HOST:PORT TLS] [--timeout DUR] [-o table|json] COMMAND ...
 *   ps [SELECTOR]                      the attached processes
 *   get PID | state PID                one process; its state block
 *   publish SELECTOR DATA [--wait]     write a config (DATA: --data STR | --file F | -)
 *   clear SELECTOR [--wait]            withdraw it
 *   watch [SELECTOR] [--from TOKEN] [--count N]   events, as they come
 *   resources [KIND]                   the exclusive-resource arbiters
 *   desired ls | set SELECTOR DATA [--wait] | rm SELECTOR
 *   health | version
 * SELECTOR: --pid PID | --consumer C [--schema N] [--pod UID] [--container ID]
 * The socket: --socket, else $PROCCTL_SOCKET, else /run/procctl/node.sock.
 * TLS: --tls-ca FILE [--tls-cert FILE --tls-key FILE] [--tls-server-name NAME],
 * or --plaintext.
 * Exit status: 0 done; 1 failed (the daemon's status is printed, or a
 * process refused the config or was not written); 2 bad usage; 3 written
 * but not acked in time (--wait); 4 no process matched the selector
 * (publish, clear; --allow-none makes that 0). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/log.h>
#include <grpc/support/time.h>

#include "cli.h"
#include "pb_grpc.h"
#include "pbjson.h"

#define DEFAULT_SOCKET "/run/procctl/node.sock"
#define USAGE_HEAD "procctl [--socket PATH | --server HOST:PORT TLS] [--timeout DUR] [-o table|json]"
#define DATA_MAX (4u << 20) /* configs are at most 1 MiB (PROCCTL_PAYLOAD_MAX): more is a mistake */

int64_t cli_timeout_ms = 10000;
int cli_json;

/* Every command: its synopsis, a line for the list, and its --help. */
static const struct command {
	const char *name, *synopsis, *summary, *help;
} commands[] = {
	{"ps", "ps [SELECTOR]", "the attached processes",
	 "The attached processes (of SELECTOR only, when given): pid, consumer, schema version,\n"
	 "pod UID, container ID, owner (owned or passive), config generation, acked generation\n"
	 "and how it was acked.\n"},
	{"get", "get [--pid] PID", "one process", "One attached process, with its NSpid list, instance id, QoS class and lease.\n"},
	{"state", "state [--pid] PID", "its state block: ack, resources, status bytes",
	 "The process's state block, read now: its last ack, its resource reports and its\n"
	 "status bytes.\n"},
	{"publish", "publish SELECTOR DATA [--wait] [--allow-none]", "write a config",
	 "Write DATA as the config of the selected processes (the set is fixed when the call\n"
	 "starts). With --wait, wait up to --timeout for their acks. One row per process:\n"
	 "APPLIED, REJECTED (PSTATUS names the process's errno), PENDING, SUPERSEDED,\n"
	 "NOT_OWNER or GONE; without --wait, WRITTEN. A selector that matches no process\n"
	 "is an error (exit 4) unless --allow-none.\n"},
	{"clear", "clear SELECTOR [--wait] [--allow-none]", "withdraw it (the process falls back to its defaults)",
	 "Withdraw the config of the selected processes: each sees no config once and falls\n"
	 "back to its defaults. --wait, --allow-none and the rows as for publish.\n"},
	{"watch", "watch [SELECTOR] [--from TOKEN] [--count N]", "events as they come (a snapshot first, unless --from)",
	 "Events as they come: a snapshot of the attached processes first, then attached,\n"
	 "detached, acked, state changes, ownership changes, grants and releases, each with its\n"
	 "resume token. --from TOKEN continues after that event instead of a snapshot; --count N\n"
	 "stops after N events. -o json prints one JSON document per line.\n"},
	{"resources", "resources [KIND]", "exclusive resources: holders, blocked time",
	 "Every exclusive resource (of arbiter KIND only, when given: its name, or its number):\n"
	 "holder, time held, blocked and pending-release seconds, hand-offs and waiters. KIND\n"
	 "with no arbiter: NOT_FOUND.\n"},
	{"desired", "desired ls | set DSELECTOR DATA [--wait] | rm DSELECTOR",
	 "desired configs (kept by the daemon, given on attach)",
	 "Desired configs: stated once, given to the processes that match now and to every\n"
	 "process that attaches later (pid over container over pod over consumer). DSELECTOR:\n"
	 "--consumer NAME [--schema N], narrowed by --pod UID, --container ID or --pid PID. ls lists\n"
	 "them (SOURCE: the [desired] section of the daemon's config file it comes from, or\n"
	 "api), set states one (--wait and the rows as for publish; a selector that matches\n"
	 "no process now is fine: it is for those to come), rm withdraws one.\n"},
	{"health", "health", "the daemon's serving status", "The daemon's serving status; exit 0 when SERVING.\n"},
	{"version", "version", "this program's version", "This program's version and the API it speaks.\n"},
};

#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const char global_help[] =
	"SELECTOR: --pid PID (alone) | --consumer NAME [--schema N (default 1)] [--pod UID] [--container ID]\n"
	"DATA: --data STRING | --file PATH | - (standard input)\n"
	"DUR: seconds, or with a unit: 500ms, 5s, 2m, 1h (default 10s; --wait waits this long;\n"
	"the daemon refuses more than its max_wait_ms)\n"
	"The daemon: its Unix socket (--socket, else $PROCCTL_SOCKET, else " DEFAULT_SOCKET "), or\n"
	"--server HOST:PORT, its TCP listener, with TLS: --tls-ca FILE (the CA its certificate is of;\n"
	"default: the system's), --tls-cert FILE --tls-key FILE (this client's, for mTLS) and\n"
	"--tls-server-name NAME (a name its certificate carries, when HOST is not one: a pod IP);\n"
	"or --plaintext (TCP without TLS: read-only, unless the daemon allows writes).\n"
	"These options may come before the command or after it.\n"
	"Exit status: 0 done, 1 failed (or a process refused or missed the config), 2 bad usage,\n"
	"3 not acked in time (--wait), 4 no process matched the selector (publish, clear).\n";

static void list_commands(FILE *f)
{
	size_t k;
	fprintf(f, "usage: " USAGE_HEAD " COMMAND ...\n");
	for (k = 0; k < NCOMMANDS; k++) {
		if (strlen(commands[k].synopsis) > 34)
			fprintf(f, "  %s\n  %-34s  %s\n", commands[k].synopsis, "", commands[k].summary);
		else
			fprintf(f, "  %-34s  %s\n", commands[k].synopsis, commands[k].summary);
	}
	fprintf(f, "Each command's own: procctl COMMAND --help\n%s", global_help);
}

/* An option of a command that takes the next argument as its value. */
static int takes_value(const char *a)
{
	static const char *const with[] = {"--pid", "--consumer", "--schema", "--pod", "--container",
					   "--data", "--file", "--from", "--count"};
	if (!a)
		return 0;
	size_t k;
	for (k = 0; k < sizeof with / sizeof with[0]; k++)
		if (!strcmp(a, with[k]))
			return 1;
	return 0;
}

/* Bad usage: the list on stderr, and 2. */
static int usage(void)
{
	list_commands(stderr);
	return 2;
}

/* Bad usage, the word at fault named first (word NULL: none), then the
 * list: 2. */
int bad_usage(const char *word, const char *why)
{
	if (!word) {
		fprintf(stderr, "procctl: %s\n", why);
		return usage();
	}
	fprintf(stderr, "procctl: %s: %s (procctl --help lists the commands and options)\n", word, why);
	return 2;
}

static int is_command(const char *name)
{
	size_t k;
	for (k = 0; k < NCOMMANDS; k++)
		if (!strcmp(commands[k].name, name))
			return 1;
	return 0;
}

/* procctl COMMAND --help, procctl help [COMMAND]: on stdout, 0. */
static int help(const char *name)
{
	size_t k;
	if (!name) {
		list_commands(stdout);
		return 0;
	}
	for (k = 0; k < NCOMMANDS; k++)
		if (!strcmp(commands[k].name, name)) {
			printf("usage: " USAGE_HEAD " %s\n\n%s\n%s",
			       commands[k].synopsis, commands[k].help, global_help);
			return 0;
		}
	return bad_usage(name, "no such command");
}

static gpr_timespec deadline(void)
{
	return gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_millis(cli_timeout_ms + 2000, GPR_TIMESPAN));
}

unsigned cli_last_status;

/* One unary call: the response, or NULL after printing the failure. */
ProtobufCMessage *call(const char *method, const ProtobufCMessage *req, const ProtobufCMessageDescriptor *rd)
{
	ProtobufCMessage *resp;
	grpc_status_code st;
	char *d = NULL;
	if (connect_once() < 0)
		return NULL;
	st = pb_unary(cli_ch, cli_cq, method, deadline(), req, rd, &resp, &d);
	cli_last_status = (unsigned)st;
	if (st == GRPC_STATUS_OK && !resp)
		fprintf(stderr, "procctl: the response does not parse\n");
	if (st != GRPC_STATUS_OK)
		fprintf(stderr, "procctl: %s: %s\n", rpc_status_name((unsigned)st),
			st == GRPC_STATUS_UNAVAILABLE && (!d || !*d) ? "no daemon answers there" : d ? d : "");
	if (st == GRPC_STATUS_UNAVAILABLE)
		fprintf(stderr, "procctl: (at %s%s%s)\n", target_name(), unavailable_hint(d) ? ": " : "",
			unavailable_hint(d) ? unavailable_hint(d) : "");
	gpr_free(d);
	return resp;
}

int print_json(const ProtobufCMessage *m)
{
	json_t *j = pbjson_from(m);
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (!s)
		return 1;
	printf("%s\n", s);
	free(s);
	return 0;
}

/* ---- options ------------------------------------------------------------ */


static int parse_dur(const char *s, int64_t *ms)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || !(v >= 0 && v <= 86400)) /* also refuses nan and inf */
		return -1;
	if (!strcmp(end, "ms"))
		*ms = (int64_t)v;
	else if (!*end || !strcmp(end, "s"))
		*ms = (int64_t)(v * 1000);
	else if (!strcmp(end, "m"))
		*ms = (int64_t)(v * 60000);
	else if (!strcmp(end, "h"))
		*ms = (int64_t)(v * 3600000);
	else
		return -1;
	return *ms <= 86400000 ? 0 : -1;
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

/* A string option given (protobuf-c's default is "", not NULL). */
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

/* The options after a subcommand: 0, or 2 (usage, said). pid_alone: a
 * --pid selector takes no other selector option (a desired config's
 * pid selector goes with its consumer). */
int parse_opts(int argc, char **argv, struct opts *o, int pid_alone)
{
	int i;
	long v;
	memset(o, 0, sizeof *o);
	procctl__v1__selector__init(&o->sel);
	for (i = 0; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-")) {
			o->stdin_data = 1;
			continue;
		}
		if (!strcmp(a, "--wait") || !strcmp(a, "--allow-none")) {
			*(a[2] == 'w' ? &o->wait : &o->allow_none) = 1;
			continue;
		}
		if (!takes_value(a)) {
			fprintf(stderr, "procctl: %s: %s\n", a, a[0] == '-' ? "no such option" : "not expected here");
			return 2;
		}
		if (!val) {
			fprintf(stderr, "procctl: %s: needs a value\n", a);
			return 2;
		}
		if (!strcmp(a, "--pid")) {
			if (parse_int(val, 1, 0x7fffffff, &v) < 0)
				return bad_value(a, val, "a pid (1 to 2147483647)");
			o->sel.pid = (int32_t)v;
		} else if (!strcmp(a, "--consumer")) {
			o->sel.consumer = (char *)val;
			if (!o->sel.schema_version)
				o->sel.schema_version = 1;
		} else if (!strcmp(a, "--schema")) {
			if (parse_int(val, 1, 0x7fffffff, &v) < 0)
				return bad_value(a, val, "a schema version (1 to 2147483647)");
			o->sel.schema_version = (uint32_t)v;
			o->schema_given = 1;
		} else if (!strcmp(a, "--pod")) {
			o->sel.pod_uid = (char *)val;
		} else if (!strcmp(a, "--container")) {
			o->sel.container_id = (char *)val;
		} else if (!strcmp(a, "--data")) {
			o->data = val;
		} else if (!strcmp(a, "--file")) {
			o->file = val;
		} else if (!strcmp(a, "--from")) {
			o->from = val;
		} else if (!strcmp(a, "--count")) {
			if (parse_int(val, 1, 1L << 30, &o->count) < 0)
				return bad_value(a, val, "a count (1 to 1073741824)");
		}
		o->have_sel |= !strcmp(a, "--pid") || !strcmp(a, "--consumer") || !strcmp(a, "--pod") ||
			       !strcmp(a, "--container");
		i++;
	}
	if (pid_alone && o->sel.pid && (given(o->sel.consumer) || o->schema_given || given(o->sel.pod_uid) || given(o->sel.container_id))) {
		fprintf(stderr, "procctl: --pid names one process: give it alone, or select with --consumer NAME "
				"[--schema N] [--pod UID] [--container ID]\n");
		return 2;
	}
	return 0;
}

/* The payload of DATA: malloc'd into *out; 0, or 1 (said). */
int read_data(const struct opts *o, ProtobufCBinaryData *out)
{
	int fd, r;
	if (!!o->data + !!o->file + o->stdin_data != 1) {
		fprintf(stderr, "procctl: give the config once: --data STRING, --file PATH or -\n");
		return 2;
	}
	if (o->data) {
		out->len = strlen(o->data);
		out->data = (uint8_t *)strdup(o->data);
		return out->data ? 0 : 1;
	}
	fd = o->file ? open(o->file, O_RDONLY | O_CLOEXEC) : 0;
	if (fd < 0) {
		fprintf(stderr, "procctl: %s: %s\n", o->file, strerror(errno));
		return 1;
	}
	r = read_all(fd, DATA_MAX, &out->data, &out->len);
	if (fd > 0)
		close(fd);
	if (r == -EFBIG)
		fprintf(stderr, "procctl: the config is over %u bytes\n", DATA_MAX);
	else if (r < 0)
		fprintf(stderr, "procctl: %s: %s\n", o->file ? o->file : "standard input", strerror(-r));
	return r < 0;
}

/* The option before the command that sets a string of cli_to, or NULL. */
static const char **global_str(const char *a)
{
	return !strcmp(a, "--socket") ? &cli_to.socket : !strcmp(a, "--server") ? &cli_to.server :
	       !strcmp(a, "--tls-ca") ? &cli_to.ca : !strcmp(a, "--tls-cert") ? &cli_to.cert :
	       !strcmp(a, "--tls-key") ? &cli_to.key : !strcmp(a, "--tls-server-name") ? &cli_to.server_name : NULL;
}

/* A global option a (its value v, or NULL): -1 when a is none; else 0
 * with *used the arguments it took (1 or 2), or 2 (usage, said). */
static int take_global(const char *a, const char *v, int *used)
{
	const char **str = global_str(a);

	*used = 1;
	if (!strcmp(a, "--plaintext")) {
		cli_to.plaintext = 1;
		return 0;
	}
	if (!str && strcmp(a, "--timeout") && strcmp(a, "-o"))
		return -1;
	if (!v)
		return bad_usage(a, "needs a value");
	*used = 2;
	if (str) {
		if (!*v)
			return bad_value(a, v, "a value");
		*str = v;
	} else if (!strcmp(a, "--timeout")) {
		if (parse_dur(v, &cli_timeout_ms) < 0)
			return bad_value(a, v, "a duration (seconds, or 500ms, 5s, 2m, 1h; at most a day)");
	} else {
		if (strcmp(v, "json") && strcmp(v, "table"))
			return bad_value(a, v, "table or json");
		cli_json = !strcmp(v, "json");
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd;
	struct opts o;
	int i, e, used;

	for (i = 1; i < argc && argv[i][0] == '-'; i += used) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return help(NULL);
		e = take_global(argv[i], argv[i + 1], &used);
		if (e < 0)
			return bad_usage(argv[i], "no such option (global: --socket, --server, --tls-ca, --tls-cert, "
						  "--tls-key, --tls-server-name, --plaintext, --timeout, -o)");
		if (e)
			return e;
	}
	if (i >= argc)
		return bad_usage(NULL, "no command");
	cmd = argv[i++];
	if (!strcmp(cmd, "help"))
		return i + 1 < argc ? bad_usage(argv[i + 1], "not expected here") : help(i < argc ? argv[i] : NULL);
	if (!is_command(cmd))
		return bad_usage(cmd, "no such command");
	/* A global option after the command is taken too, and taken out. */
	for (e = i; e < argc; e++) {
		int g;
		if (!strcmp(argv[e], "--help") || !strcmp(argv[e], "-h"))
			return help(cmd);
		if ((g = take_global(argv[e], argv[e + 1], &used)) > 0)
			return g;
		if (g == 0) {
			memmove(argv + e, argv + e + used, (size_t)(argc - e - used + 1) * sizeof *argv);
			argc -= used;
			e--;
			continue;
		}
		e += takes_value(argv[e]); /* --data --help is data */
	}
	if (!strcmp(cmd, "version")) {
		printf(cli_json ? "{\"version\":\"%s\",\"api\":\"procctl.v1\"}\n" : "procctl %s (API procctl.v1)\n",
		       PROCCTL_VERSION_STRING);
		return 0;
	}
	if ((e = target_check()))
		return e;
	if (!cli_to.server && !cli_to.socket)
		cli_to.socket = getenv("PROCCTL_SOCKET") && *getenv("PROCCTL_SOCKET") ? getenv("PROCCTL_SOCKET") : DEFAULT_SOCKET;
	if (!strcmp(cmd, "get"))
		e = cmd_get(argc - i, argv + i);
	else if (!strcmp(cmd, "state"))
		e = cmd_state(argc - i, argv + i);
	else if (!strcmp(cmd, "resources"))
		e = cmd_resources(argc - i, argv + i);
	else if (!strcmp(cmd, "desired"))
		e = cmd_desired(argc - i, argv + i);
	else if (!strcmp(cmd, "health"))
		e = cmd_health();
	else if ((e = parse_opts(argc - i, argv + i, &o, 1)))
		; /* usage, said */
	else if (!strcmp(cmd, "ps"))
		e = cmd_ps(&o);
	else if (!strcmp(cmd, "publish"))
		e = cmd_publish(&o, 0);
	else if (!strcmp(cmd, "clear"))
		e = cmd_publish(&o, 1);
	else
		e = cmd_watch(&o);
	if (cli_ch) {
		grpc_channel_destroy(cli_ch);
		grpc_completion_queue_shutdown(cli_cq);
		grpc_completion_queue_destroy(cli_cq);
		grpc_shutdown_blocking();
	}
	return e;
}
