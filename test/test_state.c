/* SPDX-License-Identifier: Apache-2.0 */
/* The state block (SPEC.md section 7): status bytes read back by the agent
 * with process_vm_readv, the writers' seqlock, PROCCTL_TRY, and many
 * threads writing at once. */
#include <errno.h>
#include <linux/futex.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "th.h"

static void status_bytes(void **state)
{
	struct th_proc *p = *state;
	unsigned char big[TH_DATA_CAP + 1];

	assert_int_equal(procctl_state_set(&p->ctx, "\x01\x02\xff", 3, 0), 0);
	assert_non_null(strstr(th_agent_ok(&p->a, "readstate"), "data=0102ff res="));
	memset(big, 0xab, sizeof big);
	assert_int_equal(procctl_state_set(&p->ctx, big, sizeof big, 0), -EMSGSIZE);
	assert_int_equal(procctl_state_set(&p->ctx, big, TH_DATA_CAP, 0), 0);
	assert_int_equal(procctl_state_set(&p->ctx, NULL, 1, 0), -EINVAL);
	assert_int_equal(procctl_state_set(&p->ctx, "x", 1, 0x10), -EINVAL);
	assert_int_equal(procctl_state_set(&p->ctx, NULL, 0, 0), 0);
	assert_non_null(strstr(th_agent_ok(&p->a, "readstate"), "data= res="));
}

struct blocked {
	struct th_proc *p;
	pid_t tid;
	int ret;
};

static void *blocked_writer(void *arg)
{
	struct blocked *b = arg;
	__atomic_store_n(&b->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	b->ret = procctl_state_set(&b->p->ctx, "late", 4, 0);
	return NULL;
}

/* While a write is in progress (odd seq), PROCCTL_TRY gives -EBUSY, the
 * agent sees the block as busy, and a plain writer waits for it. */
static void try_and_wait(void **state)
{
	struct th_proc *p = *state;
	struct procctl_state_hdr *st = th_state(p);
	struct blocked b = {p, 0, 99};
	uint32_t s = __atomic_load_n(&st->seq, __ATOMIC_RELAXED);
	procctl_resource_t r;
	pthread_t t;
	pid_t tid;

	memset(&r, 0, sizeof r);
	r.kind = TH_GPU;
	assert_int_equal(s & 1u, 0);
	/* Play another writer thread inside its write section. */
	__atomic_store_n(&st->seq, s + 1u, __ATOMIC_SEQ_CST);
	assert_int_equal(procctl_state_set(&p->ctx, "x", 1, PROCCTL_TRY), -EBUSY);
	assert_int_equal(procctl_resource_report(&p->ctx, r.kind, r.id, PROCCTL_RES_IDLE, 0, NULL, PROCCTL_TRY), -EBUSY);
	assert_non_null(strstr(th_agent_cmd(&p->a, "readstate"), "err 11")); /* EAGAIN: busy */

	assert_int_equal(pthread_create(&t, NULL, blocked_writer, &b), 0);
	while (!(tid = __atomic_load_n(&b.tid, __ATOMIC_ACQUIRE)))
		th_sleep_ms(1);
	th_wait_sleeping(tid);
	assert_int_equal(__atomic_load_n(&b.ret, __ATOMIC_ACQUIRE), 99);
	/* Leave the section as a writer does: even seq, then wake. */
	__atomic_store_n(&st->seq, s + 2u, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &st->seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	pthread_join(t, NULL);
	assert_int_equal(b.ret, 0);
	assert_non_null(strstr(th_agent_ok(&p->a, "readstate"), "data=6c617465 "));
}

/* Threads acking, reporting and setting status at once: every write
 * completes, the block always validates, nothing races (TSan). */
struct hammer {
	struct th_proc *p;
	uint64_t gen;
	int id, errors;
	const int *stop; /* atomic: the agent has read enough */
};

static void *hammer_thread(void *arg)
{
	struct hammer *h = arg;
	procctl_resource_t r;
	char data[16];
	int i;

	memset(&r, 0, sizeof r);
	r.kind = 7;
	r.id[0] = (uint8_t)h->id;
	for (i = 0; i < 1000 || !__atomic_load_n(h->stop, __ATOMIC_RELAXED); i++) {
		int n = snprintf(data, sizeof data, "t%d-%d", h->id, i);
		if (procctl_state_set(&h->p->ctx, data, (size_t)n, 0) != 0)
			h->errors++;
		if (procctl_resource_report(&h->p->ctx, r.kind, r.id, PROCCTL_RES_IDLE, PROCCTL_RES_F_WANT, NULL, 0) != 0)
			h->errors++;
		if (procctl_ack(&h->p->ctx, h->gen, 0) != 0)
			h->errors++;
	}
	return NULL;
}

static void many_writers(void **state)
{
	struct th_proc *p = *state;
	struct hammer h[4];
	pthread_t t[4];
	char buf[64], want[64];
	uint64_t gen = 0;
	int i, reads = 0, busy = 0, stop = 0;

	th_agent_gen(&p->a, "publish one");
	assert_int_equal(procctl_poll(&p->ctx, buf, sizeof buf, &gen), 3);
	assert_int_equal(procctl_ack(&p->ctx, gen + 1, 0), -EINVAL);
	for (i = 0; i < 4; i++) {
		h[i].p = p;
		h[i].gen = gen;
		h[i].id = i;
		h[i].errors = 0;
		h[i].stop = &stop;
		assert_int_equal(pthread_create(&t[i], NULL, hammer_thread, &h[i]), 0);
	}
	/* The agent reads meanwhile, the writers going on until it read 20
	 * whole blocks in 200 reads or more (on a loaded machine, 200 reads
	 * were all busy once): a block is valid or busy, never bad. */
	while (reads < 20 || reads + busy < 200) {
		const char *r = th_agent_cmd(&p->a, "readstate");
		if (!strncmp(r, "ok", 2)) {
			reads++;
		} else {
			assert_non_null(strstr(r, "err 11"));
			busy++;
		}
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(h[i].errors, 0);
	}
	assert_true(reads > 0);
	snprintf(want, sizeof want, "acked=%llu status=0", (unsigned long long)gen);
	assert_non_null(strstr(th_agent_ok(&p->a, "readstate"), want));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(status_bytes, th_setup_claimed, th_teardown),
		cmocka_unit_test_setup_teardown(try_and_wait, th_setup_claimed, th_teardown),
		cmocka_unit_test_setup_teardown(many_writers, th_setup_claimed, th_teardown),
	};
	return TH_RUN(tests);
}
