/* SPDX-License-Identifier: Apache-2.0 */
/* bellring.c - doorbell waits in an io_uring (bellring.h), on the raw
 * system calls: Debian's kernel headers predate the futex opcodes, so
 * they and the SQE fields they use are spelled out here. */
#define _GNU_SOURCE 1
#include "bellring.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/io_uring.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SQ_ENTRIES 256
#define CQ_ENTRIES 4096  /* more completions wait in the kernel (IORING_FEAT_NODROP) */
#define OP_FUTEX_WAIT 51 /* IORING_OP_FUTEX_WAIT, Linux 6.7 */
#define FUTEX2_U32 0x02u /* FUTEX2_SIZE_U32; shared (no FUTEX2_PRIVATE): the word is another process's */
#define MATCH_ANY 0xffffffffull
#define CANCEL_BIT (1ull << 63) /* a cancel's own completion */

static int enter(const struct procctl_bellring *b, unsigned submit, unsigned flags)
{
	long r = syscall(__NR_io_uring_enter, b->fd, submit, 0u, flags, NULL, 0ul);
	return r < 0 ? -errno : (int)r;
}

static int map_rings(struct procctl_bellring *b, const struct io_uring_params *p)
{
	b->sq_len = p->sq_off.array + p->sq_entries * sizeof(uint32_t);
	b->cq_len = p->cq_off.cqes + p->cq_entries * sizeof(struct io_uring_cqe);
	if (p->features & IORING_FEAT_SINGLE_MMAP)
		b->sq_len = b->cq_len = b->sq_len > b->cq_len ? b->sq_len : b->cq_len;
	b->sq_map = mmap(NULL, b->sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, b->fd, IORING_OFF_SQ_RING);
	if (b->sq_map == MAP_FAILED)
		return -errno;
	b->cq_map = (p->features & IORING_FEAT_SINGLE_MMAP)
			    ? b->sq_map
			    : mmap(NULL, b->cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, b->fd, IORING_OFF_CQ_RING);
	if (b->cq_map == MAP_FAILED)
		return -errno;
	b->sqes_len = p->sq_entries * sizeof(struct io_uring_sqe);
	b->sqes = mmap(NULL, b->sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, b->fd, IORING_OFF_SQES);
	if (b->sqes == MAP_FAILED)
		return -errno;
	b->sq_head = (uint32_t *)((char *)b->sq_map + p->sq_off.head);
	b->sq_tail = (uint32_t *)((char *)b->sq_map + p->sq_off.tail);
	b->sq_mask = (uint32_t *)((char *)b->sq_map + p->sq_off.ring_mask);
	b->sq_array = (uint32_t *)((char *)b->sq_map + p->sq_off.array);
	b->sq_flags = (uint32_t *)((char *)b->sq_map + p->sq_off.flags);
	b->cq_head = (uint32_t *)((char *)b->cq_map + p->cq_off.head);
	b->cq_tail = (uint32_t *)((char *)b->cq_map + p->cq_off.tail);
	b->cq_mask = (uint32_t *)((char *)b->cq_map + p->cq_off.ring_mask);
	b->cqes = (char *)b->cq_map + p->cq_off.cqes;
	b->sq_entries = p->sq_entries;
	return 0;
}

/* The next free SQE, zeroed (the queue submitted first when full). */
static struct io_uring_sqe *next_sqe(struct procctl_bellring *b)
{
	uint32_t tail = *b->sq_tail, i;
	struct io_uring_sqe *sqe;
	if (tail - __atomic_load_n(b->sq_head, __ATOMIC_ACQUIRE) >= b->sq_entries) {
		if (procctl_bellring_submit(b) < 0 ||
		    tail - __atomic_load_n(b->sq_head, __ATOMIC_ACQUIRE) >= b->sq_entries)
			return NULL;
	}
	i = tail & *b->sq_mask;
	sqe = (struct io_uring_sqe *)b->sqes + i;
	memset(sqe, 0, sizeof *sqe);
	b->sq_array[i] = i;
	return sqe;
}

static void queue(struct procctl_bellring *b)
{
	__atomic_store_n(b->sq_tail, *b->sq_tail + 1, __ATOMIC_RELEASE);
	b->queued++;
}

static void wait_sqe(struct io_uring_sqe *sqe, const uint32_t *word, uint64_t id)
{
	sqe->opcode = OP_FUTEX_WAIT;
	sqe->fd = (int)FUTEX2_U32;
	sqe->addr = (uint64_t)(uintptr_t)word;
	sqe->off = 0;          /* addr2: the value waited on */
	sqe->addr3 = MATCH_ANY; /* the bitset */
	sqe->user_data = id;
}

/* A wait on a word that is not 0 ends at once with -EAGAIN where the
 * kernel has the opcode, -EINVAL where it has not. */
static int probe(struct procctl_bellring *b)
{
	static const uint32_t one = 1;
	struct procctl_bellring_done d;
	int i, r;
	wait_sqe(next_sqe(b), &one, 1);
	queue(b);
	if ((r = procctl_bellring_submit(b)) < 0)
		return r;
	for (i = 0; i < 1000; i++) {
		if (procctl_bellring_reap(b, &d, 1))
			return d.res == -EAGAIN ? 0 : d.res == -EINVAL || d.res == -EOPNOTSUPP ? -EINVAL : d.res;
		if ((r = enter(b, 0, IORING_ENTER_GETEVENTS)) < 0 && r != -EINTR)
			return r;
	}
	return -ETIMEDOUT;
}

int procctl_bellring_open(struct procctl_bellring *b)
{
	struct io_uring_params p;
	int err;
	memset(b, 0, sizeof *b);
	memset(&p, 0, sizeof p);
	p.flags = IORING_SETUP_CQSIZE | IORING_SETUP_CLAMP;
	p.cq_entries = CQ_ENTRIES;
	b->fd = (int)syscall(__NR_io_uring_setup, SQ_ENTRIES, &p);
	if (b->fd < 0)
		return -errno;
	if ((err = map_rings(b, &p)) < 0 || (err = probe(b)) < 0) {
		procctl_bellring_close(b);
		return err;
	}
	return 0;
}

int procctl_bellring_arm(struct procctl_bellring *b, const uint32_t *word, uint64_t id)
{
	struct io_uring_sqe *sqe = next_sqe(b);
	if (!sqe)
		return -EBUSY;
	wait_sqe(sqe, word, id);
	queue(b);
	return 0;
}

/* Cancel id's wait: its completion comes with -ECANCELED (unless it rang
 * first). Queued like arm. */
static int cancel(struct procctl_bellring *b, uint64_t id)
{
	struct io_uring_sqe *sqe = next_sqe(b);
	if (!sqe)
		return -EBUSY;
	sqe->opcode = IORING_OP_ASYNC_CANCEL;
	sqe->fd = -1;
	sqe->addr = id; /* the user_data to cancel */
	sqe->user_data = id | CANCEL_BIT;
	queue(b);
	return 0;
}

int procctl_bellring_end(struct procctl_bellring *b, const uint32_t *word, uint64_t id)
{
	int err;
	/* A wait still queued would be armed after the wake, on a word unmapped by then. */
	if (procctl_bellring_submit(b) == 0 && syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0) >= 0)
		return 0;
	if ((err = cancel(b, id)) < 0)
		return err;
	return procctl_bellring_submit(b);
}

int procctl_bellring_submit(struct procctl_bellring *b)
{
	while (b->queued) {
		int r = enter(b, b->queued, 0);
		if (r == -EINTR)
			continue;
		if (r < 0)
			return r;
		b->queued -= (uint32_t)r < b->queued ? (uint32_t)r : b->queued;
		if (!r)
			return -EAGAIN;
	}
	return 0;
}

size_t procctl_bellring_reap(struct procctl_bellring *b, struct procctl_bellring_done *out, size_t max)
{
	uint32_t head = *b->cq_head, tail = __atomic_load_n(b->cq_tail, __ATOMIC_ACQUIRE);
	size_t n = 0;
	if (head == tail && (__atomic_load_n(b->sq_flags, __ATOMIC_RELAXED) & IORING_SQ_CQ_OVERFLOW)) {
		enter(b, 0, IORING_ENTER_GETEVENTS); /* completions waiting in the kernel: into the ring */
		tail = __atomic_load_n(b->cq_tail, __ATOMIC_ACQUIRE);
	}
	for (; head != tail && n < max; head++) {
		const struct io_uring_cqe *c = (const struct io_uring_cqe *)b->cqes + (head & *b->cq_mask);
		if (c->user_data & CANCEL_BIT)
			continue;
		out[n].id = c->user_data;
		out[n++].res = c->res;
	}
	__atomic_store_n(b->cq_head, head, __ATOMIC_RELEASE);
	return n;
}

void procctl_bellring_close(struct procctl_bellring *b)
{
	if (b->sqes && b->sqes != MAP_FAILED)
		munmap(b->sqes, b->sqes_len);
	if (b->cq_map && b->cq_map != MAP_FAILED && b->cq_map != b->sq_map)
		munmap(b->cq_map, b->cq_len);
	if (b->sq_map && b->sq_map != MAP_FAILED)
		munmap(b->sq_map, b->sq_len);
	if (b->fd > 0)
		close(b->fd); /* every wait still armed goes with it */
	memset(b, 0, sizeof *b);
	b->fd = -1;
}
