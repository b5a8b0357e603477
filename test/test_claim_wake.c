/* SPDX-License-Identifier: Apache-2.0 */
/* A claim moves the heartbeat before it wakes (SPEC.md 8.3): 48 processes
 * never attached, each waiting on its event socket, are claimed one after
 * another. At each claim's wake (the agent's send on the process's event
 * socket, seen here by interposing send) the region's heartbeat has moved
 * already, and each process, looking at its lease the moment it woke,
 * finds it live: none is left expired until its own timeout. The
 * processes are real (procsim); the agent is this test. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "client.h"
#include "th.h"

#define PROCS 48
#define S 1000000000ll

/* The heartbeat of the region being claimed (this process's read-only
 * mapping of it), and what send saw of it at the claim's wakes. */
static const uint64_t *claiming_hb;
static uint64_t hb_at_wake;
static int wakes;

/* Every send of this program, the agent library's wakes included. */
ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	if (claiming_hb && wakes++ == 0)
		hb_at_wake = __atomic_load_n(claiming_hb, __ATOMIC_ACQUIRE);
	return syscall(SYS_sendto, fd, buf, len, flags, NULL, 0);
}

/* The control block of pid's region at fd, mapped read-only here. */
static const struct procctl_ctrl *ctrl_of(pid_t pid, int fd, const struct procctl_hdr *hdr)
{
	char path[64];
	void *m;
	int mfd;
	snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)pid, fd);
	assert_true((mfd = open(path, O_RDONLY | O_CLOEXEC)) >= 0);
	m = mmap(NULL, hdr->region_size, PROT_READ, MAP_SHARED, mfd, 0);
	assert_true(m != MAP_FAILED);
	close(mfd);
	return (const struct procctl_ctrl *)(const void *)((const char *)m + hdr->ctrl_off);
}

static void no_process_woken_by_a_claim_sees_it_expired(void **state)
{
	static struct th_agent p[PROCS];
	procctl_client_t *c[PROCS];
	const struct procctl_ctrl *k[PROCS];
	int i, expired = 0;
	(void)state;
	for (i = 0; i < PROCS; i++) {
		struct procctl_scan_entry e;
		struct procctl_client_info info;
		enum procctl_reject why;
		int fd;
		th_procsim_start(&p[i]);
		fd = atoi(th_agent_ok(&p[i], "initev test"));
		assert_true(th_region(p[i].pid, fd, "test", &e));
		if (!(c[i] = procctl_client_attach(&e, NULL, &why)))
			fail_msg("attach: %s (%s)", strerror(errno), procctl_reject_name(why));
		assert_int_equal(procctl_client_info(c[i], &info, sizeof info), 0);
		assert_int_equal(info.event_socket, 1);
		k[i] = ctrl_of(p[i].pid, fd, &info.hdr);
		th_agent_send(&p[i], "evlease 30000"); /* each waits in poll on its socket */
	}
	for (i = 0; i < PROCS; i++) {
		uint64_t before = __atomic_load_n(&k[i]->heartbeat, __ATOMIC_ACQUIRE);
		const char *r;
		int n, dead;
		wakes = 0;
		claiming_hb = &k[i]->heartbeat;
		assert_true(procctl_client_claim(c[i], 1, 1, 10 * S) > 0);
		claiming_hb = NULL;
		assert_int_equal(wakes, 1); /* the claim woke it through its socket */
		if (hb_at_wake <= before)
			fail_msg("process %d: the claim woke it with the heartbeat at %llu, unmoved", i,
				 (unsigned long long)hb_at_wake);
		r = th_agent_reply(&p[i]);
		if (sscanf(r, "ok %d %d", &n, &dead) != 2 || n < 1)
			fail_msg("process %d: %s", i, r);
		expired += dead;
	}
	if (expired)
		fail_msg("%d of %d processes woken by their claim saw an expired lease", expired, PROCS);
	for (i = 0; i < PROCS; i++) {
		procctl_client_close(c[i]);
		th_agent_kill(&p[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(no_process_woken_by_a_claim_sees_it_expired),
	};
	return TH_RUN(tests);
}
