/* SPDX-License-Identifier: Apache-2.0 */
/* state.h - the agent's check of a state block copied out of a process
 * (SPEC.md 7.2, 13.2). Part of libprocctl-agent. */
#ifndef PROCCTL_STATE_H
#define PROCCTL_STATE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "region.h"

/* A validated view into a state block copy; pointers point into it. */
struct procctl_state_view {
	uint32_t seq;
	uint64_t acked_gen;
	int32_t ack_status;
	uint32_t nres;
	const struct procctl_res_entry *res;
	uint32_t data_len;
	const unsigned char *data;
};

/* Check len bytes copied from hdr->state_addr, and the 8 bytes copied
 * from hdr->canary_addr in the same read, of the process hdr describes.
 * 0: valid, *view filled. -EAGAIN: odd seq (a write was in progress: read
 * again). -EPROTO: refused, *why says why. Nothing in buf is trusted before
 * this returns 0; buf must be 8-byte aligned. */
int procctl_state_parse(const void *buf, size_t len, uint64_t canary, const struct procctl_hdr *hdr,
			struct procctl_state_view *view, enum procctl_reject *why);

/* Copies a reader makes while a write is in progress before it says busy. */
#define PROCCTL_STATE_RETRIES 8

/* Read the state block of pid (SPEC.md 7.2): the block, the canary and
 * seq again in one process_vm_readv (through mem_fd, an open
 * /proc/<pid>/mem, when that is refused; -1: no fallback). A copy counts
 * only at its exact length, with an even seq unchanged around it, the
 * canary and a valid CRC; up to PROCCTL_STATE_RETRIES copies while a write
 * is in progress. buf: hdr->state_size bytes, 8-byte aligned. Returns 0
 * (*view points into buf), -EAGAIN (still being written), -EPROTO (*why),
 * -EFAULT (a short or faulting read), -ESRCH, or another errno of the
 * read. The caller re-checks the process (its pidfd) afterwards: a pid can
 * be reused. */
int procctl_state_read(pid_t pid, int mem_fd, const struct procctl_hdr *hdr, void *buf,
		       struct procctl_state_view *view, enum procctl_reject *why);

#endif
