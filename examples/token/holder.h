/* SPDX-License-Identifier: Apache-2.0 */
/* holder.h - the holder loop of SPEC.md section 9 on a control thread of
 * its own, so a resource goes back on time even while the application is
 * busy or idle; shared by token-client and pcsamp:
 *
 *   wait on the futex; read the grant; if it holds and the grant is no
 *   longer usable (revoked, lease expired): [report RELEASING,] stop using
 *   it, report RELEASED; if it does not hold and the grant is usable:
 *   report ACQUIRING, start using it, report HOLDING; otherwise report what
 *   it is doing, with the grant it saw. Always with WANT.
 *
 * Using the resource is the witness (an append-only file with "S <pid>
 * <ns>" once it uses it and reported HOLDING, "E <pid> <ns>" before it
 * stops, "X" when the kernel saw an overlap: a POSIX write lock on its
 * first byte is held while using it), then what the holder_use hooks do.
 * The config is token_schema.h's struct token_config (acked; another size
 * nacked -EINVAL); the status bytes are a struct token_status, rewritten
 * after every change. Lines go out with write(2), never stdio: a forked
 * child must not find a stream lock another thread held. */
#ifndef TOKEN_HOLDER_H
#define TOKEN_HOLDER_H

#include <stdint.h>

#include "procctl.h"
#include "token_schema.h"

/* What using the resource is, besides the witness (every hook optional). */
struct holder_use {
	/* Start using it: 0, or -errno (not taken: RELEASED is reported, and
	 * it is asked for again at the next wake). */
	int (*acquire)(void *arg);
	/* Stop using it: returns once it is given back. */
	void (*release)(void *arg);
	void *arg;
	int say_releasing;  /* report RELEASING before release() */
	uint64_t wake_ns;   /* the futex wait's bound (0: 100 ms) */
};

/* Set up the loop (before holder_control runs): ctx initialized, key the
 * resource, witness an fd or -1, use NULL for the witness alone. */
void holder_init(procctl_t *ctx, const procctl_resource_t *key, int witness, const struct holder_use *use);
/* The control thread (pthread start routine): until holder_stop. */
void *holder_control(void *unused);
/* From a signal handler too. */
void holder_stop(void);
int holder_stopping(void);
/* In a forked child (procctl_reinit done): "F" noted, its own counts and
 * reports, IDLE reported. */
void holder_child(void);
/* A line on stdout and in the witness: what is S, E, X or F. */
void holder_note(char what);
/* Write n bytes to fd, or abort: a witness that cannot write proves nothing. */
void holder_say(int fd, const char *line, int n);

#endif
