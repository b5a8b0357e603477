/* SPDX-License-Identifier: Apache-2.0 */
/* The agent -> process channel with a real agent process: publish, poll,
 * ack, clear, futex wakes, a writer killed mid-write, hostile bytes. */
#include <errno.h>
#include <linux/futex.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "flood.h"
#include "region.h"
#include "th.h"


static void publish_poll_ack(void **state)
{
	struct th_proc *p = *state;
	char buf[4096];
	uint64_t gen = 0;
	int64_t g1, g2;

	/* A claim carries no config. */
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, &gen), 0);
	g1 = th_agent_gen(&p->a, "publish hello");
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, &gen), 5);
	assert_memory_equal(buf, "hello", 5);
	assert_int_equal(gen, (uint64_t)g1);
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, &gen), 0);

	assert_int_equal(procctl_ack(&p->ctx, (uint64_t)g1, 0), 0);
	assert_string_equal(th_agent_ok(&p->a, "readstate"),
			    (snprintf(buf, sizeof buf, "acked=%" PRId64 " status=0 data= res=", g1), buf));
	assert_int_equal(procctl_nack(&p->ctx, (uint64_t)g1, -EINVAL, 0), 0);
	assert_non_null(strstr(th_agent_ok(&p->a, "readstate"), "status=-22"));

	/* Acks name delivered generations only, and move forward only. */
	assert_int_equal(procctl_ack(&p->ctx, 0, 0), -EINVAL);
	assert_int_equal(procctl_ack(&p->ctx, (uint64_t)g1 + 1, 0), -EINVAL);
	assert_int_equal(procctl_nack(&p->ctx, (uint64_t)g1, 5, 0), -EINVAL);
	assert_int_equal(procctl_ack(&p->ctx, (uint64_t)g1, 0x80), -EINVAL);
	g2 = th_agent_gen(&p->a, "publish world");
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, &gen), 5);
	assert_int_equal(procctl_ack(&p->ctx, (uint64_t)g2, PROCCTL_TRY), 0);
	assert_int_equal(procctl_ack(&p->ctx, (uint64_t)g1, 0), -ESTALE);
	assert_non_null(strstr(th_agent_ok(&p->a, "readstate"), "status=0"));
}

static void clear_once(void **state)
{
	struct th_proc *p = *state;
	char buf[64];
	uint64_t gen = 0;
	int64_t g;

	th_agent_gen(&p->a, "publish abc");
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, &gen), 3);
	g = th_agent_gen(&p->a, "clear");
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, &gen), -ENODATA);
	assert_int_equal(gen, (uint64_t)g);
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, &gen), 0);
	th_agent_gen(&p->a, "publish again");
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, &gen), 5);
}

static void too_small_is_not_consumed(void **state)
{
	struct th_proc *p = *state;
	char small[10], big[4096];
	uint64_t gen = 0;
	int64_t g = th_agent_gen(&p->a, "publishfill 100 120");

	assert_int_equal(procctl_poll(&p->ctx, small, sizeof small, &gen), -EMSGSIZE);
	assert_int_equal(procctl_poll(&p->ctx, small, sizeof small, &gen), -EMSGSIZE);
	assert_int_equal(procctl_poll(&p->ctx, big, sizeof big, &gen), 100);
	assert_int_equal(gen, (uint64_t)g);
	assert_int_equal(big[99], 120);
	/* The full capacity works. */
	th_agent_gen(&p->a, "publishfill 4096 1");
	assert_int_equal(procctl_poll(&p->ctx, big, sizeof big, &gen), 4096);
}

/* A thread sleeping in procctl_wait is woken by each kind of write. */
struct waiter {
	struct th_proc *p;
	pid_t tid;
	int ret;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;
	__atomic_store_n(&w->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	w->ret = procctl_wait(&w->p->ctx, 30000000000ll);
	return NULL;
}

static void wake_for(struct th_proc *p, const char *cmd)
{
	struct waiter w = {p, 0, 99};
	pthread_t t;
	procctl_resource_t res;
	procctl_grant_t g;
	char buf[64];
	pid_t tid;

	/* Observe the current seq, as the caller's loop would. */
	res = th_gpu(0);
	(void)procctl_poll(&p->ctx, buf, sizeof buf, NULL);
	assert_true(procctl_grant_get(&p->ctx, res.kind, res.id, &g) >= 0);
	assert_int_equal(pthread_create(&t, NULL, wait_thread, &w), 0);
	while (!(tid = __atomic_load_n(&w.tid, __ATOMIC_ACQUIRE)))
		th_sleep_ms(1);
	th_wait_sleeping(tid); /* asleep on the futex before the write */
	th_agent_ok(&p->a, "%s", cmd);
	pthread_join(t, NULL);
	assert_int_equal(w.ret, 0);
}

static void wakes(void **state)
{
	struct th_proc *p = *state;
	wake_for(p, "publish one");
	wake_for(p, "clear");
	wake_for(p, "grant 1 00 7");
	wake_for(p, "revoke 1 00");
	wake_for(p, "lease 20000000000");
	wake_for(p, "uninstall");
}

/* A write landing between a read and procctl_wait is never slept through. */
static void write_between_read_and_wait(void **state)
{
	struct th_proc *p = *state;
	char buf[64];
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, NULL), 0);
	th_agent_gen(&p->a, "publish racing");
	/* 10 s: a lost wakeup would show as -ETIMEDOUT. */
	assert_int_equal(procctl_wait(&p->ctx, 10000000000ll), 0);
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, NULL), 6);
	/* Nothing new: the wait times out. */
	assert_int_equal(procctl_wait(&p->ctx, 1000000), -ETIMEDOUT);
}

/* A context used for both polls and grant reads: a grant read that moves
 * past an unpolled config must not let procctl_wait sleep through it; and
 * a wake that comes with no write (anyone with the fd can send one) does
 * not end the wait. */
static void mixed_readers_and_spurious_wakes(void **state)
{
	struct th_proc *p = *state;
	procctl_resource_t g = th_gpu(0);
	procctl_grant_t snap;
	char buf[64];

	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, NULL), 0);
	th_agent_gen(&p->a, "publish pending");
	assert_true(procctl_grant_get(&p->ctx, g.kind, g.id, &snap) >= 0);
	assert_int_equal(procctl_wait(&p->ctx, 5000000000ll), 0);
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, NULL), 7);
	/* Both readers are now current: a bare FUTEX_WAKE is not a write. */
	syscall(SYS_futex, &((const struct procctl_ctrl *)(const void *)p->ctx.ctrl_)->seq, FUTEX_WAKE, 1, NULL, NULL, 0);
	assert_int_equal(procctl_wait(&p->ctx, 50000000ll), -ETIMEDOUT);
}

/* A writer that dies inside its write section leaves the last good config
 * intact in the active slot; the successor's claim repairs seq. */
static void killed_mid_write(void **state)
{
	struct th_proc *p = *state;
	char buf[4096];
	uint64_t gen = 0;
	int64_t g = th_agent_gen(&p->a, "publish good");

	th_agent_ok(&p->a, "begin"); /* odd seq, half the inactive slot scribbled */
	th_agent_kill(&p->a);      /* dies inside the write section */
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, &gen), -EBUSY);
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, &gen), 0); /* cached: one load */

	th_agent_start(&p->a, getpid(), procctl_fd(&p->ctx));
	th_agent_gen(&p->a, "claim 1 2 %llu", TH_LEASE_NS);
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, &gen), 4);
	assert_memory_equal(buf, "good", 4);
	assert_int_equal(gen, (uint64_t)g);
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, &gen), 0);
	th_agent_gen(&p->a, "publish after");
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, &gen), 5);
}

/* The seq word, read through the memfd itself (procctl_init puts the
 * control block at PROCCTL_HDR_AREA). */
static uint32_t ctrl_seq(struct th_proc *p)
{
	uint32_t seq = 0;
	assert_int_equal(pread(procctl_fd(&p->ctx), &seq, 4, PROCCTL_HDR_AREA), 4);
	return seq;
}

static int unhex(const char *s, unsigned char *out, size_t max)
{
	size_t n = 0;
	unsigned v;
	while (s[0] && s[1] && n < max && sscanf(s, "%2x", &v) == 1) {
		out[n++] = (unsigned char)v;
		s += 2;
	}
	return (int)n;
}

struct poller {
	struct th_proc *p;
	int stop, bad, got;
};

static void *poll_thread(void *arg)
{
	struct poller *q = arg;
	unsigned char buf[4096];
	while (!__atomic_load_n(&q->stop, __ATOMIC_ACQUIRE)) {
		int n = procctl_poll(&q->p->ctx, buf, sizeof buf, NULL);
		if (n > 0) {
			q->got++;
			if (!flood_ok(buf, n, 4096))
				q->bad++;
		} else if (n != 0 && n != -EBUSY && n != -EAGAIN) {
			q->bad++;
		}
	}
	return NULL;
}

/* SIGKILL a flooding writer at random points, many times: no poll ever
 * returns a torn or foreign payload, and after each repair the active
 * config is a complete one. */
static void killed_at_random(void **state)
{
	struct th_proc *p = *state;
	struct poller q = {p, 0, 0, 0};
	unsigned char buf[4096];
	int round, odd = 0, rounds = 40, n;
	pthread_t t;

	srand(1234);
	assert_int_equal(pthread_create(&t, NULL, poll_thread, &q), 0);
	for (round = 0; round < rounds; round++) {
		th_agent_ok(&p->a, "flood");
		th_sleep_ms(1u + (unsigned)(rand() % 20));
		th_agent_kill(&p->a);
		if (ctrl_seq(p) & 1u)
			odd++;
		th_agent_start(&p->a, getpid(), procctl_fd(&p->ctx));
		th_agent_gen(&p->a, "claim 1 %d %llu", round + 2, TH_LEASE_NS);
	}
	__atomic_store_n(&q.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	print_message("%d kills, %d inside a write section, %d payloads polled\n", rounds, odd, q.got);
	assert_int_equal(q.bad, 0);
	assert_true(q.got > 0);
	/* The config the last successor adopted (checked by its CRC) is one
	 * complete payload. */
	n = unhex(th_agent_ok(&p->a, "config"), buf, sizeof buf);
	assert_true(flood_ok(buf, n, 4096));
}

/* Bytes with a wrong epoch, a stale generation, an oversized length or a
 * bad CRC are never returned. */
static void hostile_slots(void **state)
{
	struct th_proc *p = *state;
	char buf[4096];
	uint64_t gen = 0;
	int64_t g;

	th_agent_gen(&p->a, "publish base");
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, &gen), 4);

	th_agent_ok(&p->a, "forge epoch=99 payload=evil");
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, &gen), -ESTALE);
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, &gen), 0);

	th_agent_ok(&p->a, "forge crc=0x12345678 payload=evil");
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, &gen), -EBADMSG);

	th_agent_ok(&p->a, "forge length=5000 payload=evil");
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, &gen), -EBADMSG);

	th_agent_ok(&p->a, "forge ngrants=65 payload=evil");
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, &gen), -EBADMSG);

	th_agent_ok(&p->a, "forge config_gen=1000000 payload=evil");
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, &gen), -EBADMSG);

	th_agent_ok(&p->a, "forge flags=1 payload=evil");
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, &gen), -EBADMSG);

	th_agent_ok(&p->a, "forge length=0 payload=");
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, &gen), -EBADMSG);

	/* A stale generation is nothing new, never the old bytes again. */
	th_agent_ok(&p->a, "forge config_gen=1 payload=stale");
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, &gen), 0);

	/* The channel still works for an honest write. */
	g = th_agent_gen(&p->a, "publish honest");
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, &gen), 6);
	assert_memory_equal(buf, "honest", 6);
	assert_int_equal(gen, (uint64_t)g);
}

/* Several threads poll one context: each generation is delivered once. */
struct multi {
	struct th_proc *p;
	int stop, backwards;
	uint64_t gens[4096];
	int n;
};

static void *multi_thread(void *arg)
{
	struct multi *m = arg;
	char buf[4096];
	uint64_t last = 0;
	while (!__atomic_load_n(&m->stop, __ATOMIC_ACQUIRE)) {
		uint64_t gen;
		int n = procctl_poll(&m->p->ctx, buf, sizeof buf, &gen);
		if (n > 0) {
			m->backwards += gen <= last;
			last = gen;
			if (m->n < 4096) {
				m->gens[m->n] = gen;
				__atomic_store_n(&m->n, m->n + 1, __ATOMIC_RELEASE);
			}
		}
	}
	return NULL;
}

static int delivered(struct multi *m, int n, uint64_t gen)
{
	int i, j;
	for (i = 0; i < n; i++)
		for (j = 0; j < __atomic_load_n(&m[i].n, __ATOMIC_ACQUIRE); j++)
			if (m[i].gens[j] == gen)
				return 1;
	return 0;
}

static void delivered_once(void **state)
{
	struct th_proc *p = *state;
	struct multi m[3];
	pthread_t t[3];
	uint64_t last = 0;
	int i, j, k, total = 0;

	memset(m, 0, sizeof m);
	for (i = 0; i < 3; i++) {
		m[i].p = p;
		assert_int_equal(pthread_create(&t[i], NULL, multi_thread, &m[i]), 0);
	}
	for (i = 0; i < 300; i++)
		last = (uint64_t)th_agent_gen(&p->a, "publish config-%d", i);
	/* Wait until some thread delivered the last one: none is lost. */
	while (!delivered(m, 3, last))
		th_sleep_ms(1);
	for (i = 0; i < 3; i++)
		__atomic_store_n(&m[i].stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	for (i = 0; i < 3; i++)
		assert_int_equal(m[i].backwards, 0);
	for (i = 0; i < 3; i++)
		for (j = 0; j < m[i].n; j++, total++)
			for (k = i + 1; k < 3; k++) {
				int l;
				for (l = 0; l < m[k].n; l++)
					assert_true(m[i].gens[j] != m[k].gens[l]);
			}
	assert_true(total > 0);
}

/* The same in one process, so TSan sees both sides: a writer thread
 * publishing through core/region.c, reader threads polling. The readers
 * copy with atomics, so no report; torn copies are never delivered. */
struct writer {
	struct procctl_region *r;
	int n, errors;
};

static void *writer_thread(void *arg)
{
	struct writer *w = arg;
	static unsigned char buf[4096];
	int i;
	for (i = 1; i <= w->n; i++)
		if (procctl_region_publish(w->r, buf, flood_fill((uint64_t)i, buf, 4096)) < 0)
			w->errors++;
	return NULL;
}

static void same_process_writer(void **state)
{
	struct th_proc *p = *state;
	struct procctl_region r;
	struct poller q[2] = {{p, 0, 0, 0}, {p, 0, 0, 0}};
	struct writer w = {&r, 3000, 0};
	pthread_t tw, tq[2];
	int i;

	th_map_own(&p->ctx, &r);
	assert_true(procctl_region_claim(&r, 1, 2, TH_LEASE_NS) > 0); /* the successor of agentsim */
	for (i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&tq[i], NULL, poll_thread, &q[i]), 0);
	assert_int_equal(pthread_create(&tw, NULL, writer_thread, &w), 0);
	pthread_join(tw, NULL);
	for (i = 0; i < 2; i++) {
		__atomic_store_n(&q[i].stop, 1, __ATOMIC_RELEASE);
		pthread_join(tq[i], NULL);
		assert_int_equal(q[i].bad, 0);
	}
	assert_int_equal(w.errors, 0);
	print_message("%d writes, %d + %d payloads polled\n", w.n, q[0].got, q[1].got);
	procctl_region_unmap(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(publish_poll_ack, th_setup_claimed, th_teardown),
		cmocka_unit_test_setup_teardown(clear_once, th_setup_claimed, th_teardown),
		cmocka_unit_test_setup_teardown(too_small_is_not_consumed, th_setup_claimed, th_teardown),
		cmocka_unit_test_setup_teardown(wakes, th_setup_claimed, th_teardown),
		cmocka_unit_test_setup_teardown(write_between_read_and_wait, th_setup_claimed, th_teardown),
		cmocka_unit_test_setup_teardown(mixed_readers_and_spurious_wakes, th_setup_claimed, th_teardown),
		cmocka_unit_test_setup_teardown(killed_mid_write, th_setup_claimed, th_teardown),
		cmocka_unit_test_setup_teardown(killed_at_random, th_setup_claimed, th_teardown),
		cmocka_unit_test_setup_teardown(hostile_slots, th_setup_claimed, th_teardown),
		cmocka_unit_test_setup_teardown(delivered_once, th_setup_claimed, th_teardown),
		cmocka_unit_test_setup_teardown(same_process_writer, th_setup_claimed, th_teardown),
	};
	return TH_RUN(tests);
}
