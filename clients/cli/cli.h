/* SPDX-License-Identifier: Apache-2.0 */
/* cli.h - what the parts of procctl share: the command line read, the
 * call to the daemon, and the output helpers. procctl.c: main, the call
 * and the config's bytes; args.c: the commands and options as one table,
 * and their reading; complete.c: the shell completions of that table;
 * connect.c: the channel; commands.c, desired.c, watch.c and top.c: the
 * commands; show.c: output. */
#ifndef PROCCTL_CLI_H
#define PROCCTL_CLI_H

#include <stddef.h>
#include <stdint.h>

#include <grpc/grpc.h>

#include "procctl/v1/node.pb-c.h"
#include "optable.h"

#define EXIT_PENDING 3 /* written, not acked in time (--wait) */
#define EXIT_NONE 4    /* the selector matched no process */

#define CLI_DEFAULT_SOCKET "/run/procctl/node.sock"
#define CLI_REPLY_MAX (64 << 20) /* the largest reply taken: procctl-node's max_message_bytes at most */
#define CLI_MAX_ARGS 4 /* operands after a command (desired's ls|set|rm, a PID, a KIND, -) */

/* The commands (args.c's table has their names and help). */
enum cli_cmd { CMD_PS, CMD_GET, CMD_STATE, CMD_PUBLISH, CMD_CLEAR, CMD_WATCH, CMD_TOP, CMD_RESOURCES, CMD_DESIRED,
	       CMD_HEALTH, CMD_VERSION, CMD_COMPLETION, NCMD };
#define CMD_BIT(c) (1u << (c))
#define CMD_ALL ((1u << NCMD) - 1)

/* The options, each its index in cli_options. */
enum cli_opt { O_SOCKET, O_SOCKET_UID, O_SERVER, O_TLS_CA, O_TLS_CERT, O_TLS_KEY, O_TLS_SERVER_NAME, O_PLAINTEXT, O_TIMEOUT,
	       O_OUTPUT, O_HELP, O_PID, O_CONSUMER, O_SCHEMA, O_POD, O_CONTAINER, O_NAMESPACE, O_LABELS, O_DATA, O_FILE, O_WAIT,
	       O_ALLOW_NONE, O_CLEAR, O_FROM, O_COUNT, O_FOR, O_INTERVAL, NOPT };

/* The options that select processes (bits of opts.given). */
#define CLI_SEL_OPTS                                                                               \
	((1ull << O_PID) | (1ull << O_CONSUMER) | (1ull << O_SCHEMA) | (1ull << O_POD) | (1ull << O_CONTAINER) | \
	 (1ull << O_NAMESPACE) | (1ull << O_LABELS))

/* The commands (and the word help, last), as optable.c reads them. */
extern const struct opt_cmd cli_cmds[NCMD + 1];
/* Each: --name (-x), the form of its value (FILE, DUR, table|json, ...;
 * NULL: it takes none), the commands that take it (CMD_ALL: every one). */
extern const struct opt_def cli_options[NOPT];
extern const struct opt_program cli_program; /* both */

/* The command line, read. */
struct opts {
	int cmd;                 /* enum cli_cmd */
	char *args[CLI_MAX_ARGS]; /* its operands, in order */
	int nargs;
	uint64_t given;          /* bit k: cli_options[k] was given */
	int help, help_cmd;      /* --help; the word help */
	Procctl__V1__Selector sel;
	const char *data, *file, *from;
	int stdin_data, wait, allow_none, clear, timeout_given;
	long count;
	int64_t for_ms, interval_ms;
};

/* Where the daemon is (the options before the command): the socket, or
 * server with TLS from ca, cert and key (PEM files; ca NULL: the system's
 * roots) checking server_name (NULL: the server's host), or plaintext. */
struct cli_target {
	const char *socket, *server, *ca, *cert, *key, *server_name;
	int plaintext;
	long socket_uid; /* a uid the socket's listener may run as besides root and this user; -1: none */
};

extern struct cli_target cli_to;
extern grpc_channel *cli_ch;          /* made by connect_once */
extern grpc_completion_queue *cli_cq; /* ... a pluck queue */
extern int64_t cli_timeout_ms;        /* --timeout */
extern int cli_json;                  /* -o json */
extern unsigned cli_last_status;      /* the gRPC status of the last call() */
int64_t cli_now_ms(void);             /* CLOCK_MONOTONIC, in ms */

/* connect.c */
int target_check(void); /* the options of cli_to agree: 0, or 2 (said) */
const char *target_name(void); /* the socket's path or the server's HOST:PORT */
/* Why an UNAVAILABLE, in words a user can act on (the socket checked
 * again: nobody listening, no permission; what TLS's details say about
 * the options): 1 with why set, or 0 when there is nothing to add. */
int unavailable_why(const char *details, char *why, size_t len);
/* The channel: 0; -1 after saying why; -2 the Unix socket takes no
 * connection now (not said: say_failure's UNAVAILABLE says why). */
int connect_once(void);
/* connect_once, and -2 said: 0 or -1. */
int connected(void);
/* A Unix socket's channel given up (the daemon went away: a channel made
 * on a socket fd never dials again), to be made anew. */
void connect_reset(void);
/* Read fd to its end: 0 and *out (malloc'd, NUL after its *len bytes);
 * -EFBIG over max bytes, -ENOMEM, or read's -errno (*out NULL). */
int read_all(int fd, size_t max, uint8_t **out, size_t *len);

/* args.c */
/* Read argv into o: 0 to run o->cmd; else the exit status with *done set
 * (help printed, or bad usage said). */
int cli_parse(int argc, char **argv, struct opts *o, int *done);
int cli_command_find(const char *name); /* its index, or -1 */
int parse_int(const char *s, long lo, long hi, long *out);
int given(const char *s);
int bad_usage(const char *word, const char *why); /* word NULL: none; 2 */
int no_operands(const struct opts *o); /* 0; or 2, the first named */

/* escape.c: stdout and stderr replaced by streams that write every byte
 * but printable ASCII, newline and tab as \xNN (what the daemon and
 * processes send is shown, never obeyed, by a terminal): 0, or -1. */
int cli_escape_output(void);

/* complete.c: procctl completion SHELL */
int cmd_completion(const struct opts *o);

/* procctl.c */
/* One unary call to the daemon (connected by connect_once): the
 * response, or NULL after saying why. */
ProtobufCMessage *call(const char *method, const ProtobufCMessage *req, const ProtobufCMessageDescriptor *rd);
/* The same with a deadline ms from now, saying nothing: the response,
 * or NULL with *st and gRPC's *details (gpr_free them) saying why. */
ProtobufCMessage *call_for(const char *method, const ProtobufCMessage *req, const ProtobufCMessageDescriptor *rd,
			   int64_t ms, grpc_status_code *st, char **details);
/* A call's failure, said as call does. */
void say_failure(grpc_status_code st, const char *details);
int print_json(const ProtobufCMessage *m);
int read_data(const struct opts *o, ProtobufCBinaryData *out); /* 0, or 1 or 2 (said) */

/* show.c */
const char *short_enum(const ProtobufCEnumDescriptor *d, int v, const char *prefix);
const char *errno_name(int32_t status, char buf[16]);
int results(Procctl__V1__PublishResult **r, size_t n, int wait);
const char *selector_words(const struct opts *o);
void show_process(const Procctl__V1__Process *p);
void process_header(void);

/* commands.c, watch.c: the exit status */
int cmd_ps(const struct opts *o);
int cmd_get(const struct opts *o);
int cmd_state(const struct opts *o);
int cmd_publish(const struct opts *o, int clear);
int cmd_resources(const struct opts *o);
int cmd_desired(const struct opts *o);
/* A command's selector: 0, or 2 when it names no process (said). */
int need_selector(const struct opts *o);
/* The wait a --wait asks for (0 without it) into *ms: 0, or 2 (usage)
 * for --wait with --timeout 0, which would wait for nothing. */
int wait_of(const struct opts *o, uint32_t *ms);
int cmd_health(const struct opts *o);
int cmd_watch(const struct opts *o);
int cmd_top(const struct opts *o); /* top.c */

#endif
