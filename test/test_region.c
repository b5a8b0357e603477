/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's checks of process bytes (SPEC.md 13.2): every header field
 * and state block field out of range is refused with its named reason. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "region.h"
#include "state.h"
#include "th.h"

static unsigned char storage[PROCCTL_STATE_STORAGE(2, 40)];
static procctl_t ctx;
static unsigned char good[PROCCTL_HDR_AREA];
static struct procctl_hdr gh;

static int setup(void **state)
{
	procctl_config_t cfg;
	(void)state;
	memset(&cfg, 0, sizeof cfg);
	cfg.consumer = "hdr";
	cfg.schema_version = 2;
	cfg.payload_capacity = 300;
	cfg.state_capacity = 40;
	cfg.resource_capacity = 2;
	cfg.state_storage = storage;
	assert_int_equal(procctl_init(&ctx, &cfg), 0);
	assert_int_equal(pread(procctl_fd(&ctx), good, sizeof good, 0), sizeof good);
	memcpy(&gh, good, sizeof gh);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	procctl_close(&ctx);
	return 0;
}

/* Check h (with a fresh CRC unless keep_crc) against the real file size. */
static enum procctl_reject check(struct procctl_hdr *h, int keep_crc)
{
	unsigned char buf[PROCCTL_HDR_AREA];
	memcpy(buf, good, sizeof buf);
	if (!keep_crc) {
		h->header_crc = 0;
		h->header_crc = procctl_crc32c(0, h, sizeof *h);
	}
	memcpy(buf, h, sizeof *h);
	return procctl_hdr_check(buf, sizeof buf, gh.region_size);
}

static void header_refusals(void **state)
{
	struct procctl_hdr h;
	(void)state;
	h = gh;
	assert_int_equal(check(&h, 1), PROCCTL_REJECT_NONE);
	assert_string_equal(procctl_reject_name(PROCCTL_REJECT_BAD_LAYOUT), "bad_layout");
	assert_string_equal(procctl_reject_name((enum procctl_reject)999), "unknown");
#define REFUSE(stmt, why)                               \
	do {                                            \
		h = gh;                                 \
		stmt;                                   \
		assert_int_equal(check(&h, 0), why);    \
	} while (0)
	REFUSE(h.magic ^= 1, PROCCTL_REJECT_BAD_MAGIC);
	REFUSE(h.version_major = 2, PROCCTL_REJECT_BAD_VERSION);
	REFUSE(h.header_size = 255, PROCCTL_REJECT_BAD_LAYOUT);
	REFUSE(h.header_size = PROCCTL_HDR_AREA + 8, PROCCTL_REJECT_BAD_LAYOUT);
	REFUSE(h.region_size += 4096, PROCCTL_REJECT_BAD_SIZE);
	REFUSE(h.instance_id = 0, PROCCTL_REJECT_BAD_FIELD);
	REFUSE(h.creator_pid = 0, PROCCTL_REJECT_BAD_FIELD);
	REFUSE(h.creator_pid = -5, PROCCTL_REJECT_BAD_FIELD);
	REFUSE(h.schema_version = 0, PROCCTL_REJECT_BAD_FIELD);
	REFUSE(h.consumer[0] = 'H', PROCCTL_REJECT_BAD_FIELD);
	REFUSE(h.consumer[0] = 0, PROCCTL_REJECT_BAD_FIELD);
	REFUSE(h.consumer[10] = 'x', PROCCTL_REJECT_BAD_FIELD); /* bytes after the NUL */
	REFUSE(memset(h.consumer, 'a', sizeof h.consumer), PROCCTL_REJECT_BAD_FIELD);
	REFUSE(h.lease_min_ns = 1, PROCCTL_REJECT_BAD_FIELD);
	REFUSE(h.lease_max_ns = PROCCTL_LEASE_CEIL_NS + 1, PROCCTL_REJECT_BAD_FIELD);
	REFUSE(h.lease_min_ns = h.lease_max_ns + 1, PROCCTL_REJECT_BAD_FIELD);
	REFUSE(h.state_addr = 0, PROCCTL_REJECT_BAD_FIELD);
	REFUSE(h.state_addr |= 4, PROCCTL_REJECT_BAD_FIELD);
	REFUSE(h.state_addr = UINT64_MAX - 7, PROCCTL_REJECT_BAD_FIELD);
	REFUSE(h.canary_addr = 3, PROCCTL_REJECT_BAD_FIELD);
	REFUSE(h.payload_cap = 0, PROCCTL_REJECT_BAD_LAYOUT);
	REFUSE(h.payload_cap = PROCCTL_PAYLOAD_MAX + 1, PROCCTL_REJECT_BAD_LAYOUT);
	REFUSE(h.payload_cap = h.slot_size, PROCCTL_REJECT_BAD_LAYOUT); /* past the slot */
	REFUSE(h.grant_cap = PROCCTL_GRANT_MAX + 1, PROCCTL_REJECT_BAD_LAYOUT);
	REFUSE(h.grant_cap = 3, PROCCTL_REJECT_BAD_LAYOUT); /* grants run into the payload */
	REFUSE(h.resource_cap = PROCCTL_RES_MAX + 1, PROCCTL_REJECT_BAD_LAYOUT);
	REFUSE(h.state_data_cap = PROCCTL_STATE_DATA_MAX + 1, PROCCTL_REJECT_BAD_LAYOUT);
	REFUSE(h.state_size = 64, PROCCTL_REJECT_BAD_LAYOUT);
	REFUSE(h.state_size = 73792 + 1, PROCCTL_REJECT_BAD_LAYOUT); /* SPEC.md 13.2's bound, plus one */
	REFUSE(h.grant_off = 8, PROCCTL_REJECT_BAD_LAYOUT);
	REFUSE(h.payload_off += 4, PROCCTL_REJECT_BAD_LAYOUT);
	REFUSE(h.ctrl_off = 8, PROCCTL_REJECT_BAD_LAYOUT);
	REFUSE(h.ctrl_off = 100, PROCCTL_REJECT_BAD_LAYOUT);
	REFUSE(h.ctrl_size = 8, PROCCTL_REJECT_BAD_LAYOUT);
	REFUSE(h.ctrl_off = h.slot_off[0], PROCCTL_REJECT_BAD_LAYOUT);
	REFUSE(h.slot_off[1] = h.slot_off[0], PROCCTL_REJECT_BAD_LAYOUT);
	REFUSE(h.slot_off[1] = (uint32_t)h.region_size - 64, PROCCTL_REJECT_BAD_LAYOUT);
	REFUSE(h.slot_off[0] = 0xffffffc0u, PROCCTL_REJECT_BAD_LAYOUT);
	REFUSE(h.slot_size = 0xffffffffu, PROCCTL_REJECT_BAD_LAYOUT);
#undef REFUSE
	/* SPEC.md 13.2's bound itself, whatever the capacities. */
	h = gh;
	h.state_size = 73792;
	assert_int_equal(check(&h, 0), PROCCTL_REJECT_NONE);
	/* A stale CRC. */
	h = gh;
	h.schema_version++;
	assert_int_equal(check(&h, 1), PROCCTL_REJECT_BAD_HEADER_CRC);
	/* Too short to hold a header. */
	assert_int_equal(procctl_hdr_check(good, 100, gh.region_size), PROCCTL_REJECT_BAD_SIZE);
	/* Over the hard limit. */
	h = gh;
	h.region_size = PROCCTL_REGION_MAX + 4096;
	h.header_crc = 0;
	h.header_crc = procctl_crc32c(0, &h, sizeof h);
	{
		unsigned char buf[PROCCTL_HDR_AREA];
		memcpy(buf, good, sizeof buf);
		memcpy(buf, &h, sizeof h);
		assert_int_equal(procctl_hdr_check(buf, sizeof buf, h.region_size), PROCCTL_REJECT_BAD_SIZE);
	}
}

/* A state block copy, mutated, with a fresh CRC unless keep_crc. */
static int parse(void (*mut)(struct procctl_state_hdr *), int keep_crc, uint64_t canary,
		 enum procctl_reject *why)
{
	static uint64_t buf[PROCCTL_STATE_STORAGE(2, 40) / 8 + 1];
	struct procctl_state_hdr *st = (struct procctl_state_hdr *)(void *)buf;
	struct procctl_state_view v;
	memcpy(buf, (const void *)(uintptr_t)gh.state_addr, gh.state_size);
	if (mut)
		mut(st);
	if (!keep_crc)
		st->crc = procctl_crc32c(0, (unsigned char *)buf + PROCCTL_STATE_CRC_OFF,
					 sizeof *st + (size_t)gh.resource_cap * sizeof(struct procctl_res_entry) +
						 (st->data_len <= gh.state_data_cap ? st->data_len : 0) -
						 PROCCTL_STATE_CRC_OFF);
	return procctl_state_parse(buf, gh.state_size, canary, &gh, &v, why);
}

static void m_magic(struct procctl_state_hdr *s) { s->magic ^= 1; }
static void m_odd(struct procctl_state_hdr *s) { s->seq |= 1; }
static void m_size(struct procctl_state_hdr *s) { s->size += 8; }
static void m_nres(struct procctl_state_hdr *s) { s->nres = 3; }
static void m_len(struct procctl_state_hdr *s) { s->data_len = 41; }
static void m_inst(struct procctl_state_hdr *s) { s->instance_id++; }
static void m_pid(struct procctl_state_hdr *s) { s->writer_pid++; }
static void m_data(struct procctl_state_hdr *s) { s->data_len = 2; }

static void state_refusals(void **state)
{
	enum procctl_reject why;
	uint64_t id = gh.instance_id;
	static uint64_t buf[PROCCTL_STATE_STORAGE(2, 40) / 8 + 1];
	struct procctl_state_view v;
	(void)state;

	assert_int_equal(procctl_state_set(&ctx, "abc", 3, 0), 0);
	assert_int_equal(parse(NULL, 1, id, &why), 0);
	assert_int_equal(parse(NULL, 1, 0, &why), -EPROTO);
	assert_int_equal(why, PROCCTL_REJECT_STATE_CANARY);
	assert_int_equal(parse(m_magic, 0, id, &why), -EPROTO);
	assert_int_equal(why, PROCCTL_REJECT_STATE_MAGIC);
	assert_int_equal(parse(m_odd, 0, id, &why), -EAGAIN);
	assert_int_equal(parse(m_size, 0, id, &why), -EPROTO);
	assert_int_equal(why, PROCCTL_REJECT_STATE_LAYOUT);
	assert_int_equal(parse(m_nres, 0, id, &why), -EPROTO);
	assert_int_equal(why, PROCCTL_REJECT_STATE_LAYOUT);
	assert_int_equal(parse(m_len, 0, id, &why), -EPROTO);
	assert_int_equal(why, PROCCTL_REJECT_STATE_LAYOUT);
	assert_int_equal(parse(m_inst, 0, id, &why), -EPROTO);
	assert_int_equal(why, PROCCTL_REJECT_STATE_INSTANCE);
	assert_int_equal(parse(m_pid, 0, id, &why), -EPROTO);
	assert_int_equal(why, PROCCTL_REJECT_STATE_WRITER);
	assert_int_equal(parse(m_data, 1, id, &why), -EPROTO); /* length changed, CRC not */
	assert_int_equal(why, PROCCTL_REJECT_STATE_CRC);
	/* Wrong length of copy. */
	memcpy(buf, (const void *)(uintptr_t)gh.state_addr, gh.state_size);
	assert_int_equal(procctl_state_parse(buf, gh.state_size - 8, id, &gh, &v, &why), -EPROTO);
	assert_int_equal(why, PROCCTL_REJECT_STATE_LAYOUT);

	/* The real remote read of this very process. */
	assert_int_equal(procctl_state_read(getpid(), -1, &gh, buf, &v, &why), 0);
	assert_int_equal(v.data_len, 3);
	assert_memory_equal(v.data, "abc", 3);
	/* A pid that does not exist. */
	assert_int_equal(procctl_state_read(0x3ffffff, -1, &gh, buf, &v, &why), -ESRCH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(header_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(state_refusals, setup, teardown),
	};
	return TH_RUN(tests);
}
