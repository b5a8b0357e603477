/* procctl - the command line of procctl-node, on the gRPC C core over the
 * daemon's Unix socket (like crictl for a container runtime).
 *
 * Usage: procctl [--socket PATH] [--timeout DUR] [-o table|json] COMMAND ...
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

#include "grpc/health/v1/health.pb-c.h"
#include "pb_grpc.h"
#include "pbjson.h"
#include "procctl/v1/node.pb-c.h"

#define EXIT_PENDING 3
#define EXIT_NONE 4
#define DEFAULT_SOCKET "/run/procctl/node.sock"
#define DATA_MAX (4u << 20) /* configs are at most 1 MiB (PROCCTL_PAYLOAD_MAX): more is a mistake */

static grpc_channel *ch;
static grpc_completion_queue *cq;
static const char *sock;
static int64_t timeout_ms = 10000;
static int json_out;

/* Every command: its synopsis, a line for the list, and its --help. */
static const struct command {
	const char *name, *synopsis, *summary, *help;
} commands[] = {
	{"ps", "ps [SELECTOR]", "the attached processes",
	 "The attached processes (of SELECTOR only, when given): pid, consumer, schema version,\n"
	 "pod UID, container ID, owner (owned or passive), config generation, acked generation\n"
	 "and how it was acked.\n"},
	{"get", "get PID", "one process", "One attached process, with its NSpid list, instance id, QoS class and lease.\n"},
	{"state", "state PID", "its state block: ack, resources, status bytes",
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
	 "Every exclusive resource (of arbiter KIND only, when given): holder, time held,\n"
	 "blocked and pending-release seconds, hand-offs and waiters. KIND with no arbiter:\n"
	 "NOT_FOUND.\n"},
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
	"DUR: seconds, or with a unit: 500ms, 5s, 2m (default 10s; --wait waits this long)\n"
	"The socket: --socket, else $PROCCTL_SOCKET, else " DEFAULT_SOCKET ".\n"
	"Exit status: 0 done, 1 failed (or a process refused or missed the config), 2 bad usage,\n"
	"3 not acked in time (--wait), 4 no process matched the selector (publish, clear).\n";

static void list_commands(FILE *f)
{
	size_t k;
	fprintf(f, "usage: procctl [--socket PATH] [--timeout DUR] [-o table|json] COMMAND ...\n");
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
static int bad_usage(const char *word, const char *why)
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
			printf("usage: procctl [--socket PATH] [--timeout DUR] [-o table|json] %s\n\n%s\n%s",
			       commands[k].synopsis, commands[k].help, global_help);
			return 0;
		}
	return bad_usage(name, "no such command");
}

static gpr_timespec deadline(void)
{
	return gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_millis(timeout_ms + 2000, GPR_TIMESPAN));
}

/* The channel to the daemon, made on first use (so bad usage is told
 * apart from a missing daemon): 0, or -1 after saying why. */
static int connect_once(void)
{
	char target[300];
	grpc_channel_credentials *cr;
	if (ch)
		return 0;
	if (access(sock, F_OK) < 0) {
		fprintf(stderr, "procctl: %s: %s (is procctl-node running? --socket or $PROCCTL_SOCKET name another)\n",
			sock, strerror(errno));
		return -1;
	}
	snprintf(target, sizeof target, "unix:%s", sock);
	gpr_set_log_verbosity(GPR_LOG_SEVERITY_ERROR);
	grpc_init();
	cr = grpc_insecure_credentials_create();
	ch = grpc_channel_create(target, cr, NULL);
	grpc_channel_credentials_release(cr);
	cq = grpc_completion_queue_create_for_pluck(NULL);
	return 0;
}

/* One unary call: the response, or NULL after printing the failure. */
static ProtobufCMessage *call(const char *method, const ProtobufCMessage *req, const ProtobufCMessageDescriptor *rd)
{
	ProtobufCMessage *resp;
	grpc_status_code st;
	char *d = NULL;
	if (connect_once() < 0)
		return NULL;
	st = pb_unary(ch, cq, method, deadline(), req, rd, &resp, &d);
	if (st == GRPC_STATUS_OK && !resp)
		fprintf(stderr, "procctl: the response does not parse\n");
	if (st != GRPC_STATUS_OK)
		fprintf(stderr, "procctl: %s: %s\n", pb_status_name((unsigned)st),
			st == GRPC_STATUS_UNAVAILABLE && (!d || !*d) ? "no daemon answers on the socket" : d ? d : "");
	gpr_free(d);
	return resp;
}

static int print_json(const ProtobufCMessage *m)
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

struct opts {
	Procctl__V1__Selector sel;
	int have_sel, schema_given;
	const char *data, *file, *from;
	int stdin_data, wait, allow_none;
	long count;
};

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
	else
		return -1;
	return 0;
}

static int parse_int(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (!*s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* A string option given (protobuf-c's default is "", not NULL). */
static int given(const char *s)
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
static int parse_opts(int argc, char **argv, struct opts *o, int pid_alone)
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
static int read_data(const struct opts *o, ProtobufCBinaryData *out)
{
	size_t cap = 4096, len = 0;
	ssize_t n;
	int fd;
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
	out->data = malloc(cap);
	while (out->data && (n = read(fd, out->data + len, cap - len)) > 0) {
		len += (size_t)n;
		if (len == cap) {
			uint8_t *more = cap < DATA_MAX ? realloc(out->data, cap * 2) : NULL;
			if (!more) {
				fprintf(stderr, "procctl: the config is over %u bytes\n", DATA_MAX);
				free(out->data);
				out->data = NULL;
				break;
			}
			out->data = more;
			cap *= 2;
		}
	}
	if (fd > 0)
		close(fd);
	out->len = len;
	return out->data ? 0 : 1;
}

/* ---- output -------------------------------------------------------------- */

static const char *short_enum(const ProtobufCEnumDescriptor *d, int v, const char *prefix)
{
	const ProtobufCEnumValue *e = protobuf_c_enum_descriptor_get_value(d, v);
	size_t n = strlen(prefix);
	if (!e)
		return "?";
	return strncmp(e->name, prefix, n) ? e->name : e->name + n;
}

/* A process's errno as its name (EINVAL), "-" for none. */
static const char *errno_name(int32_t status, char buf[16])
{
	const char *n = status < 0 && status > -4096 ? strerrorname_np((int)-status) : NULL;
	if (!status)
		return "-";
	if (n)
		return n;
	snprintf(buf, 16, "%d", (int)status);
	return buf;
}

/* The rows of a Publish or Clear: the exit status: 1 if a process refused
 * it or was not written, else 3 if one did not ack in time (with --wait),
 * else 0. */
static int results(Procctl__V1__PublishResult **r, size_t n, int wait)
{
	int pending = 0, failed = 0;
	size_t i;
	if (!json_out)
		printf("%-8s %-16s %-6s %-11s %-8s %s\n", "PID", "INSTANCE", "GEN", "STATUS", "PSTATUS", "ERROR");
	for (i = 0; i < n; i++) {
		char num[16];
		switch (r[i]->status) {
		case PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_PENDING:
			pending = 1;
			break;
		case PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_APPLIED:
		case PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_SUPERSEDED:
		case PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_WRITTEN:
			break;
		default:
			failed = 1;
		}
		if (!json_out)
			printf("%-8d %-16s %-6llu %-11s %-8s %s\n", r[i]->process ? r[i]->process->pid : 0,
			       r[i]->process && r[i]->process->instance_id[0] ? r[i]->process->instance_id : "-",
			       (unsigned long long)r[i]->generation,
			       short_enum(&procctl__v1__publish_status__descriptor, r[i]->status, "PUBLISH_STATUS_"),
			       errno_name(r[i]->process_status, num), r[i]->error);
	}
	return failed ? 1 : wait && pending ? EXIT_PENDING : 0;
}

/* The selector as the user gave it, for messages. */
static const char *selector_words(const struct opts *o)
{
	static char buf[512];
	size_t n = 0;
	buf[0] = 0;
	if (o->sel.pid)
		return snprintf(buf, sizeof buf, "--pid %d", o->sel.pid), buf;
	if (given(o->sel.consumer))
		n += (size_t)snprintf(buf + n, sizeof buf - n, "--consumer %s --schema %u", o->sel.consumer,
				      o->sel.schema_version);
	if (given(o->sel.pod_uid) && n < sizeof buf)
		n += (size_t)snprintf(buf + n, sizeof buf - n, "%s--pod %s", n ? " " : "", o->sel.pod_uid);
	if (given(o->sel.container_id) && n < sizeof buf)
		snprintf(buf + n, sizeof buf - n, "%s--container %s", n ? " " : "", o->sel.container_id);
	return buf;
}

/* A resource id of 16 bytes (a GPU UUID) as a UUID, others in hex (at
 * most 32 bytes shown). */
static const char *resource_id(const ProtobufCBinaryData *id, char buf[80])
{
	size_t k, o = 0;
	buf[0] = 0;
	for (k = 0; k < id->len && k < 32; k++)
		o += (size_t)snprintf(buf + o, 80 - o, "%s%02x",
				      id->len == 16 && (k == 4 || k == 6 || k == 8 || k == 10) ? "-" : "", id->data[k]);
	return buf;
}

static void show_process(const Procctl__V1__Process *p)
{
	printf("%-8d %-16s %-3u %-36s %-12.12s %-7s %-6llu %-6llu %s\n", p->ref ? p->ref->pid : 0, p->consumer,
	       p->schema_version, p->pod_uid[0] ? p->pod_uid : "-", p->container_id[0] ? p->container_id : "-",
	       p->lease_state == PROCCTL__V1__LEASE_STATE__LEASE_STATE_LIVE ? "owned" : "passive",
	       (unsigned long long)p->generation, (unsigned long long)p->acked_generation,
	       p->ack_result ? short_enum(&procctl__v1__ack_result__descriptor, p->ack_result, "ACK_RESULT_") : "-");
}

static void process_header(void)
{
	printf("%-8s %-16s %-3s %-36s %-12s %-7s %-6s %-6s %s\n", "PID", "CONSUMER", "VER", "POD", "CONTAINER",
	       "OWNER", "GEN", "ACKED", "ACK");
}

static int printable(const uint8_t *p, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		if (p[i] < 0x20 || p[i] > 0x7e)
			return 0;
	return 1;
}

/* ---- commands ------------------------------------------------------------ */

static int cmd_ps(const struct opts *o)
{
	Procctl__V1__ListProcessesRequest rq = PROCCTL__V1__LIST_PROCESSES_REQUEST__INIT;
	Procctl__V1__ListProcessesResponse *r;
	size_t i;
	rq.filter = (Procctl__V1__Selector *)&o->sel;
	if (!(r = (void *)call("/procctl.v1.NodeService/ListProcesses", &rq.base,
			       &procctl__v1__list_processes_response__descriptor)))
		return 1;
	if (json_out) {
		print_json(&r->base);
	} else {
		process_header();
		for (i = 0; i < r->n_processes; i++)
			show_process(r->processes[i]);
	}
	protobuf_c_message_free_unpacked(&r->base, NULL);
	return 0;
}

static int one_pid(int argc, char **argv, Procctl__V1__ProcessRef *ref)
{
	long pid;
	if (argc != 1 || parse_int(argv[0], 1, 0x7fffffff, &pid) < 0) {
		fprintf(stderr, "procctl: give one PID\n");
		return 2;
	}
	ref->pid = (int32_t)pid;
	return 0;
}

static int cmd_get(int argc, char **argv)
{
	Procctl__V1__GetProcessRequest rq = PROCCTL__V1__GET_PROCESS_REQUEST__INIT;
	Procctl__V1__ProcessRef ref = PROCCTL__V1__PROCESS_REF__INIT;
	Procctl__V1__GetProcessResponse *r;
	int e;
	if ((e = one_pid(argc, argv, &ref)))
		return e;
	rq.process = &ref;
	if (!(r = (void *)call("/procctl.v1.NodeService/GetProcess", &rq.base, &procctl__v1__get_process_response__descriptor)))
		return 1;
	if (json_out) {
		print_json(&r->base);
	} else {
		process_header();
		show_process(r->process);
	}
	protobuf_c_message_free_unpacked(&r->base, NULL);
	return 0;
}

static int cmd_state(int argc, char **argv)
{
	Procctl__V1__ReadStateRequest rq = PROCCTL__V1__READ_STATE_REQUEST__INIT;
	Procctl__V1__ProcessRef ref = PROCCTL__V1__PROCESS_REF__INIT;
	Procctl__V1__ReadStateResponse *r;
	size_t i;
	int e;
	if ((e = one_pid(argc, argv, &ref)))
		return e;
	rq.process = &ref;
	if (!(r = (void *)call("/procctl.v1.NodeService/ReadState", &rq.base, &procctl__v1__read_state_response__descriptor)))
		return 1;
	if (json_out) {
		print_json(&r->base);
	} else {
		char num[16];
		if (r->ack_result)
			printf("acked:     %llu %s (%s)\n", (unsigned long long)r->acked_generation,
			       short_enum(&procctl__v1__ack_result__descriptor, r->ack_result, "ACK_RESULT_"),
			       r->ack_status ? errno_name(r->ack_status, num) : "status 0");
		else
			printf("acked:     -\n");
		for (i = 0; i < r->n_resources; i++) {
			const Procctl__V1__ResourceReport *x = r->resources[i];
			char id[80];
			printf("resource:  %s:%s %s%s grant=%s seen=%llu\n", x->kind, resource_id(&x->id, id),
			       short_enum(&procctl__v1__resource_state__descriptor, x->state, "RESOURCE_STATE_"),
			       x->wants ? " wants" : "", x->grant_id[0] ? x->grant_id : "-",
			       (unsigned long long)x->seen_generation);
		}
		if (printable(r->data.data, r->data.len))
			printf("data:      %.*s\n", (int)r->data.len, (const char *)r->data.data);
		else
			printf("data:      %zu bytes (not text: -o json shows them in base64)\n", r->data.len);
	}
	protobuf_c_message_free_unpacked(&r->base, NULL);
	return 0;
}

static int need_selector(const struct opts *o)
{
	if (!o->have_sel) {
		fprintf(stderr, "procctl: name the processes: --pid PID, or --consumer NAME [--schema N] [--pod UID] "
				"[--container ID]\n");
		return 2;
	}
	return 0;
}

static int cmd_publish(const struct opts *o, int clear)
{
	Procctl__V1__PublishRequest pq = PROCCTL__V1__PUBLISH_REQUEST__INIT;
	Procctl__V1__ClearRequest cq_ = PROCCTL__V1__CLEAR_REQUEST__INIT;
	Procctl__V1__PublishResponse *r;
	ProtobufCBinaryData data = {0, NULL};
	uint32_t wait = o->wait ? (uint32_t)timeout_ms : 0;
	int e;
	if ((e = need_selector(o)) || (!clear && (e = read_data(o, &data))))
		return e;
	if (clear) {
		cq_.selector = (Procctl__V1__Selector *)&o->sel;
		cq_.wait_ms = wait;
		/* ClearResponse and PublishResponse have one wire format */
		r = (void *)call("/procctl.v1.NodeService/Clear", &cq_.base, &procctl__v1__publish_response__descriptor);
	} else {
		pq.selector = (Procctl__V1__Selector *)&o->sel;
		pq.payload = data;
		pq.wait_ms = wait;
		r = (void *)call("/procctl.v1.NodeService/Publish", &pq.base, &procctl__v1__publish_response__descriptor);
	}
	free(data.data);
	if (!r)
		return 1;
	if (!r->n_results && !o->allow_none) {
		if (json_out)
			print_json(&r->base);
		fprintf(stderr, "procctl: no attached process matches %s (--allow-none accepts that)\n",
			selector_words(o));
		protobuf_c_message_free_unpacked(&r->base, NULL);
		return EXIT_NONE;
	}
	e = results(r->results, r->n_results, o->wait);
	if (json_out)
		print_json(&r->base);
	protobuf_c_message_free_unpacked(&r->base, NULL);
	return e;
}

static void arbiter_rows(const Procctl__V1__Arbiter *a)
{
	size_t j;
	for (j = 0; j < a->n_resources; j++) {
		const Procctl__V1__ArbiterResource *x = a->resources[j];
		char id[80];
		printf("%-8s %-36s %-8d %-9.3f %-10.3f %-10.3f %-9llu %u\n", a->kind, resource_id(&x->id, id),
		       x->holder ? x->holder->pid : 0, (double)x->held_ns / 1e9,
		       (double)x->blocked_ns_total / 1e9, (double)x->pending_ns_total / 1e9, (unsigned long long)x->handoffs,
		       x->waiters);
	}
}

/* resources: every arbiter (ListArbiters), or one kind's (GetArbiter:
 * NOT_FOUND when the daemon runs none for it). */
static int cmd_resources(int argc, char **argv)
{
	ProtobufCMessage *r;
	size_t i;
	if (argc > 1) {
		fprintf(stderr, "procctl: resources [KIND]\n");
		return 2;
	}
	if (argc == 1) {
		Procctl__V1__GetArbiterRequest rq = PROCCTL__V1__GET_ARBITER_REQUEST__INIT;
		rq.kind = argv[0];
		r = call("/procctl.v1.NodeService/GetArbiter", &rq.base, &procctl__v1__get_arbiter_response__descriptor);
	} else {
		Procctl__V1__ListArbitersRequest rq = PROCCTL__V1__LIST_ARBITERS_REQUEST__INIT;
		r = call("/procctl.v1.NodeService/ListArbiters", &rq.base, &procctl__v1__list_arbiters_response__descriptor);
	}
	if (!r)
		return 1;
	if (json_out) {
		print_json(r);
	} else {
		printf("%-8s %-36s %-8s %-9s %-10s %-10s %-9s %s\n", "KIND", "RESOURCE", "HOLDER", "HELD_S", "BLOCKED_S",
		       "PENDING_S", "HANDOFFS", "WAITERS");
		if (argc == 1) {
			arbiter_rows(((Procctl__V1__GetArbiterResponse *)r)->arbiter);
		} else {
			const Procctl__V1__ListArbitersResponse *l = (void *)r;
			for (i = 0; i < l->n_arbiters; i++)
				arbiter_rows(l->arbiters[i]);
		}
	}
	protobuf_c_message_free_unpacked(r, NULL);
	return 0;
}

/* desired rm SELECTOR */
static int desired_rm(struct opts *o)
{
	Procctl__V1__DeleteDesiredConfigRequest rq = PROCCTL__V1__DELETE_DESIRED_CONFIG_REQUEST__INIT;
	ProtobufCMessage *r;
	rq.selector = &o->sel;
	if (!(r = call("/procctl.v1.NodeService/DeleteDesiredConfig", &rq.base,
		       &procctl__v1__delete_desired_config_response__descriptor)))
		return 1;
	if (json_out)
		print_json(r);
	protobuf_c_message_free_unpacked(r, NULL);
	return 0;
}

static int cmd_desired(int argc, char **argv)
{
	struct opts o;
	int e;
	if (argc < 1)
		return bad_usage("desired", "needs ls, set or rm");
	if (strcmp(argv[0], "ls") && strcmp(argv[0], "set") && strcmp(argv[0], "rm"))
		return bad_usage(argv[0], "not a desired command (ls, set or rm)");
	if ((e = parse_opts(argc - 1, argv + 1, &o, 0)))
		return e;
	if (!strcmp(argv[0], "ls")) {
		Procctl__V1__ListDesiredConfigsRequest rq = PROCCTL__V1__LIST_DESIRED_CONFIGS_REQUEST__INIT;
		Procctl__V1__ListDesiredConfigsResponse *r;
		size_t i;
		if (!(r = (void *)call("/procctl.v1.NodeService/ListDesiredConfigs", &rq.base,
				       &procctl__v1__list_desired_configs_response__descriptor)))
			return 1;
		if (json_out) {
			print_json(&r->base);
		} else {
			printf("%-8s %-16s %-3s %-8s %-36s %-12s %-8s %s\n", "REVISION", "CONSUMER", "VER", "PID", "POD",
			       "CONTAINER", "BYTES", "SOURCE");
			for (i = 0; i < r->n_configs; i++) {
				const Procctl__V1__DesiredConfig *d = r->configs[i];
				const Procctl__V1__Selector *s = d->selector;
				char pid[16] = "-";
				if (s && s->pid)
					snprintf(pid, sizeof pid, "%d", s->pid);
				printf("%-8llu %-16s %-3u %-8s %-36s %-12.12s %-8zu %s\n", (unsigned long long)d->revision,
				       s ? s->consumer : "", s ? s->schema_version : 0, pid,
				       s && s->pod_uid[0] ? s->pod_uid : "-", s && s->container_id[0] ? s->container_id : "-",
				       d->payload.len, d->source[0] ? d->source : "api");
			}
		}
		protobuf_c_message_free_unpacked(&r->base, NULL);
		return 0;
	}
	if ((e = need_selector(&o)))
		return e;
	if (!strcmp(argv[0], "set")) {
		Procctl__V1__SetDesiredConfigRequest rq = PROCCTL__V1__SET_DESIRED_CONFIG_REQUEST__INIT;
		Procctl__V1__DesiredConfig d = PROCCTL__V1__DESIRED_CONFIG__INIT;
		Procctl__V1__SetDesiredConfigResponse *r;
		if ((e = read_data(&o, &d.payload)))
			return e;
		d.selector = &o.sel;
		rq.config = &d;
		rq.wait_ms = o.wait ? (uint32_t)timeout_ms : 0;
		r = (void *)call("/procctl.v1.NodeService/SetDesiredConfig", &rq.base,
				 &procctl__v1__set_desired_config_response__descriptor);
		free(d.payload.data);
		if (!r)
			return 1;
		if (!json_out)
			printf("revision %llu\n", (unsigned long long)(r->config ? r->config->revision : 0));
		e = r->n_results ? results(r->results, r->n_results, o.wait) : 0;
		if (json_out)
			print_json(&r->base);
		if (!r->n_results)
			fprintf(json_out ? stderr : stdout,
				"no attached process matches %s now: the config applies to those that attach later\n",
				selector_words(&o));
		protobuf_c_message_free_unpacked(&r->base, NULL);
		return e;
	}
	return desired_rm(&o);
}

static int cmd_health(void)
{
	Grpc__Health__V1__HealthCheckRequest rq = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
	Grpc__Health__V1__HealthCheckResponse *r;
	int ok;
	if (!(r = (void *)call("/grpc.health.v1.Health/Check", &rq.base, &grpc__health__v1__health_check_response__descriptor)))
		return 1;
	ok = r->status == GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING;
	if (json_out)
		print_json(&r->base);
	else
		printf("%s\n", short_enum(&grpc__health__v1__health_check_response__serving_status__descriptor, r->status, ""));
	protobuf_c_message_free_unpacked(&r->base, NULL);
	return ok ? 0 : 1;
}

/* A WatchEvents stream: one line per event until --count or the end. */
static int cmd_watch(const struct opts *o)
{
	Procctl__V1__WatchEventsRequest rq = PROCCTL__V1__WATCH_EVENTS_REQUEST__INIT;
	grpc_metadata_array md_in, md_trail;
	grpc_byte_buffer *out, *in = NULL;
	grpc_status_code st = GRPC_STATUS_UNKNOWN;
	grpc_slice details;
	grpc_op ops[5];
	grpc_call *c;
	long seen = 0;
	int tag_status, tag_msg;

	if (connect_once() < 0)
		return 1;
	rq.filter = (Procctl__V1__Selector *)&o->sel;
	rq.resume_token = (char *)(o->from ? o->from : "");
	out = pb_pack(&rq.base);
	grpc_metadata_array_init(&md_in);
	grpc_metadata_array_init(&md_trail);
	c = grpc_channel_create_call(ch, NULL, 0, cq, grpc_slice_from_static_string("/procctl.v1.NodeService/WatchEvents"),
				     NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
	memset(ops, 0, sizeof ops);
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[1].op = GRPC_OP_SEND_MESSAGE;
	ops[1].data.send_message.send_message = out;
	ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[3].data.recv_initial_metadata.recv_initial_metadata = &md_in;
	ops[4].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[4].data.recv_status_on_client.trailing_metadata = &md_trail;
	ops[4].data.recv_status_on_client.status = &st;
	ops[4].data.recv_status_on_client.status_details = &details;
	if (grpc_call_start_batch(c, ops, 5, &tag_status, NULL) != GRPC_CALL_OK)
		return 1;
	for (;;) {
		grpc_op op;
		grpc_event ev;
		Procctl__V1__WatchEventsResponse *e;
		memset(&op, 0, sizeof op);
		op.op = GRPC_OP_RECV_MESSAGE;
		op.data.recv_message.recv_message = &in;
		if (grpc_call_start_batch(c, &op, 1, &tag_msg, NULL) != GRPC_CALL_OK)
			break;
		ev = grpc_completion_queue_pluck(cq, &tag_msg, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
		if (!ev.success || !in)
			break;
		e = (void *)pb_unpack(&procctl__v1__watch_events_response__descriptor, in);
		grpc_byte_buffer_destroy(in);
		in = NULL;
		if (!e)
			break;
		if (json_out) {
			print_json(&e->base);
		} else {
			const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(
				&procctl__v1__watch_events_response__descriptor, (unsigned)e->event_case);
			printf("%-8llu %-18s", (unsigned long long)e->sequence, f ? f->name : "?");
			if (e->event_case == PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_SNAPSHOT)
				printf(" processes=%zu", e->snapshot->n_processes);
			else if (e->event_case == PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_ATTACHED && e->attached->process)
				printf(" pid=%d consumer=%s", e->attached->process->ref ? e->attached->process->ref->pid : 0,
				       e->attached->process->consumer);
			else if (e->event_case == PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_DETACHED && e->detached->process)
				printf(" pid=%d reason=%s", e->detached->process->pid,
				       short_enum(&procctl__v1__detach_reason__descriptor, e->detached->reason, "DETACH_REASON_"));
			else if (e->event_case == PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_ACKED && e->acked->process)
				printf(" pid=%d generation=%llu result=%s", e->acked->process->pid,
				       (unsigned long long)e->acked->generation,
				       short_enum(&procctl__v1__ack_result__descriptor, e->acked->result, "ACK_RESULT_"));
			else if (e->event_case == PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_STATE_CHANGED && e->state_changed->process)
				printf(" pid=%d", e->state_changed->process->pid);
			else if (e->event_case == PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_OWNERSHIP_CHANGED)
				printf(" consumer=%s owner=%d", e->ownership_changed->consumer, e->ownership_changed->owner);
			else if (e->event_case == PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_RESOURCE_GRANTED)
				printf(" kind=%s pid=%d", e->resource_granted->kind,
				       e->resource_granted->holder ? e->resource_granted->holder->pid : 0);
			else if (e->event_case == PROCCTL__V1__WATCH_EVENTS_RESPONSE__EVENT_RESOURCE_RELEASED)
				printf(" kind=%s pid=%d reason=%s", e->resource_released->kind,
				       e->resource_released->holder ? e->resource_released->holder->pid : 0,
				       short_enum(&procctl__v1__release_reason__descriptor, e->resource_released->reason,
						  "RELEASE_REASON_"));
			printf(" token=%s\n", e->resume_token);
		}
		fflush(stdout);
		protobuf_c_message_free_unpacked(&e->base, NULL);
		if (o->count && ++seen >= o->count)
			break;
	}
	if (o->count && seen >= o->count) {
		grpc_call_cancel(c, NULL);
		st = GRPC_STATUS_OK;
	}
	grpc_completion_queue_pluck(cq, &tag_status, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
	if (st != GRPC_STATUS_OK && !(o->count && seen >= o->count)) {
		char *d = grpc_slice_to_c_string(details);
		fprintf(stderr, "procctl: %s: %s\n", pb_status_name((unsigned)st), d);
		gpr_free(d);
	}
	grpc_slice_unref(details);
	grpc_call_unref(c);
	grpc_metadata_array_destroy(&md_in);
	grpc_metadata_array_destroy(&md_trail);
	grpc_byte_buffer_destroy(out);
	return o->count && seen >= o->count ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *cmd;
	struct opts o;
	int i, e;

	sock = getenv("PROCCTL_SOCKET");
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i], *v = argv[i + 1];
		if (!strcmp(a, "--help") || !strcmp(a, "-h"))
			return help(NULL);
		if (strcmp(a, "--socket") && strcmp(a, "--timeout") && strcmp(a, "-o"))
			return bad_usage(a, "no such option (before the command: --socket, --timeout, -o)");
		if (!v)
			return bad_usage(a, "needs a value");
		i++;
		if (!strcmp(a, "--socket")) {
			sock = v;
		} else if (!strcmp(a, "--timeout")) {
			if (parse_dur(v, &timeout_ms) < 0)
				return bad_value(a, v, "a duration (seconds, or 500ms, 5s, 2m; at most a day)");
		} else {
			if (strcmp(v, "json") && strcmp(v, "table"))
				return bad_value(a, v, "table or json");
			json_out = !strcmp(v, "json");
		}
	}
	if (i >= argc)
		return bad_usage(NULL, "no command");
	cmd = argv[i++];
	if (!strcmp(cmd, "help"))
		return i + 1 < argc ? bad_usage(argv[i + 1], "not expected here") : help(i < argc ? argv[i] : NULL);
	if (!is_command(cmd))
		return bad_usage(cmd, "no such command");
	for (e = i; e < argc; e++) {
		if (!strcmp(argv[e], "--help") || !strcmp(argv[e], "-h"))
			return help(cmd);
		e += takes_value(argv[e]); /* --data --help is data */
	}
	if (!strcmp(cmd, "version")) {
		printf(json_out ? "{\"version\":\"%s\",\"api\":\"procctl.v1\"}\n" : "procctl %s (API procctl.v1)\n",
		       PROCCTL_VERSION_STRING);
		return 0;
	}
	if (!sock || !*sock)
		sock = DEFAULT_SOCKET;
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
	if (ch) {
		grpc_channel_destroy(ch);
		grpc_completion_queue_shutdown(cq);
		grpc_completion_queue_destroy(cq);
		grpc_shutdown_blocking();
	}
	return e;
}
