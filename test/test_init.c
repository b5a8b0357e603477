/* SPDX-License-Identifier: Apache-2.0 */
/* procctl_init: argument checks, the memfd it creates (name, seals,
 * read-only mapping, CLOEXEC), the header an agent will validate, the
 * initial state block, close. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "region.h"
#include "state.h"
#include "th.h"

static unsigned char storage[PROCCTL_STATE_STORAGE(2, 100) + 1];

static procctl_config_t good(void)
{
	procctl_config_t c;
	memset(&c, 0, sizeof c);
	c.consumer = "echo.v2_x-y";
	c.schema_version = 3;
	c.payload_capacity = 1000;
	c.state_capacity = 100;
	c.resource_capacity = 2;
	c.state_storage = storage + 1; /* any alignment */
	return c;
}

static void bad_config(void **state)
{
	procctl_t ctx;
	procctl_config_t c;
	(void)state;
#define BAD(field, value)                                          \
	do {                                                       \
		c = good();                                        \
		c.field = value;                                   \
		assert_int_equal(procctl_init(&ctx, &c), -EINVAL); \
	} while (0)
	BAD(consumer, NULL);
	BAD(consumer, "");
	BAD(consumer, "Echo");
	BAD(consumer, "echo/1");
	BAD(consumer, "a-very-long-consumer-name-32chars");
	BAD(schema_version, 0);
	BAD(payload_capacity, 0);
	BAD(payload_capacity, PROCCTL_PAYLOAD_MAX + 1);
	BAD(state_capacity, PROCCTL_STATE_DATA_MAX + 1);
	BAD(resource_capacity, PROCCTL_RES_MAX + 1);
	BAD(state_storage, NULL);
	BAD(lease_min_ns, PROCCTL_LEASE_FLOOR_NS - 1);
	BAD(lease_max_ns, PROCCTL_LEASE_CEIL_NS + 1);
	BAD(lease_min_ns, PROCCTL_LEASE_MAX_DEFAULT_NS + 1);
	BAD(flags, 2); /* unknown flags */
	assert_int_equal(procctl_init(&ctx, NULL), -EINVAL);
	/* The longest legal name works. */
	c = good();
	c.consumer = "abcdefghijklmnopqrstuvwxyz01234";
	assert_int_equal(procctl_init(&ctx, &c), 0);
	procctl_close(&ctx);
#undef BAD
}

static void the_memfd(void **state)
{
	procctl_config_t c = good();
	procctl_t ctx;
	char path[64], link[256];
	unsigned char hdr[PROCCTL_HDR_AREA];
	struct procctl_hdr h;
	struct statfs sfs;
	ssize_t n;
	int fd;
	(void)state;

	assert_int_equal(procctl_init(&ctx, &c), 0);
	fd = procctl_fd(&ctx);
	assert_true(fd >= 0);
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof link - 1);
	assert_true(n > 0);
	link[n] = 0;
	assert_string_equal(link, "/memfd:procctl:echo.v2_x-y-v3 (deleted)");
	assert_int_equal(fcntl(fd, F_GET_SEALS), F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	assert_int_equal(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	assert_int_equal(fstatfs(fd, &sfs), 0);
	assert_int_equal(sfs.f_type, 0x01021994); /* TMPFS_MAGIC: shmem, not hugetlbfs */
	/* No more seals, no resize. */
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(ftruncate(fd, 0), -1);

	/* The header validates as an agent checks it, and says what init
	 * was given. */
	n = pread(fd, hdr, sizeof hdr, 0);
	assert_int_equal(n, sizeof hdr);
	memcpy(&h, hdr, sizeof h);
	assert_int_equal(procctl_hdr_check(hdr, sizeof hdr, h.region_size), PROCCTL_REJECT_NONE);
	assert_int_equal(h.creator_pid, getpid());
	assert_int_equal(h.schema_version, 3);
	assert_string_equal(h.consumer, "echo.v2_x-y");
	assert_int_equal(h.payload_cap, 1000);
	assert_int_equal(h.grant_cap, 2);
	assert_int_equal(h.resource_cap, 2);
	assert_int_equal(h.state_data_cap, 100);
	assert_int_equal(h.state_size, PROCCTL_STATE_SIZE(2, 100));
	assert_int_equal(h.lease_min_ns, PROCCTL_LEASE_MIN_DEFAULT_NS);
	assert_int_equal(h.lease_max_ns, PROCCTL_LEASE_MAX_DEFAULT_NS);
	assert_int_equal(h.instance_id, procctl_instance_id(&ctx));
	assert_int_equal(h.state_addr % 8, 0);
	assert_true(h.state_addr >= (uintptr_t)storage && h.state_addr < (uintptr_t)storage + sizeof storage);
	/* The canary holds the instance id; the state block validates. */
	assert_int_equal(*(const uint64_t *)(uintptr_t)h.canary_addr, h.instance_id);
	{
		struct procctl_state_view v;
		enum procctl_reject why;
		assert_int_equal(procctl_state_parse((const void *)(uintptr_t)h.state_addr, h.state_size,
						     h.instance_id, &h, &v, &why),
				 0);
		assert_int_equal(v.acked_gen, 0);
		assert_int_equal(v.data_len, 0);
	}

	/* The process maps it read-only, shared: /proc/self/maps says r--s. */
	{
		FILE *f = fopen("/proc/self/maps", "r");
		char line[512];
		int seen = 0;
		assert_non_null(f);
		while (fgets(line, sizeof line, f))
			if (strstr(line, "/memfd:procctl:echo.v2_x-y-v3")) {
				assert_non_null(strstr(line, " r--s "));
				seen++;
			}
		fclose(f);
		assert_int_equal(seen, 1);
	}

	/* Fresh: nothing to poll, never attached, expired. */
	{
		char buf[16];
		assert_int_equal(procctl_poll(&ctx, buf, sizeof buf, NULL), 0);
		assert_int_equal(procctl_agent_attached(&ctx), 0);
		assert_int_equal(procctl_lease_expired(&ctx, 0), 1);
		assert_int_equal(procctl_wait(&ctx, 1000), -ETIMEDOUT);
	}
	procctl_close(&ctx);
	assert_int_equal(fcntl(fd, F_GETFD), -1); /* closed */
	assert_int_equal(procctl_fd(&ctx), -1);
}

/* Many contexts in one process, each with its own region and canary. */
static void many_contexts(void **state)
{
	enum { N = 40 };
	static unsigned char st[N][PROCCTL_STATE_STORAGE(0, 8)];
	static procctl_t ctx[N];
	procctl_config_t c;
	int i, j;
	(void)state;
	memset(&c, 0, sizeof c);
	c.consumer = "many";
	c.schema_version = 1;
	c.payload_capacity = 64;
	c.state_capacity = 8;
	for (i = 0; i < N; i++) {
		c.state_storage = st[i];
		assert_int_equal(procctl_init(&ctx[i], &c), 0);
		for (j = 0; j < i; j++)
			assert_true(procctl_instance_id(&ctx[i]) != procctl_instance_id(&ctx[j]));
	}
	for (i = 0; i < N; i += 2)
		procctl_close(&ctx[i]);
	for (i = 1; i < N; i += 2)
		assert_int_equal(procctl_state_set(&ctx[i], "x", 1, 0), 0);
	for (i = 0; i < N; i += 2) { /* closed cells are reused */
		c.state_storage = st[i];
		assert_int_equal(procctl_init(&ctx[i], &c), 0);
	}
	for (i = 0; i < N; i++) {
		char buf[64];
		assert_int_equal(procctl_poll(&ctx[i], buf, sizeof buf, NULL), 0);
		procctl_close(&ctx[i]);
	}
}

/* Every call on a context with no region: -ECHILD, no crash. */
static void no_region_calls(procctl_t *ctx)
{
	procctl_grant_t g;
	uint64_t gen = 0;
	char buf[64];

	assert_int_equal(procctl_poll(ctx, buf, sizeof buf, &gen), -ECHILD);
	assert_int_equal(procctl_poll(ctx, buf, sizeof buf, &gen), -ECHILD); /* no fast path made of it */
	assert_int_equal(procctl_ack(ctx, 1, 0), -ECHILD);
	assert_int_equal(procctl_state_set(ctx, "x", 1, 0), -ECHILD);
	assert_int_equal(procctl_wait(ctx, 0), -ECHILD);
	assert_int_equal(procctl_grant_get(ctx, 1, 0, &g), -ECHILD);
	assert_int_equal(procctl_lease_expired(ctx, 0), 1);
	assert_int_equal(procctl_agent_attached(ctx), 0);
	assert_int_equal(procctl_fd(ctx), -1);
}

/* The seed's snippet calls procctl_init without looking at its result: a
 * failed init, and a closed context, hold no region, and every call says
 * so. procctl_reinit needs a context that was initialised. */
static void failed_and_closed(void **state)
{
	procctl_config_t c = good();
	procctl_t ctx;
	(void)state;

	memset(&ctx, 0xa5, sizeof ctx); /* a context on the stack, never zeroed */
	assert_int_equal(procctl_init(&ctx, NULL), -EINVAL);
	no_region_calls(&ctx);
	memset(&ctx, 0xa5, sizeof ctx);
	c.consumer = "Bad Name";
	assert_int_equal(procctl_init(&ctx, &c), -EINVAL);
	no_region_calls(&ctx);
	assert_int_equal(procctl_reinit(&ctx), -EINVAL);
	procctl_close(&ctx);

	c = good();
	assert_int_equal(procctl_init(&ctx, &c), 0);
	procctl_close(&ctx);
	no_region_calls(&ctx);
	assert_int_equal(procctl_reinit(&ctx), -EINVAL);
	procctl_close(&ctx); /* twice is fine */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bad_config),
		cmocka_unit_test(the_memfd),
		cmocka_unit_test(many_contexts),
		cmocka_unit_test(failed_and_closed),
	};
	return TH_RUN(tests);
}
