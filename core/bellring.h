/* SPDX-License-Identifier: Apache-2.0 */
/* bellring.h - futex waits on many doorbell words (SPEC.md 6.5) through
 * one io_uring (IORING_OP_FUTEX_WAIT, Linux 6.7+): a wait per word, armed
 * and ended one by one, its completion a readable fd. No thread; the
 * owner's thread does everything, and a wait's wake is delivered to the
 * thread that armed it. Internal to libprocctl-agent. */
#ifndef PROCCTL_BELLRING_H
#define PROCCTL_BELLRING_H

#include <stddef.h>
#include <stdint.h>

struct procctl_bellring {
	int fd;
	/* the rings, as mmap'd */
	void *sq_map, *cq_map, *sqes;
	size_t sq_len, cq_len, sqes_len;
	uint32_t *sq_head, *sq_tail, *sq_mask, *sq_array, *sq_flags;
	uint32_t *cq_head, *cq_tail, *cq_mask;
	void *cqes;
	uint32_t sq_entries, queued; /* SQEs written, not yet submitted */
};

/* One completion: the id armed, and 0 (rang), -EAGAIN (the word is not
 * 0: written by its process), -ECANCELED or another -errno. */
struct procctl_bellring_done {
	uint64_t id;
	int res;
};

/* 0, or -errno: -ENOSYS no io_uring, -EINVAL no futex waits in it
 * (before 6.7), -EPERM io_uring disabled (kernel.io_uring_disabled). */
int procctl_bellring_open(struct procctl_bellring *b);
/* Wait on word (while it is 0) as id (below 2^63). Queued: submitted at
 * procctl_bellring_submit, or now when the queue is full. 0 or -errno. */
int procctl_bellring_arm(struct procctl_bellring *b, const uint32_t *word, uint64_t id);
/* End id's wait on word now, before word's mapping goes: what is queued
 * is submitted, then word woken (FUTEX_WAKE, shared, every waiter: a
 * wake is a hint, SPEC.md 6.5, so other agents' waits may end too). Its
 * completion comes with 0, as a ring's does. A wake is O(1) where a
 * cancel walks the ring's waits (bench_bells, 8,000 regions gone at once:
 * 220-230 ms against 290-300); a cancel is queued and submitted instead
 * when the wake or the submit fails. 0 or -errno. */
int procctl_bellring_end(struct procctl_bellring *b, const uint32_t *word, uint64_t id);
/* Submit what is queued. 0 or -errno. */
int procctl_bellring_submit(struct procctl_bellring *b);
/* Up to max completions of waits (a cancel's own are left out), without
 * blocking: their count. */
size_t procctl_bellring_reap(struct procctl_bellring *b, struct procctl_bellring_done *out, size_t max);
void procctl_bellring_close(struct procctl_bellring *b);

#endif
