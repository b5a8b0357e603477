/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_process - the process side reading bytes a hostile agent wrote.
 * Each input becomes the control block and both slots of a real region
 * (mapped read/write beside the process's read-only view), optionally
 * with valid CRCs so the fuzzer gets past them; then every read call runs.
 * Nothing may crash, read out of bounds, or return more than asked. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "procctl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PAYLOAD_CAP 256u
#define NRES 4u

static procctl_t ctx, pristine;
static unsigned char storage[PROCCTL_STATE_STORAGE(NRES, 64)];
static unsigned char *rw;
static struct procctl_hdr hdr;

static void setup(void)
{
	procctl_config_t cfg;
	char path[64];
	int fd;
	memset(&cfg, 0, sizeof cfg);
	cfg.consumer = "fuzz";
	cfg.schema_version = 1;
	cfg.payload_capacity = PAYLOAD_CAP;
	cfg.state_capacity = 64;
	cfg.resource_capacity = NRES;
	cfg.state_storage = storage;
	if (procctl_init(&ctx, &cfg) < 0)
		abort();
	snprintf(path, sizeof path, "/proc/self/fd/%d", procctl_fd(&ctx));
	fd = open(path, O_RDWR);
	if (fd < 0 || pread(fd, &hdr, sizeof hdr, 0) != (ssize_t)sizeof hdr)
		abort();
	rw = mmap(NULL, hdr.region_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (rw == MAP_FAILED)
		abort();
	close(fd);
	pristine = ctx;
}

/* Give slot i the CRC a correct writer would have given it. */
static void fix_crc(unsigned i)
{
	unsigned char *b = rw + hdr.slot_off[i];
	struct procctl_slot s;
	uint32_t crc;
	memcpy(&s, b, sizeof s);
	if (s.ngrants > hdr.grant_cap || s.length > hdr.payload_cap)
		return;
	crc = procctl_crc32c(0, &hdr.instance_id, 8);
	crc = procctl_crc32c(crc, &s, PROCCTL_SLOT_CRC_BYTES);
	crc = procctl_crc32c(crc, b + hdr.grant_off, (size_t)s.ngrants * sizeof(struct procctl_grant_entry));
	crc = procctl_crc32c(crc, b + hdr.payload_off, s.length);
	s.crc = crc;
	memcpy(b, &s, sizeof s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char buf[PAYLOAD_CAP + 16];
	size_t want = sizeof(struct procctl_ctrl) + 2u * hdr.slot_size, n;
	procctl_resource_t res;
	procctl_grant_t g;
	uint64_t gen = 0, now;
	uint8_t opts;
	size_t cap;
	int r;

	if (!rw)
		setup();
	if (size < 1 + 8 + sizeof res)
		return 0;
	opts = data[0];
	memcpy(&now, data + 1, 8);
	memcpy(&res, data + 9, sizeof res);
	data += 9 + sizeof res;
	size -= 9 + sizeof res;
	cap = (size_t)(opts >> 2) * 5u; /* 0 .. 315: below and above PAYLOAD_CAP */

	/* The agent's side of the region: ctrl block and both slots. */
	memset(rw + hdr.ctrl_off, 0, want);
	n = size < sizeof(struct procctl_ctrl) ? size : sizeof(struct procctl_ctrl);
	memcpy(rw + hdr.ctrl_off, data, n);
	data += n;
	size -= n;
	for (unsigned i = 0; i < 2; i++) {
		n = size < hdr.slot_size ? size : hdr.slot_size;
		memcpy(rw + hdr.slot_off[i], data, n);
		data += n;
		size -= n;
		if (opts & 1)
			fix_crc(i);
	}
	if (opts & 2) { /* make the owner's epoch agree with the active slot */
		struct procctl_ctrl *k = (struct procctl_ctrl *)(void *)(rw + hdr.ctrl_off);
		const struct procctl_slot *s = (const void *)(rw + hdr.slot_off[k->active & 1u]);
		k->owner = PROCCTL_OWNER(1, s->epoch, k->owner & 0xff);
	}

	ctx = pristine;
	memset(buf, 0xee, sizeof buf);
	r = procctl_poll(&ctx, buf, cap, &gen);
	if (r > 0 && ((size_t)r > cap || (size_t)r > PAYLOAD_CAP))
		abort();
	if (r < 0 && r != -EBUSY && r != -EAGAIN && r != -EBADMSG && r != -ESTALE && r != -EMSGSIZE &&
	    r != -ENODATA)
		abort();
	if (buf[cap < PAYLOAD_CAP ? cap : PAYLOAD_CAP] != 0xee) /* never past the buffer */
		abort();
	procctl_poll(&ctx, buf, cap, &gen);
	r = procctl_grant_get(&ctx, res.kind, res.id, &g);
	if (r > 0 && (g.grant_id == 0 || g.gen > g.seen_gen))
		abort();
	procctl_grant_usable(&ctx, &g, 0);
	procctl_lease_expired(&ctx, now);
	procctl_lease_expired(&ctx, now + (uint64_t)opts * 1000000u);
	procctl_agent_attached(&ctx);
	procctl_wait(&ctx, 0);
	if (r >= 0)
		procctl_resource_report(&ctx, res.kind, res.id, PROCCTL_RES_RELEASED, 0, &g, PROCCTL_TRY);
	if (gen)
		procctl_ack(&ctx, gen, PROCCTL_TRY);
	return 0;
}
