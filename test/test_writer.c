/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's writer (core/region.c) against its own rules (SPEC.md 6.1,
 * 8.3): no write before a claim or after release or uninstall; an owner
 * word that moves under a write breaks the region for good, leaving seq
 * even and sleepers woken; adoption after a claimer died halfway; kinds
 * padded; generations bounded. This process is its own agent here. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "region.h"
#include "th.h"

struct fx {
	struct th_proc p; /* its agentsim is not used */
	struct procctl_region r;
	struct procctl_ctrl *k; /* a second, raw view: the "other writer" */
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	th_proc_start(&f->p, 0, 0);
	th_agent_stop(&f->p.a);
	th_map_own(&f->p.ctx, &f->r);
	f->k = f->r.ctrl;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	procctl_region_unmap(&f->r);
	procctl_close(&f->p.ctx);
	free(f);
	return 0;
}

static void only_while_owner(void **state)
{
	struct fx *f = *state;
	procctl_resource_t g = th_gpu(0);
	char buf[16];

	assert_int_equal(procctl_region_publish(&f->r, "x", 1), -EPERM);
	assert_int_equal(procctl_region_grant(&f->r, &g, 5), -EPERM);
	assert_int_equal(procctl_region_claim(&f->r, 1, 0, TH_LEASE_NS), -EINVAL); /* epoch 0 */
	assert_int_equal(procctl_region_claim(&f->r, 0, 1, TH_LEASE_NS), -EINVAL);
	assert_true(procctl_region_claim(&f->r, 1, 1, TH_LEASE_NS) > 0);
	assert_true(procctl_region_publish(&f->r, "x", 1) > 0);
	assert_int_equal(procctl_region_release(&f->r), 0);
	assert_int_equal(procctl_region_publish(&f->r, "y", 1), -EPERM);
	assert_int_equal(procctl_region_uninstall(&f->r), -EPERM);
	/* A successor (next epoch) may; after uninstall nobody writes. */
	assert_true(procctl_region_claim(&f->r, 1, 2, TH_LEASE_NS) > 0);
	assert_true(procctl_region_uninstall(&f->r) > 0);
	assert_int_equal(procctl_region_clear(&f->r), -EPERM);
	assert_int_equal(procctl_poll(&f->p.ctx, buf, sizeof buf, NULL), -ENODATA);
	/* Another lock domain's word is a conflict. */
	assert_int_equal(procctl_region_claim(&f->r, 2, 3, TH_LEASE_NS), -EEXIST);
}

struct sleeper {
	procctl_t *ctx;
	pid_t tid;
	int ret;
};

static void *sleep_thread(void *arg)
{
	struct sleeper *s = arg;
	__atomic_store_n(&s->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	s->ret = procctl_wait(s->ctx, 30000000000ll);
	return NULL;
}

static void owner_moved_breaks_region(void **state)
{
	struct fx *f = *state;
	struct sleeper s = {&f->p.ctx, 0, 99};
	char buf[16];
	pthread_t t;
	pid_t tid;
	uint32_t seq;

	assert_true(procctl_region_claim(&f->r, 1, 1, TH_LEASE_NS) > 0);
	assert_int_equal(procctl_poll(&f->p.ctx, buf, sizeof buf, NULL), 0);
	assert_int_equal(pthread_create(&t, NULL, sleep_thread, &s), 0);
	while (!(tid = __atomic_load_n(&s.tid, __ATOMIC_ACQUIRE)))
		th_sleep_ms(1);
	th_wait_sleeping(tid);
	/* Someone else rewrites the owner word; our next write gives up,
	 * leaves seq even, wakes the sleeper, and never writes again. */
	__atomic_store_n(&f->k->owner, PROCCTL_OWNER(1, 7, 0), __ATOMIC_RELEASE);
	assert_int_equal(procctl_region_publish(&f->r, "x", 1), -EBUSY);
	seq = __atomic_load_n(&f->k->seq, __ATOMIC_ACQUIRE);
	assert_int_equal(seq & 1u, 0);
	pthread_join(t, NULL);
	assert_int_equal(s.ret, 0);
	assert_int_equal(procctl_region_publish(&f->r, "x", 1), -EBUSY);
	assert_int_equal(__atomic_load_n(&f->k->seq, __ATOMIC_ACQUIRE), seq);
	/* A punched seq word (reads 0) breaks it the same way. */
	assert_true(procctl_region_claim(&f->r, 1, 8, TH_LEASE_NS) > 0);
	__atomic_store_n(&f->k->seq, 0u, __ATOMIC_RELEASE);
	assert_int_equal(procctl_region_clear(&f->r), -EBUSY);
	assert_int_equal(__atomic_load_n(&f->k->seq, __ATOMIC_ACQUIRE), 0);
}

/* A claimer died between its owner CAS and its slot: the owner word has
 * the new epoch, the active slot the old one. The next claim still adopts
 * the config and the grants (the slot's CRC covers its own epoch). */
static void adopt_after_claimer_died(void **state)
{
	struct fx *f = *state;
	procctl_resource_t g = th_gpu(3);
	procctl_grant_t snap;
	char buf[16];
	uint64_t gen = 0;
	int64_t pg;

	assert_true(procctl_region_claim(&f->r, 1, 1, TH_LEASE_NS) > 0);
	pg = procctl_region_publish(&f->r, "cfg", 3);
	assert_true(procctl_region_grant(&f->r, &g, 77) > 0);
	assert_int_equal(procctl_poll(&f->p.ctx, buf, sizeof buf, &gen), 3);
	__atomic_store_n(&f->k->seq, __atomic_load_n(&f->k->seq, __ATOMIC_RELAXED) + 1u, __ATOMIC_RELEASE);
	__atomic_store_n(&f->k->owner, PROCCTL_OWNER(1, 2, 0), __ATOMIC_RELEASE);
	/* ...and died. The next holder: */
	assert_true(procctl_region_claim(&f->r, 1, 3, TH_LEASE_NS) > 0);
	assert_int_equal(f->r.ngrants, 1);
	assert_int_equal(f->r.config_gen, (uint64_t)pg);
	assert_int_equal(procctl_poll(&f->p.ctx, buf, sizeof buf, NULL), 0); /* no flap */
	assert_int_equal(procctl_grant_get(&f->p.ctx, g.kind, g.id, &snap), 1);
	assert_int_equal(snap.grant_id, 77);
	assert_true(procctl_region_revoke(&f->r, &g) > 0); /* it can revoke it */
}

static void generation_bound(void **state)
{
	struct fx *f = *state;
	struct procctl_slot *s0 = (void *)(f->r.map + f->r.hdr.slot_off[0]);
	struct procctl_slot *s1 = (void *)(f->r.map + f->r.hdr.slot_off[1]);

	s0->gen = PROCCTL_GEN_MAX;
	s1->gen = 5;
	assert_int_equal(procctl_region_claim(&f->r, 1, 1, TH_LEASE_NS), -EBADMSG);
	assert_int_equal(__atomic_load_n(&f->k->seq, __ATOMIC_ACQUIRE) & 1u, 0);
	s0->gen = PROCCTL_GEN_MAX - 1;
	assert_int_equal(procctl_region_claim(&f->r, 1, 1, TH_LEASE_NS), (int64_t)PROCCTL_GEN_MAX);
	/* The region is then spent: the next write would pass the bound. */
	assert_int_equal(procctl_region_publish(&f->r, "x", 1), -EOVERFLOW);
}

/* Kinds are numbers: 0 is none (refused), another number with the same id
 * is another resource, and the entry's reserved bytes go out zero. */
static void kinds_numbers(void **state)
{
	struct fx *f = *state;
	procctl_resource_t g = th_gpu(1), other = th_gpu(1), none = th_gpu(1);
	procctl_grant_t snap;
	uint32_t i;

	other.kind = TH_GPU + 1;
	none.kind = 0;
	assert_true(procctl_region_claim(&f->r, 1, 1, TH_LEASE_NS) > 0);
	assert_int_equal(procctl_region_grant(&f->r, &none, 8), -EINVAL);
	assert_true(procctl_region_grant(&f->r, &g, 9) > 0);
	assert_true(procctl_region_grant(&f->r, &other, 10) > 0);
	assert_int_equal(f->r.ngrants, 2);
	for (i = 0; i < f->r.ngrants; i++)
		assert_true(!f->r.grants[i].reserved0[0] && !f->r.grants[i].reserved0[1] && !f->r.grants[i].reserved0[2]);
	assert_int_equal(procctl_grant_get(&f->p.ctx, g.kind, g.id, &snap), 1);
	assert_int_equal(snap.grant_id, 9);
	assert_int_equal(procctl_grant_get(&f->p.ctx, other.kind, other.id, &snap), 1);
	assert_int_equal(snap.grant_id, 10);
	assert_true(procctl_region_revoke(&f->r, &g) > 0);
	assert_true(procctl_region_drop(&f->r, &g) > 0);
	assert_true(procctl_region_drop(&f->r, &other) > 0);
	assert_int_equal(f->r.ngrants, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(only_while_owner, setup, teardown),
		cmocka_unit_test_setup_teardown(owner_moved_breaks_region, setup, teardown),
		cmocka_unit_test_setup_teardown(adopt_after_claimer_died, setup, teardown),
		cmocka_unit_test_setup_teardown(generation_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(kinds_numbers, setup, teardown),
	};
	return TH_RUN(tests);
}
