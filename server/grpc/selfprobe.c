/* SPDX-License-Identifier: Apache-2.0 */
/* selfprobe.c - the daemon asks itself whether its gRPC API answers
 * (selfprobe.h). */
#include "selfprobe.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/grpc.h>
#include <grpc/grpc_security.h>

#include "grpc/health/v1/health.pb-c.h"
#include "sys/log.h"
#include "pb_grpc.h"
#include "procctl_agent.h"

struct selfprobe {
	char *target;
	grpc_channel *ch;       /* made at the first probe: a daemon never asked holds none */
	grpc_completion_queue *cq;
	int64_t every_ns;
	pthread_t thread;
	int started;            /* thread runs */
	pthread_mutex_t mu;
	pthread_cond_t cv;      /* a kick, or stop */
	int stopping;           /* under mu */
	int kicked;             /* under mu: a probe asked for */
	int64_t last_ns;        /* the probe thread's: when the last probe started (0: none) */
	unsigned misses_in_row; /* atomic */
	uint64_t probes, misses; /* atomic */
};

/* One Health/Check within every_ns: 1 answered, 0 not. */
static int probe_once(struct selfprobe *p)
{
	Grpc__Health__V1__HealthCheckRequest rq = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
	ProtobufCMessage *resp = NULL;
	gpr_timespec deadline;
	grpc_status_code st;
	if (!p->ch) {
		grpc_channel_credentials *cr = grpc_insecure_credentials_create();
		p->ch = grpc_channel_create(p->target, cr, NULL);
		grpc_channel_credentials_release(cr);
	}
	deadline = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_nanos(p->every_ns, GPR_TIMESPAN));
	st = pb_unary(p->ch, p->cq, "/grpc.health.v1.Health/Check", deadline, &rq.base,
				       &grpc__health__v1__health_check_response__descriptor, &resp, NULL);
	if (resp)
		protobuf_c_message_free_unpacked(resp, NULL);
	return st == GRPC_STATUS_OK;
}

static void *probe_thread(void *arg)
{
	struct selfprobe *p = arg;
	pthread_setname_np(pthread_self(), "procctl-probe");
	pthread_mutex_lock(&p->mu);
	for (;;) {
		unsigned was;
		int ok;
		int64_t now;
		while (!p->stopping && !p->kicked)
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->stopping)
			break;
		p->kicked = 0;
		now = procctl_now_ns();
		if (p->last_ns && now - p->last_ns < p->every_ns)
			continue; /* one a period at most, however often asked */
		p->last_ns = now;
		pthread_mutex_unlock(&p->mu);
		ok = probe_once(p);
		__atomic_add_fetch(&p->probes, 1, __ATOMIC_RELAXED);
		if (ok) {
			if ((was = __atomic_exchange_n(&p->misses_in_row, 0, __ATOMIC_RELAXED)) >= SELFPROBE_MISSES)
				node_log(PROCCTL_LOG_INFO, "api_answers", "after_misses=%u", was);
		} else {
			__atomic_add_fetch(&p->misses, 1, __ATOMIC_RELAXED);
			if (__atomic_add_fetch(&p->misses_in_row, 1, __ATOMIC_RELAXED) == SELFPROBE_MISSES)
				node_log(PROCCTL_LOG_ERROR, "api_unresponsive",
					 "misses=%u reason=\"the gRPC API did not answer its own health checks: /healthz "
					 "fails and the watchdog is not pinged until it does\"",
					 SELFPROBE_MISSES);
		}
		pthread_mutex_lock(&p->mu);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

void selfprobe_kick(struct selfprobe *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	if (!p->kicked) {
		p->kicked = 1;
		pthread_cond_signal(&p->cv);
	}
	pthread_mutex_unlock(&p->mu);
}

int selfprobe_start(const char *target, int64_t every_ns, struct selfprobe **out)
{
	struct selfprobe *p = calloc(1, sizeof *p);
	int r;
	if (!p || !(p->target = strdup(target))) {
		free(p);
		return -ENOMEM;
	}
	grpc_init(); /* counted: the server's holds too */
	p->every_ns = every_ns;
	p->cq = grpc_completion_queue_create_for_pluck(NULL);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	if ((r = pthread_create(&p->thread, NULL, probe_thread, p))) {
		selfprobe_stop(p);
		return -r;
	}
	p->started = 1;
	*out = p;
	return 0;
}

int selfprobe_alive(const struct selfprobe *p)
{
	return !p || __atomic_load_n(&p->misses_in_row, __ATOMIC_RELAXED) < SELFPROBE_MISSES;
}

void selfprobe_counts(const struct selfprobe *p, uint64_t *probes, uint64_t *misses)
{
	*probes = p ? __atomic_load_n(&p->probes, __ATOMIC_RELAXED) : 0;
	*misses = p ? __atomic_load_n(&p->misses, __ATOMIC_RELAXED) : 0;
}

void selfprobe_stop(struct selfprobe *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stopping = 1;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	if (p->started)
		pthread_join(p->thread, NULL);
	if (p->ch)
		grpc_channel_destroy(p->ch);
	grpc_completion_queue_shutdown(p->cq);
	while (grpc_completion_queue_pluck(p->cq, NULL, gpr_inf_past(GPR_CLOCK_REALTIME), NULL).type != GRPC_QUEUE_SHUTDOWN)
		;
	grpc_completion_queue_destroy(p->cq);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p->target);
	free(p);
	grpc_shutdown();
}
