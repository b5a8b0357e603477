/* SPDX-License-Identifier: Apache-2.0 */
/* state.c - check a state block copy (SPEC.md 7.2). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "procctl.h"
#include "state.h"

int procctl_state_parse(const void *buf, size_t len, uint64_t canary, const struct procctl_hdr *hdr,
			struct procctl_state_view *view, enum procctl_reject *why)
{
	const struct procctl_state_hdr *st = buf;
	size_t used;

	*why = PROCCTL_REJECT_NONE;
	if (canary != hdr->instance_id) { /* a forked child's copy, or another mm */
		*why = PROCCTL_REJECT_STATE_CANARY;
		return -EPROTO;
	}
	if (len < sizeof *st || len != hdr->state_size) {
		*why = PROCCTL_REJECT_STATE_LAYOUT;
		return -EPROTO;
	}
	if (st->magic != PROCCTL_STATE_MAGIC || st->version_major != PROCCTL_VERSION_MAJOR) {
		*why = PROCCTL_REJECT_STATE_MAGIC;
		return -EPROTO;
	}
	if (st->seq & 1u)
		return -EAGAIN;
	if (st->size != hdr->state_size || st->nres != hdr->resource_cap || st->data_cap != hdr->state_data_cap ||
	    st->data_len > st->data_cap) {
		*why = PROCCTL_REJECT_STATE_LAYOUT;
		return -EPROTO;
	}
	if (st->instance_id != hdr->instance_id) {
		*why = PROCCTL_REJECT_STATE_INSTANCE;
		return -EPROTO;
	}
	if (st->writer_pid != hdr->creator_pid) {
		*why = PROCCTL_REJECT_STATE_WRITER;
		return -EPROTO;
	}
	/* The header check bounds nres and data_cap, so this fits in len. */
	used = sizeof *st + (size_t)st->nres * sizeof(struct procctl_res_entry) + st->data_len;
	if (used > len) {
		*why = PROCCTL_REJECT_STATE_LAYOUT;
		return -EPROTO;
	}
	if (procctl_crc32c(0, (const unsigned char *)buf + PROCCTL_STATE_CRC_OFF, used - PROCCTL_STATE_CRC_OFF) !=
	    st->crc) {
		*why = PROCCTL_REJECT_STATE_CRC;
		return -EPROTO;
	}
	memset(view, 0, sizeof *view);
	view->seq = st->seq;
	view->acked_gen = st->acked_gen;
	view->ack_status = st->ack_status;
	view->nres = st->nres;
	view->res = (const struct procctl_res_entry *)(const void *)(st + 1);
	view->data_len = st->data_len;
	view->data = (const unsigned char *)(view->res + st->nres);
	return 0;
}

/* One copy: the block, the canary, then seq again, in one call (the
 * kernel copies remote iovecs in order; where it does not, the CRC
 * catches the tear). Through /proc/<pid>/mem when process_vm_readv is
 * refused. 0, or -errno; a short read is -EFAULT. */
static int copy_once(pid_t pid, int mem_fd, const struct procctl_hdr *hdr, void *buf, uint64_t *canary, uint32_t *seq2)
{
	struct iovec lo[3] = {{buf, hdr->state_size}, {canary, 8}, {seq2, 4}};
	struct iovec ro[3] = {{(void *)(uintptr_t)hdr->state_addr, hdr->state_size},
			      {(void *)(uintptr_t)hdr->canary_addr, 8},
			      {(void *)(uintptr_t)(hdr->state_addr + offsetof(struct procctl_state_hdr, seq)), 4}};
	size_t want = hdr->state_size + 12u;
	ssize_t n = process_vm_readv(pid, lo, 3, ro, 3, 0);
	int i;

	if (n >= 0)
		return (size_t)n == want ? 0 : -EFAULT;
	if ((errno != EPERM && errno != ENOSYS) || mem_fd < 0)
		return -errno;
	for (i = 0; i < 3; i++) {
		n = pread(mem_fd, lo[i].iov_base, lo[i].iov_len, (off_t)(uintptr_t)ro[i].iov_base);
		if (n < 0)
			return -errno;
		if ((size_t)n != lo[i].iov_len)
			return n == 0 ? -ESRCH : -EFAULT; /* 0 bytes: the mm is gone (exec) */
	}
	return 0;
}

int procctl_state_read(pid_t pid, int mem_fd, const struct procctl_hdr *hdr, void *buf,
		       struct procctl_state_view *view, enum procctl_reject *why)
{
	const struct procctl_state_hdr *st = buf;
	int tries, err = -EAGAIN;

	*why = PROCCTL_REJECT_NONE;
	for (tries = 0; tries < PROCCTL_STATE_RETRIES; tries++) {
		uint64_t canary = 0;
		uint32_t seq2 = 0;

		err = copy_once(pid, mem_fd, hdr, buf, &canary, &seq2);
		if (err)
			return err;
		err = procctl_state_parse(buf, hdr->state_size, canary, hdr, view, why);
		if (seq2 != st->seq || (seq2 & 1u)) { /* a write overlapped the copy */
			err = -EAGAIN;
			*why = PROCCTL_REJECT_NONE;
			continue;
		}
		if (err != -EPROTO || *why != PROCCTL_REJECT_STATE_CRC)
			return err;
		/* A CRC mismatch with seq unchanged: the copy may be unordered
		 * (arm64); only a repeated mismatch is final. */
	}
	return err;
}
