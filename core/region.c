/* SPDX-License-Identifier: Apache-2.0 */
/* region.c - the agent's writes to one region (SPEC.md 6.1, 8, 9). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "procctl.h"

#include "region.h"

static const char *const reject_names[PROCCTL_REJECT__COUNT] = {
	[PROCCTL_REJECT_NONE] = "none",
	[PROCCTL_REJECT_BAD_MAGIC] = "bad_magic",
	[PROCCTL_REJECT_BAD_VERSION] = "unknown_major_version",
	[PROCCTL_REJECT_BAD_HEADER_CRC] = "bad_header_crc",
	[PROCCTL_REJECT_BAD_SIZE] = "bad_size",
	[PROCCTL_REJECT_BAD_LAYOUT] = "bad_layout",
	[PROCCTL_REJECT_BAD_FIELD] = "bad_field",
	[PROCCTL_REJECT_STATE_MAGIC] = "state_bad_magic",
	[PROCCTL_REJECT_STATE_LAYOUT] = "state_bad_layout",
	[PROCCTL_REJECT_STATE_INSTANCE] = "state_wrong_instance",
	[PROCCTL_REJECT_STATE_WRITER] = "state_wrong_writer",
	[PROCCTL_REJECT_STATE_CRC] = "state_bad_crc",
	[PROCCTL_REJECT_STATE_CANARY] = "state_canary_mismatch",
	[PROCCTL_REJECT_NOT_MEMFD] = "not_memfd",
	[PROCCTL_REJECT_HUGETLB] = "hugetlbfs",
	[PROCCTL_REJECT_UNSEALED] = "unsealed",
	[PROCCTL_REJECT_WRONG_SEALS] = "wrong_seals",
	[PROCCTL_REJECT_FD_SWAPPED] = "fd_swapped",
	[PROCCTL_REJECT_CONSUMER_MISMATCH] = "consumer_mismatch",
	[PROCCTL_REJECT_NOT_CREATOR] = "not_creator",
	[PROCCTL_REJECT_LIMIT] = "limit",
	[PROCCTL_REJECT_CONSUMER_LIMIT] = "consumer_limit",
	[PROCCTL_REJECT_REGION_LIMIT] = "region_limit",
};

const char *procctl_reject_name(enum procctl_reject why)
{
	return (unsigned)why < PROCCTL_REJECT__COUNT ? reject_names[why] : "unknown";
}

/* [off, off + len) lies inside [lo, hi). */
static int span_in(uint64_t off, uint64_t len, uint64_t lo, uint64_t hi)
{
	return off >= lo && off <= hi && len <= hi - off;
}

static int spans_disjoint(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a + alen <= b || b + blen <= a;
}

static int name_field_ok(const char *f, size_t size, size_t max)
{
	const char *end = memchr(f, 0, size);
	size_t i;
	if (!end || procctl_name_valid(f, max) < 0)
		return 0;
	for (i = (size_t)(end - f); i < size; i++)
		if (f[i])
			return 0;
	return 1;
}

enum procctl_reject procctl_hdr_check(const void *buf, size_t len, uint64_t file_size)
{
	struct procctl_hdr h;
	unsigned char tmp[PROCCTL_HDR_AREA];
	uint64_t slots_lo, grants_end;

	if (len < sizeof h)
		return PROCCTL_REJECT_BAD_SIZE;
	memcpy(&h, buf, sizeof h);
	if (h.magic != PROCCTL_MAGIC)
		return PROCCTL_REJECT_BAD_MAGIC;
	if (h.version_major != PROCCTL_VERSION_MAJOR)
		return PROCCTL_REJECT_BAD_VERSION;
	if (h.header_size < sizeof h || h.header_size > len || h.header_size > PROCCTL_HDR_AREA)
		return PROCCTL_REJECT_BAD_LAYOUT;
	memcpy(tmp, buf, h.header_size);
	memset(tmp + offsetof(struct procctl_hdr, header_crc), 0, sizeof h.header_crc);
	if (procctl_crc32c(0, tmp, h.header_size) != h.header_crc)
		return PROCCTL_REJECT_BAD_HEADER_CRC;
	if (h.region_size != file_size || h.region_size > PROCCTL_REGION_MAX || h.region_size % 4096u)
		return PROCCTL_REJECT_BAD_SIZE;
	if (h.instance_id == 0 || h.creator_pid <= 0 || h.schema_version == 0 ||
	    !name_field_ok(h.consumer, sizeof h.consumer, PROCCTL_CONSUMER_MAX) ||
	    h.lease_min_ns < PROCCTL_LEASE_FLOOR_NS || h.lease_max_ns > PROCCTL_LEASE_CEIL_NS ||
	    h.lease_min_ns > h.lease_max_ns || h.state_addr == 0 || h.state_addr % 8u || h.canary_addr == 0 ||
	    h.canary_addr % 8u || h.state_addr > UINT64_MAX - h.state_size || h.canary_addr > UINT64_MAX - 8u)
		return PROCCTL_REJECT_BAD_FIELD;
	if (h.payload_cap == 0 || h.payload_cap > PROCCTL_PAYLOAD_MAX || h.grant_cap > PROCCTL_GRANT_MAX ||
	    h.resource_cap > PROCCTL_RES_MAX || h.state_data_cap > PROCCTL_STATE_DATA_MAX ||
	    h.state_size < PROCCTL_STATE_SIZE(h.resource_cap, h.state_data_cap) ||
	    h.state_size > PROCCTL_STATE_SIZE_LIMIT)
		return PROCCTL_REJECT_BAD_LAYOUT;
	/* Inside a slot: header, grant table, payload, in that order. */
	grants_end = (uint64_t)h.grant_off + (uint64_t)h.grant_cap * sizeof(struct procctl_grant_entry);
	if (h.grant_off < sizeof(struct procctl_slot) || h.grant_off % 8u || h.payload_off % 8u ||
	    h.payload_off < grants_end || !span_in(h.payload_off, h.payload_cap, 0, h.slot_size))
		return PROCCTL_REJECT_BAD_LAYOUT;
	/* In the file: header, control block and two slots, disjoint. */
	slots_lo = h.header_size;
	if (h.ctrl_off % PROCCTL_ALIGN || h.ctrl_size < sizeof(struct procctl_ctrl) ||
	    h.slot_off[0] % PROCCTL_ALIGN || h.slot_off[1] % PROCCTL_ALIGN ||
	    !span_in(h.ctrl_off, h.ctrl_size, slots_lo, h.region_size) ||
	    !span_in(h.slot_off[0], h.slot_size, slots_lo, h.region_size) ||
	    !span_in(h.slot_off[1], h.slot_size, slots_lo, h.region_size) ||
	    !spans_disjoint(h.ctrl_off, h.ctrl_size, h.slot_off[0], h.slot_size) ||
	    !spans_disjoint(h.ctrl_off, h.ctrl_size, h.slot_off[1], h.slot_size) ||
	    !spans_disjoint(h.slot_off[0], h.slot_size, h.slot_off[1], h.slot_size))
		return PROCCTL_REJECT_BAD_LAYOUT;
	return PROCCTL_REJECT_NONE;
}

int procctl_region_map(struct procctl_region *r, int fd, uint64_t size, enum procctl_reject *why)
{
	unsigned char buf[PROCCTL_HDR_AREA];
	size_t n = size < sizeof buf ? (size_t)size : sizeof buf;
	void *map;

	memset(r, 0, sizeof *r);
	r->event_fd = -1;
	*why = PROCCTL_REJECT_NONE;
	if (size < sizeof r->hdr || size > PROCCTL_REGION_MAX) {
		*why = PROCCTL_REJECT_BAD_SIZE;
		return -EPROTO;
	}
	/* One private copy of the header, read once (SPEC.md 13.2); pread,
	 * not the mapping: touching a fresh mapping costs a page fault. */
	if (pread(fd, buf, n, 0) != (ssize_t)n)
		return -EIO;
	*why = procctl_hdr_check(buf, n, size);
	if (*why != PROCCTL_REJECT_NONE)
		return -EPROTO;
	map = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	memcpy(&r->hdr, buf, sizeof r->hdr);
	r->map = map;
	r->size = (size_t)size;
	r->ctrl = (struct procctl_ctrl *)(void *)(r->map + r->hdr.ctrl_off);
	r->grants = calloc(r->hdr.grant_cap + 1u, sizeof *r->grants);
	if (!r->grants) {
		procctl_region_unmap(r);
		return -ENOMEM;
	}
	return 0;
}

void procctl_region_unmap(struct procctl_region *r)
{
	if (r->map)
		munmap(r->map, r->size);
	if (r->event_fd >= 0)
		close(r->event_fd);
	free(r->payload);
	free(r->grants);
	memset(r, 0, sizeof *r);
	r->event_fd = -1;
}

/* Room for a payload of len bytes in the agent's copy: 0 or -ENOMEM. */
static int payload_fit(struct procctl_region *r, uint32_t len)
{
	unsigned char *p;
	if (len <= r->payload_room)
		return 0;
	if (!(p = realloc(r->payload, len)))
		return -ENOMEM;
	r->payload = p;
	r->payload_room = len;
	return 0;
}

static unsigned char *slot_base(const struct procctl_region *r, uint32_t i)
{
	return r->map + r->hdr.slot_off[i & 1u];
}

static int writable(const struct procctl_region *r)
{
	if (r->broken)
		return -EBUSY;
	if (r->gen >= PROCCTL_GEN_MAX)
		return -EOVERFLOW;
	if (!r->owner || (r->owner & (PROCCTL_OWNER_RELEASED | PROCCTL_OWNER_UNINSTALL)))
		return -EPERM;
	return 0;
}

/* After a write section: the futex, and the event socket (SPEC.md 6.6),
 * which never blocks (a full queue: the process has unread ones). */
static void wake(struct procctl_region *r)
{
	syscall(SYS_futex, &r->ctrl->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	if (r->event_fd >= 0)
		(void)send(r->event_fd, &r->gen, sizeof r->gen, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Enter the write section by CAS even -> odd from the seq this agent left;
 * never spin on a failed CAS (SPEC.md 6.1). */
static int write_begin(struct procctl_region *r)
{
	uint32_t s = r->seq;
	if (!procctl__cas(&r->ctrl->seq, &s, r->seq + 1u, __ATOMIC_ACQ_REL)) {
		r->broken = 1;
		return -EBUSY;
	}
	procctl__smp_wmb(); /* odd seq before the data; pairs with the reader's smp_rmb */
	return 0;
}

/* Leave by CAS odd -> odd + 1 (release: the data before the even seq;
 * pairs with the reader's acquire load); the caller then wakes. */
static int write_end(struct procctl_region *r)
{
	uint32_t odd = r->seq + 1u;
	if (!procctl__cas(&r->ctrl->seq, &odd, r->seq + 2u, __ATOMIC_RELEASE)) {
		r->broken = 1;
		return -EBUSY;
	}
	r->seq += 2u;
	return 0;
}

/* Leave a section in which nothing was written (the owner word moved
 * under us): the region is contested, so it is broken for us too. */
static int64_t write_abort(struct procctl_region *r)
{
	uint32_t odd = r->seq + 1u;
	if (procctl__cas(&r->ctrl->seq, &odd, r->seq + 2u, __ATOMIC_RELEASE)) {
		r->seq += 2u;
		wake(r);
	}
	r->broken = 1;
	return -EBUSY;
}

/* Store bytes into shared memory with relaxed atomics, so that a
 * concurrent reader's atomic loads race with nothing undefined. */
static void store_shared(unsigned char *dst, const void *src, size_t n)
{
	const unsigned char *s = src;
	for (; n >= 8; n -= 8, s += 8, dst += 8) {
		uint64_t v;
		memcpy(&v, s, 8);
		procctl__store_relaxed((uint64_t *)(void *)dst, v);
	}
	for (; n; n--)
		procctl__store_relaxed(dst++, *s++);
}

static uint32_t slot_crc(const struct procctl_region *r, const struct procctl_slot *s,
			 const struct procctl_grant_entry *grants, const unsigned char *payload)
{
	uint32_t crc = procctl_crc32c(0, &r->hdr.instance_id, 8);
	crc = procctl_crc32c(crc, s, PROCCTL_SLOT_CRC_BYTES);
	crc = procctl_crc32c(crc, grants, (size_t)s->ngrants * sizeof *grants);
	return procctl_crc32c(crc, payload, s->length);
}

/* Fill the inactive slot from the agent's copies at generation gen with
 * the owner's epoch, and flip; inside a write section. */
static void fill_slot(struct procctl_region *r, uint64_t gen)
{
	unsigned char *b = slot_base(r, r->active ^ 1u);
	struct procctl_slot s;

	memset(&s, 0, sizeof s);
	s.gen = gen;
	s.config_gen = r->config_gen;
	s.epoch = PROCCTL_OWNER_EPOCH(r->owner);
	s.flags = r->slot_flags;
	s.length = r->length;
	s.ngrants = r->ngrants;
	s.crc = slot_crc(r, &s, r->grants, r->payload);
	store_shared(b, &s, sizeof s);
	store_shared(b + r->hdr.grant_off, r->grants, (size_t)r->ngrants * sizeof *r->grants);
	store_shared(b + r->hdr.payload_off, r->payload, r->length);
	r->active ^= 1u;
	procctl__store_relaxed(&r->ctrl->active, r->active);
	r->gen = gen;
}

/* The body of a write section entered by the caller: set the owner word
 * and lease, optionally a new slot from the agent's copies, leave, and
 * wake. A claim (claim: 1) moves the heartbeat before the wake (SPEC.md
 * 8.3), so that no process woken by it sees the lease it has not yet
 * begun. Returns the new generation, 0 when no slot was written, or
 * -EBUSY. */
static int64_t write_body(struct procctl_region *r, uint64_t owner, uint64_t lease_ns, int slot, int claim)
{
	uint64_t cur = procctl__load_relaxed(&r->ctrl->owner);
	int err;

	if (owner != cur && (cur != r->owner || !procctl__cas(&r->ctrl->owner, &cur, owner, __ATOMIC_ACQ_REL)))
		return write_abort(r);
	r->owner = owner;
	r->lease_ns = lease_ns;
	procctl__store_relaxed(&r->ctrl->lease_ns, lease_ns);
	if (slot)
		fill_slot(r, r->gen + 1u);
	if ((err = write_end(r)))
		return err;
	if (claim) {
		/* A successor continues the count: its first beat is a move. */
		r->heartbeat = procctl__load_relaxed(&r->ctrl->heartbeat);
		procctl_region_heartbeat(r);
	}
	wake(r);
	return slot ? (int64_t)r->gen : 0;
}

static int64_t write_section(struct procctl_region *r, uint64_t owner, int slot)
{
	int err = writable(r);
	if (!err)
		err = write_begin(r);
	return err ? err : write_body(r, owner, r->lease_ns, slot, 0);
}

/* One write section that carries a slot built from the agent's copies. */
static int64_t write_slot(struct procctl_region *r)
{
	return write_section(r, r->owner, 1);
}

static int grant_entry_valid(const struct procctl_grant_entry *e, uint64_t slot_gen)
{
	return e->kind && !e->reserved0[0] && !e->reserved0[1] && !e->reserved0[2] && e->grant_id && e->gen &&
	       e->gen <= slot_gen && e->revoke_gen <= slot_gen && (!e->revoke_gen || e->revoke_gen >= e->gen);
}

static int same_resource(const struct procctl_grant_entry *e, uint32_t kind, const uint8_t *id)
{
	return e->kind == kind && !memcmp(e->id, id, sizeof e->id);
}

/* Adopt the active slot into the agent's copies (SPEC.md 8.3): the
 * process's checks, with the slot's own epoch (the CRC covers it: a
 * claimer that died after changing the owner word left a good slot of the
 * previous epoch). 0, or -EBADMSG when nothing valid is there. */
static int adopt_slot(struct procctl_region *r)
{
	const unsigned char *b = slot_base(r, r->active);
	struct procctl_slot s;
	uint32_t i, j;

	memcpy(&s, b, sizeof s);
	if (s.gen == 0 || !procctl_slot_valid(&s, r->hdr.payload_cap, r->hdr.grant_cap))
		return -EBADMSG;
	if (payload_fit(r, s.length) < 0)
		return -EBADMSG;
	memcpy(r->grants, b + r->hdr.grant_off, (size_t)s.ngrants * sizeof *r->grants);
	if (s.length)
		memcpy(r->payload, b + r->hdr.payload_off, s.length);
	if (slot_crc(r, &s, r->grants, r->payload) != s.crc)
		return -EBADMSG;
	for (i = 0; i < s.ngrants; i++) {
		if (!grant_entry_valid(&r->grants[i], s.gen))
			return -EBADMSG;
		for (j = 0; j < i; j++)
			if (same_resource(&r->grants[j], r->grants[i].kind, r->grants[i].id))
				return -EBADMSG;
	}
	r->gen = s.gen;
	r->config_gen = s.config_gen;
	r->slot_flags = s.flags & PROCCTL_SLOT_CLEARED;
	r->length = s.length;
	r->ngrants = s.ngrants;
	return 0;
}

uint64_t procctl_region_peek_config_gen(const struct procctl_region *r)
{
	const struct procctl_slot *sl;
	struct procctl_slot s;
	uint32_t seq;
	int tries;
	for (tries = 0; tries < 4; tries++) {
		if ((seq = procctl__smp_load_acquire(&r->ctrl->seq)) & 1u)
			continue; /* a writer inside */
		sl = (const struct procctl_slot *)(const void *)slot_base(r, procctl__load_relaxed(&r->ctrl->active) & 1u);
		memset(&s, 0, sizeof s);
		s.gen = procctl__load_relaxed(&sl->gen);
		s.config_gen = procctl__load_relaxed(&sl->config_gen);
		s.length = procctl__load_relaxed(&sl->length);
		s.ngrants = procctl__load_relaxed(&sl->ngrants);
		procctl__smp_rmb(); /* the loads above before seq's: pairs with the writer's release in write_end */
		if (procctl__load_relaxed(&r->ctrl->seq) != seq)
			continue;
		return s.gen && s.config_gen <= s.gen && procctl_slot_valid(&s, r->hdr.payload_cap, r->hdr.grant_cap)
			       ? s.config_gen : 0;
	}
	return 0;
}

int64_t procctl_region_claim(struct procctl_region *r, uint32_t domain, uint32_t epoch, uint64_t lease_ns)
{
	uint64_t old = procctl__smp_load_acquire(&r->ctrl->owner);
	uint64_t mine = PROCCTL_OWNER(domain, epoch, 0);
	uint32_t s = procctl__load_relaxed(&r->ctrl->seq);

	if (domain == 0 || domain > PROCCTL_DOMAIN_MAX || epoch == 0)
		return -EINVAL;
	if (old && PROCCTL_OWNER_DOMAIN(old) != domain)
		return -EEXIST;
	{
		/* Room for the config to adopt, before the section: out of
		 * memory leaves the region as it was (a slot that grows after
		 * this look is its process's doing: not adopted). */
		const struct procctl_slot *a = (const void *)slot_base(r, procctl__load_relaxed(&r->ctrl->active));
		uint32_t len = procctl__load_relaxed(&a->length);
		if (payload_fit(r, len < r->hdr.payload_cap ? len : r->hdr.payload_cap) < 0)
			return -ENOMEM;
	}
	r->broken = 0;
	/* Enter the write section; a section left open by a dead writer (we
	 * hold the lock, so nobody else is inside) is taken over: its data
	 * went to the inactive slot, so the active one is the last good one. */
	if (!(s & 1u)) {
		r->seq = s;
		if (write_begin(r))
			return -EBUSY;
	} else {
		r->seq = s - 1u;
	}
	r->active = procctl__load_relaxed(&r->ctrl->active) & 1u;
	if (adopt_slot(r) < 0) {
		/* Nothing valid to adopt: no config, no grants, and a generation
		 * above anything either slot shows. */
		uint64_t g0 = procctl__load_relaxed(&((const struct procctl_slot *)(const void *)slot_base(r, 0))->gen);
		uint64_t g1 = procctl__load_relaxed(&((const struct procctl_slot *)(const void *)slot_base(r, 1))->gen);
		r->config_gen = 0;
		r->slot_flags = 0;
		r->length = 0;
		r->ngrants = 0;
		r->gen = g0 > g1 ? g0 : g1;
	}
	if (r->gen >= PROCCTL_GEN_MAX) { /* no generation left to write */
		write_abort(r);
		return -EBADMSG;
	}
	r->owner = old; /* the word write_body replaces by CAS */
	return write_body(r, mine, lease_ns, 1, 1);
}

int64_t procctl_region_publish(struct procctl_region *r, const void *payload, uint32_t len)
{
	int err = writable(r);
	if (err)
		return err;
	if (len == 0 || len > r->hdr.payload_cap || !payload)
		return -EINVAL;
	if (payload_fit(r, len) < 0)
		return -ENOMEM;
	memcpy(r->payload, payload, len);
	r->length = len;
	r->slot_flags = 0;
	r->config_gen = r->gen + 1u;
	return write_slot(r);
}

int64_t procctl_region_clear(struct procctl_region *r)
{
	int err = writable(r);
	if (err)
		return err;
	r->length = 0;
	r->slot_flags = PROCCTL_SLOT_CLEARED;
	r->config_gen = r->gen + 1u;
	return write_slot(r);
}

/* The grant entry for res, or NULL. */
static struct procctl_grant_entry *find_grant(struct procctl_region *r, const procctl_resource_t *res)
{
	uint32_t i;
	for (i = 0; i < r->ngrants; i++)
		if (same_resource(&r->grants[i], res->kind, res->id))
			return &r->grants[i];
	return NULL;
}

int64_t procctl_region_grant(struct procctl_region *r, const procctl_resource_t *res, uint64_t grant_id)
{
	struct procctl_grant_entry *e;
	int err = writable(r);
	if (err)
		return err;
	if (grant_id == 0 || !res || !res->kind)
		return -EINVAL;
	e = find_grant(r, res);
	if (!e) {
		if (r->ngrants >= r->hdr.grant_cap)
			return -ENOSPC;
		e = &r->grants[r->ngrants++];
	}
	memset(e, 0, sizeof *e);
	e->kind = res->kind;
	memcpy(e->id, res->id, sizeof e->id);
	e->grant_id = grant_id;
	e->gen = r->gen + 1u;
	return write_slot(r);
}

/* The existing grant entry for res in a writable region: 0, -ENOENT, or
 * why the region cannot be written. */
static int existing_grant(struct procctl_region *r, const procctl_resource_t *res, struct procctl_grant_entry **e)
{
	int err = writable(r);
	if (err)
		return err;
	*e = res ? find_grant(r, res) : NULL;
	return *e ? 0 : -ENOENT;
}

int64_t procctl_region_revoke(struct procctl_region *r, const procctl_resource_t *res)
{
	struct procctl_grant_entry *e;
	int err = existing_grant(r, res, &e);
	if (err)
		return err;
	if (e->revoke_gen) /* published: a failed write breaks the region */
		return (int64_t)e->revoke_gen;
	e->revoke_gen = r->gen + 1u;
	return write_slot(r);
}

int64_t procctl_region_drop(struct procctl_region *r, const procctl_resource_t *res)
{
	struct procctl_grant_entry *e;
	int err = existing_grant(r, res, &e);
	if (err)
		return err;
	*e = r->grants[--r->ngrants];
	return write_slot(r);
}

int procctl_region_set_lease(struct procctl_region *r, uint64_t lease_ns)
{
	int err = writable(r);
	if (!err)
		err = write_begin(r);
	return err ? err : (int)write_body(r, r->owner, lease_ns, 0, 0);
}

int procctl_region_release(struct procctl_region *r)
{
	return (int)write_section(r, r->owner | PROCCTL_OWNER_RELEASED, 0);
}

int64_t procctl_region_uninstall(struct procctl_region *r)
{
	int err = writable(r);
	if (err)
		return err;
	r->length = 0;
	r->ngrants = 0;
	r->slot_flags = PROCCTL_SLOT_CLEARED;
	r->config_gen = r->gen + 1u;
	return write_section(r, r->owner | PROCCTL_OWNER_UNINSTALL, 1);
}

void procctl_region_heartbeat(struct procctl_region *r)
{
	if (writable(r))
		return;
	/* Pairs with nothing: the process only compares the value. */
	procctl__smp_store_release(&r->ctrl->heartbeat, ++r->heartbeat);
}
