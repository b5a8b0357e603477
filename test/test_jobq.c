/* SPDX-License-Identifier: Apache-2.0 */
/* The loop's request queue (server/node/jobq.h): a peer with a thousand
 * requests queued delays another's by one of its own; each peer's come
 * in order; and the queue against a model of it (peers in turn, each a
 * FIFO) under a long random sequence over more peers than buckets. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "th.h"
#include "node/jobq.h"
#include "node/node.h"

static struct node_job *job(const char *peer, uint64_t id)
{
	struct node_job *j = calloc(1, sizeof *j);
	assert_non_null(j);
	snprintf(j->peer, sizeof j->peer, "%s", peer);
	j->id = id;
	return j;
}

/* The next request's id, freeing it (0: none). */
static uint64_t take(struct jobq *q)
{
	struct node_job *j = jobq_take(q);
	uint64_t id = j ? j->id : 0;
	free(j);
	return id;
}

static void one_between(void **state)
{
	struct jobq q;
	uint64_t i, want[] = {1, 2001, 3001, 2, 3002, 3, 4, 5};
	(void)state;
	jobq_init(&q);
	assert_int_equal(take(&q), 0);
	for (i = 1; i <= 1000; i++) /* addr:A's flood first */
		jobq_put(&q, job("addr:10.0.0.1", i));
	jobq_put(&q, job("uid:0", 2001));
	jobq_put(&q, job("x509:CN=ctl", 3001));
	jobq_put(&q, job("x509:CN=ctl", 3002));
	assert_int_equal(q.n, 1003);
	for (i = 0; i < sizeof want / sizeof want[0]; i++)
		assert_int_equal(take(&q), want[i]);
	for (i = 6; i <= 1000; i++)
		assert_int_equal(take(&q), i);
	assert_int_equal(q.n, 0);
	assert_int_equal(take(&q), 0);
	jobq_put(&q, job("uid:0", 7)); /* empty again: a peer stands anew */
	assert_int_equal(take(&q), 7);
}

/* The model: peers in turn (ring), each its ids in order. */
#define PEERS 600
#define OPS 200000
struct model {
	uint64_t *ids[PEERS];
	size_t head[PEERS], n[PEERS];
	int ring[PEERS], rhead, rn;
};

static void model_put(struct model *m, int p, uint64_t id)
{
	if (!m->n[p])
		m->ring[(m->rhead + m->rn++) % PEERS] = p;
	m->ids[p][(m->head[p] + m->n[p]++) % OPS] = id;
}

static uint64_t model_take(struct model *m)
{
	int p;
	uint64_t id;
	if (!m->rn)
		return 0;
	p = m->ring[m->rhead];
	m->rhead = (m->rhead + 1) % PEERS;
	m->rn--;
	id = m->ids[p][m->head[p]];
	m->head[p] = (m->head[p] + 1) % OPS;
	if (--m->n[p])
		m->ring[(m->rhead + m->rn++) % PEERS] = p;
	return id;
}

static void against_model(void **state)
{
	static struct model m;
	struct jobq q;
	uint64_t id = 0;
	char peer[32];
	int i;
	(void)state;
	srand(7);
	jobq_init(&q);
	for (i = 0; i < PEERS; i++)
		assert_non_null(m.ids[i] = calloc(OPS, sizeof *m.ids[i]));
	for (i = 0; i < OPS; i++) {
		if (rand() % 100 < 55) { /* a few peers busy, many now and then */
			int p = rand() % 4 ? rand() % 8 : rand() % PEERS;
			snprintf(peer, sizeof peer, "addr:10.0.%d.%d", p / 256, p % 256);
			jobq_put(&q, job(peer, ++id));
			model_put(&m, p, id);
		} else {
			assert_int_equal(take(&q), model_take(&m));
		}
	}
	while (q.n)
		assert_int_equal(take(&q), model_take(&m));
	assert_int_equal(model_take(&m), 0);
	for (i = 0; i < PEERS; i++)
		free(m.ids[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_between),
		cmocka_unit_test(against_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
