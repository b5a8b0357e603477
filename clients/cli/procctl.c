/* SPDX-License-Identifier: Apache-2.0 */
/* procctl - the command line of procctl-node, on the gRPC C core over the
 * daemon's Unix socket (like crictl for a container runtime), or over TCP
 * with mTLS from anywhere in the cluster (connect.c). Its commands and
 * options, their help and their reading are args.c's; docs/procctl.1.md
 * is its manual page.
 * Exit status: 0 done; 1 failed (the daemon's status is printed, or a
 * process refused the config or was not written); 2 bad usage; 3 not
 * done in time (--wait's acks, watch's --count within --timeout); 4 no
 * process matched the selector (publish, clear; --allow-none makes that
 * 0). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/log.h>
#include <grpc/support/time.h>

#include "cli.h"
#include "pb_grpc.h"
#include "pbjson.h"

#define DATA_MAX (4u << 20) /* configs are at most 1 MiB (PROCCTL_PAYLOAD_MAX): more is a mistake */

int64_t cli_timeout_ms = 10000;
int cli_json;

unsigned cli_last_status;

ProtobufCMessage *call_for(const char *method, const ProtobufCMessage *req, const ProtobufCMessageDescriptor *rd,
			   int64_t ms, grpc_status_code *st, char **details)
{
	gpr_timespec deadline = gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_millis(ms, GPR_TIMESPAN));
	ProtobufCMessage *resp = NULL;
	*details = NULL;
	*st = pb_unary(cli_ch, cli_cq, method, deadline, req, rd, &resp, details);
	cli_last_status = (unsigned)*st;
	return resp;
}

void say_failure(grpc_status_code st, const char *details)
{
	char why[1024];
	if (st == GRPC_STATUS_OK) {
		fprintf(stderr, "procctl: the response does not parse\n");
		return;
	}
	if (st == GRPC_STATUS_UNAVAILABLE && unavailable_why(details, why, sizeof why)) {
		fprintf(stderr, "procctl: UNAVAILABLE: %s: %s\n", target_name(), why);
		return;
	}
	fprintf(stderr, "procctl: %s: %s\n", rpc_status_name((unsigned)st),
		st == GRPC_STATUS_UNAVAILABLE && (!details || !*details) ? "no daemon answers there" : details ? details : "");
	if (st == GRPC_STATUS_RESOURCE_EXHAUSTED && details &&
	    (strstr(details, "Buffers full") || strstr(details, "larger than max")))
		fprintf(stderr, "procctl: (a reply over %d MiB, more than procctl-node sends: is %s a procctl-node?)\n",
			CLI_REPLY_MAX >> 20, target_name());
	if (st == GRPC_STATUS_UNAVAILABLE)
		fprintf(stderr, "procctl: (at %s)\n", target_name());
}

int64_t cli_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int connected(void)
{
	int r = connect_once();
	if (r == -2) {
		cli_last_status = GRPC_STATUS_UNAVAILABLE;
		say_failure(GRPC_STATUS_UNAVAILABLE, NULL);
	}
	return r < 0 ? -1 : 0;
}

ProtobufCMessage *call(const char *method, const ProtobufCMessage *req, const ProtobufCMessageDescriptor *rd)
{
	ProtobufCMessage *resp;
	grpc_status_code st;
	char *d;
	if (connected() < 0)
		return NULL;
	/* --timeout is what the daemon is asked to wait (wait_ms); its answer
	 * that the time is up needs a moment to come back */
	if (!(resp = call_for(method, req, rd, cli_timeout_ms + 2000, &st, &d)))
		say_failure(st, d);
	gpr_free(d);
	return resp;
}

int print_json(const ProtobufCMessage *m)
{
	json_t *j = pbjson_from(m);
	/* printable ASCII, which escape.c passes unchanged: the encoder
	 * escapes the rest, but for DEL, which can only be in a string */
	char *s = j ? json_dumps(j, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
	const char *from = s, *p;
	json_decref(j);
	if (!s)
		return 1;
	for (p = s; *p; p++)
		if (*p == 0x7f) {
			printf("%.*s\\u007f", (int)(p - from), from);
			from = p + 1;
		}
	printf("%s\n", from);
	free(s);
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

/* The command o names, on the daemon where needed: its exit status. */
static int run(struct opts *o)
{
	int e;
	switch (o->cmd) {
	case CMD_VERSION:
		if (o->nargs)
			return bad_usage(o->args[0], "not expected here");
		printf(cli_json ? "{\"version\":\"%s\",\"api\":\"procctl.v1\"}\n" : "procctl %s (API procctl.v1)\n",
		       PROCCTL_VERSION_STRING);
		return 0;
	case CMD_COMPLETION:
		return cmd_completion(o);
	}
	if ((e = target_check()))
		return e;
	if (!cli_to.server && !cli_to.socket)
		cli_to.socket = getenv("PROCCTL_SOCKET") && *getenv("PROCCTL_SOCKET") ? getenv("PROCCTL_SOCKET")
										    : CLI_DEFAULT_SOCKET;
	if (cli_to.socket_uid < 0 && getenv("PROCCTL_SOCKET_UID") && *getenv("PROCCTL_SOCKET_UID") &&
	    parse_int(getenv("PROCCTL_SOCKET_UID"), 0, 0x7fffffff, &cli_to.socket_uid) < 0) {
		fprintf(stderr, "procctl: PROCCTL_SOCKET_UID: '%s' is not a uid\n", getenv("PROCCTL_SOCKET_UID"));
		return 2;
	}
	switch (o->cmd) {
	case CMD_GET: return cmd_get(o);
	case CMD_STATE: return cmd_state(o);
	case CMD_RESOURCES: return cmd_resources(o);
	case CMD_DESIRED: return cmd_desired(o);
	case CMD_HEALTH: return cmd_health(o);
	case CMD_PS: return cmd_ps(o);
	case CMD_TOP: return cmd_top(o);
	case CMD_PUBLISH: return cmd_publish(o, 0);
	case CMD_CLEAR: return cmd_publish(o, 1);
	default: return cmd_watch(o);
	}
}

int main(int argc, char **argv)
{
	struct opts o;
	int e, done;

	cli_to.socket_uid = -1;
	if (cli_escape_output() < 0) {
		perror("procctl: escaping output");
		return 1;
	}
	if ((e = cli_parse(argc, argv, &o, &done)) || done)
		return e;
	e = run(&o);
	if (cli_ch) {
		grpc_channel_destroy(cli_ch);
		grpc_completion_queue_shutdown(cli_cq);
		grpc_completion_queue_destroy(cli_cq);
		grpc_shutdown_blocking();
	}
	return e;
}
