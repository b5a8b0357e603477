/* SPDX-License-Identifier: Apache-2.0 */
/* cli.h - what the parts of procctl share: the options of a command, the
 * call to the daemon, and the output helpers. procctl.c: main, usage and
 * options; show.c: output; commands.c: every command but watch; watch.c:
 * watch; connect.c: the channel. */
#ifndef PROCCTL_CLI_H
#define PROCCTL_CLI_H

#include <stddef.h>
#include <stdint.h>

#include <grpc/grpc.h>

#include "procctl/v1/node.pb-c.h"

#define EXIT_PENDING 3 /* written, not acked in time (--wait) */
#define EXIT_NONE 4    /* the selector matched no process */

/* The options after a command. */
struct opts {
	Procctl__V1__Selector sel;
	int have_sel, schema_given;
	const char *data, *file, *from;
	int stdin_data, wait, allow_none;
	long count;
};

/* Where the daemon is (the options before the command): the socket, or
 * server with TLS from ca, cert and key (PEM files; ca NULL: the system's
 * roots) checking server_name (NULL: the server's host), or plaintext. */
struct cli_target {
	const char *socket, *server, *ca, *cert, *key, *server_name;
	int plaintext;
};

extern struct cli_target cli_to;
extern grpc_channel *cli_ch;          /* made by connect_once */
extern grpc_completion_queue *cli_cq; /* ... a pluck queue */
extern int64_t cli_timeout_ms;        /* --timeout */
extern int cli_json;                  /* -o json */
extern unsigned cli_last_status;      /* the gRPC status of the last call() */

/* connect.c */
int target_check(void); /* the options of cli_to agree: 0, or 2 (said) */
const char *target_name(void); /* the socket's path or the server's HOST:PORT */
/* What an UNAVAILABLE's details say about the options, or NULL. */
const char *unavailable_hint(const char *details);
int connect_once(void); /* 0, or -1 after saying why */
/* Read fd to its end: 0 and *out (malloc'd, NUL after its *len bytes);
 * -EFBIG over max bytes, -ENOMEM, or read's -errno (*out NULL). */
int read_all(int fd, size_t max, uint8_t **out, size_t *len);

/* procctl.c */
ProtobufCMessage *call(const char *method, const ProtobufCMessage *req, const ProtobufCMessageDescriptor *rd);
int print_json(const ProtobufCMessage *m);
int parse_opts(int argc, char **argv, struct opts *o, int pid_alone); /* 0, or 2 (said) */
int parse_int(const char *s, long lo, long hi, long *out);
int given(const char *s);
int read_data(const struct opts *o, ProtobufCBinaryData *out); /* 0, or 1 or 2 (said) */
int bad_usage(const char *word, const char *why);

/* show.c */
const char *short_enum(const ProtobufCEnumDescriptor *d, int v, const char *prefix);
const char *errno_name(int32_t status, char buf[16]);
int results(Procctl__V1__PublishResult **r, size_t n, int wait);
const char *selector_words(const struct opts *o);
const char *resource_id(const ProtobufCBinaryData *id, char buf[80]);
void show_process(const Procctl__V1__Process *p);
void process_header(void);
int printable(const uint8_t *p, size_t n);

/* commands.c, watch.c: the exit status */
int cmd_ps(const struct opts *o);
int cmd_get(int argc, char **argv);
int cmd_state(int argc, char **argv);
int cmd_publish(const struct opts *o, int clear);
int cmd_resources(int argc, char **argv);
int cmd_desired(int argc, char **argv);
int cmd_health(void);
int cmd_watch(const struct opts *o);

#endif
