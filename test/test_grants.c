/* SPDX-License-Identifier: Apache-2.0 */
/* Grants and resource reports (SPEC.md section 9), process side: a grant
 * snapshot, usability, revocation, the report the agent reads back, and the
 * rule that a grant seen before a lease lapse is never usable again. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "procctl_agent.h"
#include "th.h"


static void grant_revoke_report(void **state)
{
	struct th_proc *p = *state;
	procctl_resource_t g0 = th_gpu(0), g1 = th_gpu(1);
	procctl_grant_t s, other;
	char want[128];
	int64_t gen, rgen;

	/* No grant: a snapshot that still records what was seen. */
	assert_int_equal(procctl_grant_get(&p->ctx, g0.kind, g0.id, &s), 0);
	assert_int_equal(s.grant_id, 0);
	assert_true(s.seen_gen > 0);
	assert_int_equal(procctl_grant_usable(&p->ctx, &s, 0), 0);
	assert_int_equal(procctl_resource_report(&p->ctx, g0.kind, g0.id, PROCCTL_RES_IDLE, PROCCTL_RES_F_WANT, &s, 0), 0);
	snprintf(want, sizeof want, "res=1:0:%" PRIu64 ":0:1,", s.seen_gen);
	assert_non_null(strstr(th_agent_ok(&p->a, "readstate"), want));

	gen = th_agent_gen(&p->a, "grant 1 00 4369");
	assert_int_equal(procctl_grant_get(&p->ctx, g0.kind, g0.id, &s), 1);
	assert_int_equal(s.grant_id, 4369);
	assert_int_equal(s.gen, (uint64_t)gen);
	assert_int_equal(s.revoke_gen, 0);
	assert_int_equal(s.seen_gen, (uint64_t)gen);
	assert_int_equal(procctl_grant_usable(&p->ctx, &s, 0), 1);
	/* The other GPU is independent. */
	assert_int_equal(procctl_grant_get(&p->ctx, g1.kind, g1.id, &other), 0);

	/* ACQUIRING and HOLDING need a usable grant for the same resource. */
	assert_int_equal(procctl_resource_report(&p->ctx, g0.kind, g0.id, PROCCTL_RES_HOLDING, 0, NULL, 0), -EPERM);
	assert_int_equal(procctl_resource_report(&p->ctx, g1.kind, g1.id, PROCCTL_RES_HOLDING, 0, &s, 0), -EINVAL);
	assert_int_equal(procctl_resource_report(&p->ctx, g1.kind, g1.id, PROCCTL_RES_ACQUIRING, 0, &other, 0), -EPERM);
	assert_int_equal(procctl_resource_report(&p->ctx, g0.kind, g0.id, PROCCTL_RES_ACQUIRING, PROCCTL_RES_F_WANT, &s, 0), 0);
	assert_int_equal(procctl_resource_report(&p->ctx, g0.kind, g0.id, PROCCTL_RES_HOLDING, PROCCTL_RES_F_WANT, &s, 0), 0);
	snprintf(want, sizeof want, "res=1:4369:%" PRId64 ":2:1,", gen);
	assert_non_null(strstr(th_agent_ok(&p->a, "readstate"), want));

	/* Revocation: the entry stays, marked; the grant is not usable. */
	rgen = th_agent_gen(&p->a, "revoke 1 00");
	assert_int_equal(procctl_grant_get(&p->ctx, g0.kind, g0.id, &s), 1);
	assert_int_equal(s.revoke_gen, (uint64_t)rgen);
	assert_int_equal(s.seen_gen, (uint64_t)rgen);
	assert_int_equal(procctl_grant_usable(&p->ctx, &s, 0), 0);
	assert_int_equal(procctl_resource_report(&p->ctx, g0.kind, g0.id, PROCCTL_RES_HOLDING, PROCCTL_RES_F_WANT, &s, 0), -EPERM);
	assert_int_equal(procctl_resource_report(&p->ctx, g0.kind, g0.id, PROCCTL_RES_RELEASED, PROCCTL_RES_F_WANT, &s, 0), 0);
	/* What confirms the release to the agent: grant id and a seen
	 * generation at or above the revocation's. */
	snprintf(want, sizeof want, "res=1:4369:%" PRId64 ":4:1,", rgen);
	assert_non_null(strstr(th_agent_ok(&p->a, "readstate"), want));

	th_agent_gen(&p->a, "drop 1 00");
	assert_int_equal(procctl_grant_get(&p->ctx, g0.kind, g0.id, &s), 0);
	/* IDLE, wanting nothing, on that snapshot of no grant: the entry is
	 * freed, as with no basis (SPEC.md 4.2). */
	assert_int_equal(s.grant_id, 0);
	assert_int_equal(procctl_resource_report(&p->ctx, g0.kind, g0.id, PROCCTL_RES_IDLE, 0, &s, 0), 0);
	assert_null(strstr(th_agent_ok(&p->a, "readstate"), "res=1:"));
}

/* A grant seen before the lease lapsed is never usable again, even when
 * the same entry is still there after the heartbeat resumes; a new grant
 * (a later generation) is. */
static void lapse_voids_grants(void **state)
{
	struct th_proc *p = *state;
	procctl_resource_t g0 = th_gpu(0);
	procctl_grant_t s, again;
	uint64_t t;

	th_agent_gen(&p->a, "grant 1 00 17");
	assert_int_equal(procctl_grant_get(&p->ctx, g0.kind, g0.id, &s), 1);
	assert_int_equal(procctl_grant_usable(&p->ctx, &s, 0), 1);
	/* Ten hours later by the process's clock: lapsed (max lease 300 s). */
	t = th_now_ns() + 36000000000000ull;
	assert_int_equal(procctl_lease_expired(&p->ctx, t), 1);
	assert_int_equal(procctl_grant_usable(&p->ctx, &s, 0), 0);
	th_agent_ok(&p->a, "hb");
	assert_int_equal(procctl_lease_expired(&p->ctx, t), 0);
	assert_int_equal(procctl_grant_usable(&p->ctx, &s, 0), 0);
	assert_int_equal(procctl_grant_get(&p->ctx, g0.kind, g0.id, &again), 1);
	assert_int_equal(again.grant_id, 17);
	assert_int_equal(procctl_grant_usable(&p->ctx, &again, 0), 0);
	assert_int_equal(procctl_resource_report(&p->ctx, g0.kind, g0.id, PROCCTL_RES_ACQUIRING, 0, &again, 0), -EPERM);

	/* A lapse nobody saw happen: two observations further apart than the
	 * lease, the heartbeat moved in between. The snapshot is void. */
	th_agent_gen(&p->a, "grant 1 00 18");
	assert_int_equal(procctl_grant_get(&p->ctx, g0.kind, g0.id, &s), 1);
	assert_int_equal(procctl_grant_usable(&p->ctx, &s, 0), 1);
	th_agent_ok(&p->a, "hb");
	assert_int_equal(procctl_lease_expired(&p->ctx, t + 3600000000000ull), 0);
	assert_int_equal(procctl_grant_usable(&p->ctx, &s, 0), 0);

	th_agent_gen(&p->a, "grant 1 00 19");
	assert_int_equal(procctl_grant_get(&p->ctx, g0.kind, g0.id, &s), 1);
	assert_int_equal(s.grant_id, 19);
	assert_int_equal(procctl_grant_usable(&p->ctx, &s, 0), 1);
}

/* A gap that ends an expiry the process already counted is that lapse,
 * not a second one (SPEC.md 8.4): a grant read while the lease was
 * expired, after the agent granted it, is usable once the heartbeat
 * moves. Counted twice, the move would void it. */
static void one_lapse_not_two(void **state)
{
	struct th_proc *p = *state;
	procctl_resource_t g0 = th_gpu(0), g1 = th_gpu(1);
	procctl_grant_t s, fresh;
	uint64_t t;

	th_agent_gen(&p->a, "grant 1 00 20");
	assert_int_equal(procctl_grant_get(&p->ctx, g0.kind, g0.id, &s), 1);
	t = th_now_ns() + 36000000000000ull; /* ten hours on: expired, one lapse */
	assert_int_equal(procctl_lease_expired(&p->ctx, t), 1);
	th_agent_gen(&p->a, "grant 1 01 21"); /* granted after the lapse */
	assert_int_equal(procctl_grant_get(&p->ctx, g1.kind, g1.id, &fresh), 1);
	assert_int_equal(procctl_grant_usable(&p->ctx, &fresh, t), 0); /* the lease is expired */
	th_agent_ok(&p->a, "hb");
	assert_int_equal(procctl_lease_expired(&p->ctx, t), 0); /* a gap of ten hours, ended */
	assert_int_equal(procctl_grant_usable(&p->ctx, &fresh, t), 1);
	assert_int_equal(procctl_grant_usable(&p->ctx, &s, t), 0); /* seen before the lapse */
}

static void bad_keys_and_full_table(void **state)
{
	struct th_proc *p = *state;
	procctl_resource_t r = th_gpu(0);
	procctl_grant_t s;
	int i;

	/* Kind 0 is no kind. */
	assert_int_equal(procctl_grant_get(&p->ctx, 0, r.id, &s), -EINVAL);
	assert_int_equal(procctl_resource_report(&p->ctx, 0, r.id, PROCCTL_RES_IDLE, 0, NULL, 0), -EINVAL);
	assert_int_equal(procctl_resource_report(&p->ctx, r.kind, r.id, 9, 0, NULL, 0), -EINVAL);
	assert_int_equal(procctl_resource_report(&p->ctx, r.kind, r.id, PROCCTL_RES_IDLE, 0x4, NULL, 0), -EINVAL);
	assert_int_equal(procctl_grant_get(&p->ctx, 0, NULL, &s), -EINVAL);
	assert_int_equal(procctl_grant_get(&p->ctx, TH_GPU, r.id, NULL), -EINVAL);
	/* A null id (a literal 0) is the all-zero id: th_gpu(0)'s. */
	assert_int_equal(procctl_resource_report(&p->ctx, TH_GPU, 0, PROCCTL_RES_IDLE, PROCCTL_RES_F_WANT, NULL, 0), 0);
	assert_non_null(strstr(th_agent_ok(&p->a, "readstate"), "res=1:0:0:0:1,"));
	assert_int_equal(procctl_resource_report(&p->ctx, r.kind, r.id, PROCCTL_RES_IDLE, PROCCTL_RES_F_WANT, NULL, 0), 0);
	assert_null(strstr(th_agent_ok(&p->a, "readstate"), "res=1:0:0:0:1,1:0:0:0:1,")); /* the same entry */
	for (i = 1; i < TH_NRES; i++) {
		r = th_gpu((uint8_t)i);
		assert_int_equal(procctl_resource_report(&p->ctx, r.kind, r.id, PROCCTL_RES_IDLE, PROCCTL_RES_F_WANT, NULL, 0), 0);
	}
	r = th_gpu(TH_NRES);
	assert_int_equal(procctl_resource_report(&p->ctx, r.kind, r.id, PROCCTL_RES_IDLE, PROCCTL_RES_F_WANT, NULL, 0), -ENOSPC);
	/* IDLE, wanting nothing, about no grant: the entry is freed. */
	r = th_gpu(1);
	assert_int_equal(procctl_resource_report(&p->ctx, r.kind, r.id, PROCCTL_RES_IDLE, 0, NULL, 0), 0);
	assert_null(strstr(th_agent_ok(&p->a, "readstate"), "1:0:0:0:1,1:0:0:0:1,1:0:0:0:1,1"));
	r = th_gpu(TH_NRES);
	assert_int_equal(procctl_resource_report(&p->ctx, r.kind, r.id, PROCCTL_RES_IDLE, PROCCTL_RES_F_WANT, NULL, 0), 0);
}

/* Hostile grant tables are refused as a whole. */
static void hostile_grants(void **state)
{
	struct th_proc *p = *state;
	procctl_resource_t g0 = th_gpu(0);
	procctl_grant_t s;

	th_agent_gen(&p->a, "grant 1 00 5");
	th_agent_ok(&p->a, "forge ngrants=65");
	assert_int_equal(procctl_grant_get(&p->ctx, g0.kind, g0.id, &s), -EBADMSG);
	th_agent_ok(&p->a, "forge epoch=3");
	assert_int_equal(procctl_grant_get(&p->ctx, g0.kind, g0.id, &s), -ESTALE);
	th_agent_ok(&p->a, "forge crc=7");
	assert_int_equal(procctl_grant_get(&p->ctx, g0.kind, g0.id, &s), -EBADMSG);
	th_agent_gen(&p->a, "grant 1 00 6");
	assert_int_equal(procctl_grant_get(&p->ctx, g0.kind, g0.id, &s), 1);
	assert_int_equal(s.grant_id, 6);
}

/* A region re-created in the same process (procctl_reinit) voids every
 * snapshot of the old one. */
static void reinit_voids_grants(void **state)
{
	struct th_proc *p = *state;
	procctl_resource_t g0 = th_gpu(0);
	procctl_grant_t s;

	th_agent_gen(&p->a, "grant 1 00 31");
	assert_int_equal(procctl_grant_get(&p->ctx, g0.kind, g0.id, &s), 1);
	assert_int_equal(procctl_grant_usable(&p->ctx, &s, 0), 1);
	assert_int_equal(procctl_reinit(&p->ctx), 0);
	assert_int_equal(procctl_grant_usable(&p->ctx, &s, 0), 0);
	assert_int_equal(procctl_resource_report(&p->ctx, g0.kind, g0.id, PROCCTL_RES_HOLDING, 0, &s, 0), -EPERM);
}

/* Resource ids as text (libprocctl-agent): a GPU's UUID as nvidia-smi
 * prints it (its GPU- prefix or not) or 32 hex digits, and back. */
static void resource_ids_as_text(void **state)
{
	static const uint8_t want[16] = {0x5a, 0x8e, 0x2b, 0x0c, 0x3f, 0x1d, 0x4e, 0x6a,
					 0x9b, 0x7c, 0x1d, 0x2e, 0x3f, 0x4a, 0x5b, 0x6c};
	static const char *const bad[] = {"", "GPU-", "GPU-123", "5a8e2b0c3f1d4e6a9b7c1d2e3f4a5b6", /* 31 */
					  "5a8e2b0c3f1d4e6a9b7c1d2e3f4a5b6c0", "5a8e2b0c-3f1d-4e6a-9b7c-1d2e3f4a5b6", /* 35 */
					  "5a8e2b0c3f1d-4e6a-9b7c-1d2e3f4a5b6c-", "5a8e2b0c--3f1d4e6a-9b7c-1d2e3f4a5b6c",
					  "5a8e2b0-c3f1d-4e6a-9b7c-1d2e3f4a5b6c", "5a8e2b0c-3f1d-4e6a-9b7c-1d2e3f4a5b6g",
					  "gpu-5a8e2b0c-3f1d-4e6a-9b7c-1d2e3f4a5b6c", " 5a8e2b0c3f1d4e6a9b7c1d2e3f4a5b6c"};
	uint8_t id[16];
	char text[37];
	size_t i;
	(void)state;
	assert_int_equal(procctl_resource_id_parse("GPU-5a8e2b0c-3f1d-4e6a-9b7c-1d2e3f4a5b6c", id), 0);
	assert_memory_equal(id, want, 16);
	memset(id, 0, sizeof id);
	assert_int_equal(procctl_resource_id_parse("5A8E2B0C-3F1D-4E6A-9B7C-1D2E3F4A5B6C", id), 0);
	assert_memory_equal(id, want, 16);
	memset(id, 0, sizeof id);
	assert_int_equal(procctl_resource_id_parse("5a8e2b0c3f1d4e6a9b7c1d2e3f4a5b6c", id), 0);
	assert_memory_equal(id, want, 16);
	procctl_resource_id_format(id, text);
	assert_string_equal(text, "5a8e2b0c-3f1d-4e6a-9b7c-1d2e3f4a5b6c");
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memset(id, 0xee, sizeof id);
		if (procctl_resource_id_parse(bad[i], id) != -EINVAL)
			fail_msg("'%s' parsed", bad[i]);
		assert_int_equal(id[0], 0xee); /* untouched */
	}
	assert_int_equal(procctl_resource_id_parse(NULL, id), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(grant_revoke_report, th_setup_claimed, th_teardown),
		cmocka_unit_test_setup_teardown(lapse_voids_grants, th_setup_claimed, th_teardown),
		cmocka_unit_test_setup_teardown(one_lapse_not_two, th_setup_claimed, th_teardown),
		cmocka_unit_test_setup_teardown(bad_keys_and_full_table, th_setup_claimed, th_teardown),
		cmocka_unit_test(resource_ids_as_text),
		cmocka_unit_test_setup_teardown(hostile_grants, th_setup_claimed, th_teardown),
		cmocka_unit_test_setup_teardown(reinit_voids_grants, th_setup_claimed, th_teardown),
	};
	return TH_RUN(tests);
}
