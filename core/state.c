/* state.c - check a state block copy (SPEC.md 7.2). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

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

int procctl_state_read(pid_t pid, const struct procctl_hdr *hdr, void *buf, struct procctl_state_view *view,
		       enum procctl_reject *why)
{
	const struct procctl_state_hdr *st = buf;
	void *seq_addr = (void *)(uintptr_t)(hdr->state_addr + offsetof(struct procctl_state_hdr, seq));
	int tries, err = -EAGAIN;

	*why = PROCCTL_REJECT_NONE;
	for (tries = 0; tries < PROCCTL_STATE_RETRIES; tries++) {
		uint64_t canary = 0;
		uint32_t seq2 = 0;
		struct iovec lo[2] = {{buf, hdr->state_size}, {&canary, sizeof canary}};
		struct iovec ro[2] = {{(void *)(uintptr_t)hdr->state_addr, hdr->state_size},
				      {(void *)(uintptr_t)hdr->canary_addr, sizeof canary}};
		struct iovec l2 = {&seq2, sizeof seq2}, r2 = {seq_addr, sizeof seq2};
		ssize_t n = process_vm_readv(pid, lo, 2, ro, 2, 0);

		if (n < 0)
			return -errno;
		if ((size_t)n != hdr->state_size + sizeof canary) /* a short read is a fault */
			return -EFAULT;
		n = process_vm_readv(pid, &l2, 1, &r2, 1, 0);
		if (n < 0)
			return -errno;
		if (n != (ssize_t)sizeof seq2)
			return -EFAULT;
		err = procctl_state_parse(buf, hdr->state_size, canary, hdr, view, why);
		if (seq2 != st->seq || (seq2 & 1u)) { /* a write overlapped the copy */
			err = -EAGAIN;
			*why = PROCCTL_REJECT_NONE;
			continue;
		}
		if (err != -EPROTO || *why != PROCCTL_REJECT_STATE_CRC)
			return err;
		/* A CRC mismatch with seq unchanged: the copy may still be
		 * unordered (arm64); only a repeated mismatch is final. */
	}
	return err;
}
