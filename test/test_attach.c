/* SPDX-License-Identifier: Apache-2.0 */
/* Attach refuses every bad region a hostile process can build, with its
 * named reason, and never crashes or takes a SIGBUS (SPEC.md 13.2). The
 * processes are real (procsim); the agent is this test. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "th.h"

struct found {
	int fd;
	struct procctl_scan_entry e;
};

static int keep(const struct procctl_scan_entry *e, void *arg)
{
	struct found *f = arg;
	if (e->fd == f->fd)
		f->e = *e;
	return 0;
}

/* Start procsim with `cmd`; the scan entry for the fd it reports. */
static struct procctl_scan_entry region_of(struct th_agent *p, const char *cmd)
{
	struct found f;
	memset(&f, 0, sizeof f);
	f.fd = atoi(th_agent_ok(p, "%s", cmd));
	assert_true(procctl_scan_pid(NULL, p->pid, NULL, keep, &f) >= 1);
	assert_int_equal(f.e.pid, p->pid);
	return f.e;
}

static void refused(const char *cmd, enum procctl_reject want)
{
	struct th_agent p;
	struct procctl_scan_entry e;
	enum procctl_reject why;
	procctl_client_t *c;

	th_procsim_start(&p);
	e = region_of(&p, cmd);
	c = procctl_client_attach(&e, NULL, &why);
	if (c)
		fail_msg("%s: attached, wanted %s", cmd, procctl_reject_name(want));
	assert_int_equal(errno, EPROTO);
	if (why != want)
		fail_msg("%s: refused as %s, wanted %s", cmd, procctl_reject_name(why), procctl_reject_name(want));
	th_agent_kill(&p);
}

static void bad_regions(void **state)
{
	(void)state;
	refused("hostile unsealed", PROCCTL_REJECT_UNSEALED);
	refused("hostile writeseal", PROCCTL_REJECT_WRONG_SEALS);
	refused("hostile futurewrite", PROCCTL_REJECT_WRONG_SEALS);
	refused("hostile toobig", PROCCTL_REJECT_BAD_SIZE);
	refused("hostile badmagic", PROCCTL_REJECT_BAD_MAGIC);
	refused("hostile badversion", PROCCTL_REJECT_BAD_VERSION);
	refused("hostile badlayout", PROCCTL_REJECT_BAD_LAYOUT);
	refused("hostile mismatch", PROCCTL_REJECT_CONSUMER_MISMATCH);
	/* Two faults: the first check in SPEC.md 13.2's order names it. */
	refused("hostile writeonly", PROCCTL_REJECT_WRONG_SEALS);
	refused("hostile badversioncrc", PROCCTL_REJECT_BAD_VERSION);
}

/* Whether this kernel lets procsim make what cmd asks for. */
static int available(const char *cmd)
{
	struct th_agent p;
	int ok;
	th_procsim_start(&p);
	ok = !strncmp(th_agent_cmd(&p, "%s", cmd), "ok", 2);
	th_agent_kill(&p);
	return ok;
}

/* F_SEAL_EXEC added to an executable memfd brings WRITE and FUTURE_WRITE
 * with it (Linux 6.3+: W^X): refused as wrong_seals (SPEC.md 2.3). */
static void exec_seal_added_later(void **state)
{
	(void)state;
	if (!available("hostile execseal"))
		TH_SKIP_OR_FAIL("memfd_create(MFD_EXEC) refused: Linux before 6.3, or vm.memfd_noexec = 2");
	refused("hostile execseal", PROCCTL_REJECT_WRONG_SEALS);
}

/* A hugetlbfs memfd is not on the memfd mount: the scan takes no identity
 * and attach fetches nothing. With its identity given (a scan on a kernel
 * without STATX_MNT_ID), the fetched fd is refused by its filesystem. */
static void hugetlb_refused(void **state)
{
	struct th_agent p;
	struct procctl_scan_entry e;
	enum procctl_reject why;
	char path[64];
	struct stat st;
	(void)state;
	if (!available("hostile hugetlb"))
		TH_SKIP_OR_FAIL("memfd_create(MFD_HUGETLB) not available here");
	refused("hostile hugetlb", PROCCTL_REJECT_NOT_MEMFD);
	th_procsim_start(&p);
	e = region_of(&p, "hostile hugetlb");
	assert_true(e.ino == 0);
	snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)p.pid, e.fd);
	assert_int_equal(stat(path, &st), 0);
	e.dev = st.st_dev;
	e.ino = st.st_ino;
	assert_null(procctl_client_attach(&e, NULL, &why));
	assert_int_equal(why, PROCCTL_REJECT_HUGETLB);
	th_agent_kill(&p);
}

/* The scan saw fd N; by the time the agent fetches it, N is another
 * memfd of the same name. */
static void fd_swapped(void **state)
{
	struct th_agent p;
	struct procctl_scan_entry e;
	enum procctl_reject why;
	(void)state;
	th_procsim_start(&p);
	e = region_of(&p, "init test");
	th_agent_ok(&p, "swapfd");
	assert_null(procctl_client_attach(&e, NULL, &why));
	assert_int_equal(errno, EPROTO);
	assert_int_equal(why, PROCCTL_REJECT_FD_SWAPPED);
	th_agent_kill(&p);
}

/* A forked child holds its parent's region: attach only through the
 * creator. */
static void not_through_a_child(void **state)
{
	struct th_agent p;
	struct procctl_scan_entry e, ce;
	struct found f;
	enum procctl_reject why;
	pid_t child;
	(void)state;
	th_procsim_start(&p);
	e = region_of(&p, "init test");
	child = (pid_t)atoi(th_agent_ok(&p, "fork"));
	memset(&f, 0, sizeof f);
	f.fd = e.fd;
	assert_true(procctl_scan_pid(NULL, child, NULL, keep, &f) >= 1);
	ce = f.e;
	assert_null(procctl_client_attach(&ce, NULL, &why));
	assert_int_equal(errno, EPROTO);
	assert_int_equal(why, PROCCTL_REJECT_NOT_CREATOR);
	kill(child, SIGKILL);
	th_agent_kill(&p);
}

static int64_t soon(int64_t ns)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + ns;
}

/* Attach succeeds, the state block does not validate: read_state says why. */
static void bad_state_blocks(void **state)
{
	static struct procctl_state st;
	/* the third has two faults: the first check in SPEC.md 13.2's order names it */
	const char *modes[] = {"hostile badstate", "hostile badinstance", "hostile badinstancecrc"};
	enum procctl_reject want[] = {PROCCTL_REJECT_STATE_CRC, PROCCTL_REJECT_STATE_INSTANCE,
				      PROCCTL_REJECT_STATE_INSTANCE};
	int i;
	(void)state;
	for (i = 0; i < 3; i++) {
		struct th_agent p;
		struct procctl_scan_entry e;
		enum procctl_reject why;
		procctl_client_t *c;
		th_procsim_start(&p);
		e = region_of(&p, modes[i]);
		c = procctl_client_attach(&e, NULL, &why);
		assert_non_null(c);
		assert_int_equal(procctl_client_read_state(c, &st, sizeof st, soon(1000000000)), -EPROTO);
		assert_int_equal(st.why, want[i]);
		procctl_client_close(c);
		th_agent_kill(&p);
	}
}

/* The process punches its whole region while the agent owns it: the
 * agent's next write finds seq moved, gives up, and nothing crashes. */
static void punched_region(void **state)
{
	struct th_agent p;
	struct procctl_scan_entry e;
	enum procctl_reject why;
	procctl_client_t *c;
	int i;
	(void)state;
	th_procsim_start(&p);
	e = region_of(&p, "init test");
	c = procctl_client_attach(&e, NULL, &why);
	assert_non_null(c);
	assert_true(procctl_client_claim(c, 1, 1, 10000000000ull) > 0);
	assert_true(procctl_client_write(c, "abc", 3) > 0);
	th_agent_ok(&p, "punch");
	assert_int_equal(procctl_client_write(c, "def", 3), -EBUSY);
	for (i = 0; i < 3; i++) /* no longer owned: refused, still no crash */
		assert_int_equal(procctl_client_write(c, "def", 3), -EPERM);
	procctl_client_heartbeat(c);
	procctl_client_close(c);
	th_agent_kill(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bad_regions),
		cmocka_unit_test(exec_seal_added_later),
		cmocka_unit_test(hugetlb_refused),
		cmocka_unit_test(fd_swapped),
		cmocka_unit_test(not_through_a_child),
		cmocka_unit_test(bad_state_blocks),
		cmocka_unit_test(punched_region),
	};
	signal(SIGPIPE, SIG_IGN);
	return TH_RUN(tests);
}
