/* SPDX-License-Identifier: Apache-2.0 */
/* test_opts.c - every options struct of libprocctl-agent is taken one way
 * (core/opts.h): a caller built against an older header (a smaller sz)
 * works, its missing fields 0; a newer one's larger struct works while
 * what this library does not know is 0, and is refused (EINVAL) when any
 * of it is set; sz 0 or past 4096 is refused. Each public constructor is
 * called as such a caller would: the struct inside a larger buffer. The
 * structs it fills take sizeof the caller's beside them: an older caller
 * gets what fits, a newer one 0 past what the library has. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "arbworld.h"
#include "opts.h"
#include "procctl_agent.h"
#include "procctl_arbiter.h"
#include "th.h"

/* A caller's opts of sz bytes: the struct known, then a newer header's
 * fields (tail: the value of the first such byte). */
union caller {
	size_t sz;
	unsigned char b[1024];
};

static void *caller(union caller *u, const void *known, size_t known_sz, size_t sz, unsigned char tail)
{
	memset(u, 0, sizeof *u);
	memcpy(u->b, known, known_sz < sz ? known_sz : sz);
	u->sz = sz;
	if (sz > known_sz)
		u->b[known_sz] = tail;
	return u;
}

static void take_rules(void **state)
{
	struct procctl_attach_opts mine, theirs = {.sz = sizeof theirs, .flags = PROCCTL_ATTACH_NO_GETFD};
	union caller u;
	(void)state;
	assert_int_equal(procctl_opts_take(&mine, sizeof mine, NULL), 0);
	assert_null(mine.proc_root);
	/* older: the fields past its sz read 0 */
	assert_int_equal(procctl_opts_take(&mine, sizeof mine, caller(&u, &theirs, sizeof theirs,
									   offsetof(struct procctl_attach_opts, flags), 0)), 0);
	assert_int_equal(mine.flags, 0);
	/* the same version */
	assert_int_equal(procctl_opts_take(&mine, sizeof mine, &theirs), 0);
	assert_int_equal(mine.flags, PROCCTL_ATTACH_NO_GETFD);
	/* newer: a zero tail is fine, a set one is not */
	assert_int_equal(procctl_opts_take(&mine, sizeof mine, caller(&u, &theirs, sizeof theirs, sizeof theirs + 16, 0)), 0);
	assert_int_equal(mine.flags, PROCCTL_ATTACH_NO_GETFD);
	assert_int_equal(procctl_opts_take(&mine, sizeof mine, caller(&u, &theirs, sizeof theirs, sizeof theirs + 16, 1)),
			 -EINVAL);
	/* no size, or not a size */
	assert_int_equal(procctl_opts_take(&mine, sizeof mine, caller(&u, &theirs, sizeof theirs, 0, 0)), -EINVAL);
	assert_int_equal(procctl_opts_take(&mine, sizeof mine, caller(&u, &theirs, sizeof theirs, sizeof(size_t) - 1, 0)),
			 -EINVAL);
	u.sz = PROCCTL_OPTS_MAX + 1;
	assert_int_equal(procctl_opts_take(&mine, sizeof mine, &u), -EINVAL);
}

static void arbiter_opts(void **state)
{
	struct world w;
	struct procctl_arbiter_source src;
	struct procctl_arbiter_opts o = {.sz = sizeof o, .kind = TH_GPU, .hold_ns = 1000000};
	procctl_arbiter_t *a;
	union caller u;
	(void)state;
	memset(&w, 0, sizeof w);
	src = aw_source(&w);
	/* older: without admit and admit_arg (everyone admitted) */
	assert_non_null(a = procctl_arbiter_new(caller(&u, &o, sizeof o, offsetof(struct procctl_arbiter_opts, admit), 0),
						&src));
	procctl_arbiter_free(a);
	assert_non_null(a = procctl_arbiter_new(caller(&u, &o, sizeof o, sizeof o + 8, 0), &src));
	procctl_arbiter_free(a);
	errno = 0;
	assert_null(procctl_arbiter_new(caller(&u, &o, sizeof o, sizeof o + 8, 0x80), &src));
	assert_int_equal(errno, EINVAL);
	/* so old it has no kind: refused for that, as kind 0 is */
	errno = 0;
	assert_null(procctl_arbiter_new(caller(&u, &o, sizeof o, sizeof(size_t), 0), &src));
	assert_int_equal(errno, EINVAL);
	/* the source is taken the same way: older (no stopped), newer */
	{
		union caller us;
		assert_non_null(a = procctl_arbiter_new(&o, caller(&us, &src, sizeof src,
								  offsetof(struct procctl_arbiter_source, stopped), 0)));
		procctl_arbiter_free(a);
		errno = 0;
		assert_null(procctl_arbiter_new(&o, caller(&us, &src, sizeof src, sizeof src + 8, 1)));
		assert_int_equal(errno, EINVAL);
	}
}

/* A newer caller's snapshots, 16 bytes longer each: the array at its
 * stride, each one's tail 0; an older one's, without waiters. */
static void snapshot_stride(void **state)
{
	struct world w;
	struct procctl_arbiter_source src;
	procctl_resource_t res[2] = {{.kind = TH_GPU, .id = {1}}, {.kind = TH_GPU, .id = {2}}};
	struct procctl_arbiter_opts o = {.sz = sizeof o, .kind = TH_GPU, .hold_ns = 1000000, .resources = res,
					 .nresources = 2};
	size_t stride = sizeof(struct procctl_arbiter_snapshot) + 16, old = offsetof(struct procctl_arbiter_snapshot, waiters);
	unsigned char buf[2 * (sizeof(struct procctl_arbiter_snapshot) + 16)];
	struct procctl_arbiter_snapshot s;
	procctl_arbiter_t *a;
	size_t i;
	(void)state;
	memset(&w, 0, sizeof w);
	src = aw_source(&w);
	assert_non_null(a = procctl_arbiter_new(&o, &src));
	memset(buf, 0xee, sizeof buf);
	assert_int_equal(procctl_arbiter_snapshot(a, (void *)buf, 2, stride), 2);
	for (i = 0; i < 2; i++) {
		memcpy(&s, buf + i * stride, sizeof s);
		assert_int_equal(s.res.id[0], i + 1);
		for (size_t k = sizeof s; k < stride; k++)
			assert_int_equal(buf[i * stride + k], 0);
	}
	memset(buf, 0xee, sizeof buf);
	assert_int_equal(procctl_arbiter_snapshot(a, (void *)buf, 2, old), 2);
	memcpy(&s, buf + old, old);
	assert_int_equal(s.res.id[0], 2);
	assert_int_equal(buf[2 * old], 0xee); /* nothing past the older caller's array */
	procctl_arbiter_free(a);
}

static void registry_opts(void **state)
{
	char dir[] = "/tmp/procctl-opts-XXXXXX";
	struct procctl_registry_opts o = {.sz = sizeof o, .consumer = "opts", .flags = PROCCTL_REGISTRY_PASSIVE};
	procctl_registry_t *r;
	union caller u;
	(void)state;
	assert_non_null(mkdtemp(dir));
	o.lock_dir = dir;
	/* older: up to flags, the caps 0 (their defaults) */
	assert_non_null(r = procctl_registry_new(caller(&u, &o, sizeof o, PROCCTL_OPTS_END(struct procctl_registry_opts, flags),
							 0)));
	procctl_registry_close(r, 0);
	assert_non_null(r = procctl_registry_new(caller(&u, &o, sizeof o, sizeof o + 4, 0)));
	procctl_registry_close(r, 0);
	errno = 0;
	assert_null(procctl_registry_new(caller(&u, &o, sizeof o, sizeof o + 4, 1)));
	assert_int_equal(errno, EINVAL);

	/* its stats: an older caller's prefix, a newer one's tail 0, no size */
	assert_non_null(r = procctl_registry_new(&o));
	memset(&u, 0xee, sizeof u);
	assert_int_equal(procctl_registry_stats(r, (void *)&u, offsetof(struct procctl_registry_stats, attach_attempts)), 0);
	assert_int_equal(u.b[offsetof(struct procctl_registry_stats, attach_attempts)], 0xee);
	memset(&u, 0xee, sizeof u);
	assert_int_equal(procctl_registry_stats(r, (void *)&u, sizeof(struct procctl_registry_stats) + 8), 0);
	assert_int_equal(u.b[sizeof(struct procctl_registry_stats) + 7], 0);
	assert_int_equal(u.b[sizeof(struct procctl_registry_stats) + 8], 0xee);
	assert_int_equal(procctl_registry_stats(r, (void *)&u, 0), -EINVAL);
	procctl_registry_close(r, 0);
	assert_int_equal(rmdir(dir), 0);
}

static void on_pid(pid_t pid, void *arg)
{
	(void)pid, (void)arg;
}

static void hello_opts(void **state)
{
	/* a sysfs without the uprobe PMU: past the options, new fails ENOENT */
	struct procctl_hello_opts o = {.sz = sizeof o, .on_pid = on_pid, .sysfs_root = "/nonexistent"};
	union caller u;
	(void)state;
	errno = 0;
	assert_null(procctl_hello_new(caller(&u, &o, sizeof o, offsetof(struct procctl_hello_opts, on_exec), 0)));
	assert_int_equal(errno, ENOENT);
	errno = 0;
	assert_null(procctl_hello_new(caller(&u, &o, sizeof o, sizeof o + 8, 0)));
	assert_int_equal(errno, ENOENT);
	errno = 0;
	assert_null(procctl_hello_new(caller(&u, &o, sizeof o, sizeof o + 8, 1)));
	assert_int_equal(errno, EINVAL);
}

static void attach_opts(void **state)
{
	/* a process that is gone: past the options, attach fails ESRCH */
	struct procctl_scan_entry e;
	struct procctl_attach_opts o = {.sz = sizeof o};
	enum procctl_reject why;
	union caller u;
	pid_t pid = fork();
	(void)state;
	assert_true(pid >= 0);
	if (!pid)
		_exit(0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	memset(&e, 0, sizeof e);
	e.pid = pid;
	errno = 0;
	assert_null(procctl_client_attach(&e, caller(&u, &o, sizeof o, offsetof(struct procctl_attach_opts, flags), 0), &why));
	assert_int_equal(errno, ESRCH);
	errno = 0;
	assert_null(procctl_client_attach(&e, caller(&u, &o, sizeof o, sizeof o + 8, 1), &why));
	assert_int_equal(errno, EINVAL);
	{
		static struct procctl_state st; /* 68 KiB */
		procctl_client_t *c = NULL;
		assert_int_equal(procctl_client_read_state(c, &st, sizeof st - 1, -1), -EINVAL);
	}
	o.flags = 0x100; /* not a flag it knows */
	errno = 0;
	assert_null(procctl_client_attach(&e, &o, &why));
	assert_int_equal(errno, EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(take_rules),
		cmocka_unit_test(arbiter_opts),
		cmocka_unit_test(snapshot_stride),
		cmocka_unit_test(registry_opts),
		cmocka_unit_test(hello_opts),
		cmocka_unit_test(attach_opts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
