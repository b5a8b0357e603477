/* SPDX-License-Identifier: Apache-2.0 */
/* cli.h - what the parts of procctl share: the options of a command, the
 * call to the daemon, and the output helpers. procctl.c: main, usage and
 * options; show.c: output; commands.c: every command but watch; watch.c:
 * watch. */
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

extern grpc_channel *cli_ch;          /* made by connect_once */
extern grpc_completion_queue *cli_cq; /* ... a pluck queue */
extern int64_t cli_timeout_ms;        /* --timeout */
extern int cli_json;                  /* -o json */

/* procctl.c */
int connect_once(void); /* 0, or -1 after saying why */
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
