/* SPDX-License-Identifier: Apache-2.0 */
/* sampler - the PC sampling spike: a steady stream of short busy kernels
 * on a context of its own, and CUPTI PC sampling on it on a schedule given
 * by flags. It never aborts on an error: every call's result is printed by
 * name, with its duration, and it goes on. About every 200 ms a line:
 *
 *   t_ms=T name=A phase=P get=RESULT samples=N total=M dropped=D kernels=K
 *
 * (samples: attributed to PCs in this interval; total: in all so far).
 * Each call of the schedule:
 *
 *   t_ms=T name=A call=enable result=CUPTI_SUCCESS ms=1.234
 *
 * Usage: sampler [--device N] [--name A] [--period N] [--start-stop]
 *                [--iters N] [--run-ms MS] [--at MS:ACTION ...]
 * ACTION: enable, configure, start, stop, getdata, disable; sample
 * (enable, configure, and start with --start-stop), unsample (stop with
 * --start-stop, getdata, disable); exit. Without --start-stop, sampling is
 * continuous from configure to disable, and GetData drains it every line.
 * Without --at: sample at 0. --run-ms: exit then (default: at the last
 * action's time plus a second, or never without --at). With --start-stop
 * a range is drained at its Stop (getdata, unsample), not every line.
 * SIGTERM: unsample and exit. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu.h"
#include "pcs.h"
#include "procctl_agent.h"

#define LINE_MS 200
#define AT_MAX 64

enum { A_SAMPLE = PCS_NCALLS, A_UNSAMPLE, A_EXIT };

struct at {
	double ms;
	int action; /* an enum pcs_call, or A_* */
};

static volatile sig_atomic_t stop;
static const char *name = "sampler";
static double t0;
static int enabled, started; /* by the calls' results */

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6 - t0;
}

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static int action_of(const char *s)
{
	static const char *const extra[] = {"sample", "unsample", "exit"};
	int k;
	for (k = 0; k < PCS_NCALLS; k++)
		if (!strcmp(s, pcs_call_name((enum pcs_call)k)))
			return k;
	for (k = 0; k < 3; k++)
		if (!strcmp(s, extra[k]))
			return PCS_NCALLS + k;
	return -1;
}

/* One call, said. */
static void run_call(struct pcs *p, enum pcs_call c)
{
	uint64_t got = 0;
	CUptiResult r = pcs_call(p, c, &got);
	if (r == CUPTI_SUCCESS) {
		enabled = c == PCS_ENABLE ? 1 : c == PCS_DISABLE ? 0 : enabled;
		started = c == PCS_START ? 1 : c == PCS_STOP || c == PCS_DISABLE ? 0 : started;
	}
	printf("t_ms=%.0f name=%s call=%s result=%s ms=%.3f", now_ms(), name, pcs_call_name(c), pcs_result_name(p, r),
	       p->ms[c]);
	if (c == PCS_GETDATA || c == PCS_DISABLE)
		printf(" samples=%llu", (unsigned long long)got);
	printf("\n");
	fflush(stdout);
}

/* 1: exit. sample and unsample start and stop only with --start-stop
 * (continuous sampling runs from configure to disable). */
static int run_action(struct pcs *p, int a)
{
	static const enum pcs_call up[] = {PCS_ENABLE, PCS_CONFIGURE, PCS_START};
	static const enum pcs_call down[] = {PCS_STOP, PCS_GETDATA, PCS_DISABLE};
	size_t k;
	if (a == A_EXIT)
		return 1;
	if (a == A_SAMPLE || a == A_UNSAMPLE) {
		for (k = 0; k < 3; k++) {
			enum pcs_call c = a == A_SAMPLE ? up[k] : down[k];
			if (p->start_stop || (c != PCS_START && c != PCS_STOP))
				run_call(p, c);
		}
		return 0;
	}
	run_call(p, (enum pcs_call)a);
	return 0;
}

/* Where the calls so far leave it. */
static const char *phase(const struct pcs *p)
{
	if (!enabled)
		return "idle";
	if (p->last[PCS_CONFIGURE] != CUPTI_SUCCESS)
		return "enabled";
	return !p->start_stop || started ? "sampling" : "configured";
}

static int parse_at(const char *s, struct at *at)
{
	char *end;
	double ms = strtod(s, &end);
	if (end == s || *end != ':' || !(ms >= 0) || (at->action = action_of(end + 1)) < 0)
		return -1;
	at->ms = ms;
	return 0;
}

/* By time, those of one time in the order given (insertion: stable). */
static void sort_at(struct at *at, size_t n)
{
	size_t i, j;
	for (i = 1; i < n; i++) {
		struct at x = at[i];
		for (j = i; j > 0 && at[j - 1].ms > x.ms; j--)
			at[j] = at[j - 1];
		at[j] = x;
	}
}

static int usage(void)
{
	fprintf(stderr, "usage: sampler [--device N] [--name A] [--period N] [--start-stop] [--iters N] "
			"[--run-ms MS] [--at MS:ACTION ...]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct at at[AT_MAX];
	size_t nat = 0, next = 0;
	int i, device = 0, start_stop = 0;
	unsigned period = 0;
	long iters = 0;
	double run_ms = -1, line_at = LINE_MS;
	uint64_t interval = 0;
	struct gpu g;
	struct pcs p;
	char err[256], uuid[37];

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--start-stop")) {
			start_stop = 1;
			continue;
		}
		if (!v)
			return usage();
		i++;
		if (!strcmp(a, "--device"))
			device = atoi(v);
		else if (!strcmp(a, "--name"))
			name = v;
		else if (!strcmp(a, "--period"))
			period = (unsigned)atoi(v);
		else if (!strcmp(a, "--iters"))
			iters = atol(v);
		else if (!strcmp(a, "--run-ms"))
			run_ms = atof(v);
		else if (!strcmp(a, "--at") && nat < AT_MAX && parse_at(v, &at[nat]) == 0)
			nat++;
		else
			return usage();
	}
	sort_at(at, nat);
	if (run_ms < 0 && nat) /* a schedule ends a second after its last action */
		run_ms = at[nat - 1].ms + 1000;
	if (!nat)
		at[nat++] = (struct at){0, A_SAMPLE};
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	t0 = now_ms();
	if (gpu_open(&g, device, err, sizeof err) < 0) {
		printf("t_ms=%.0f name=%s event=no_gpu error=\"%s\"\n", now_ms(), name, err);
		return 1;
	}
	if (iters > 0)
		g.iters = (unsigned)iters;
	procctl_resource_id_format(g.uuid, uuid);
	printf("t_ms=%.0f name=%s event=started pid=%d gpu=\"%s\" uuid=%s sms=%u iters=%u\n", now_ms(), name,
	       (int)getpid(), g.name, uuid, g.blocks, g.iters);
	fflush(stdout);
	pcs_init(&p, &cupti_linked, g.ctx, start_stop, period);
	line_at = now_ms() + LINE_MS; /* lines from here, not from before gpu_open */
	while (!stop && (run_ms < 0 || now_ms() < run_ms)) {
		CUresult kr;
		int quit = 0;
		for (; next < nat && at[next].ms <= now_ms() && !quit; next++)
			quit = run_action(&p, at[next].action);
		if (quit)
			break;
		if ((kr = gpu_run(&g)) != CUDA_SUCCESS) {
			const char *kn = NULL;
			cuGetErrorName(kr, &kn);
			printf("t_ms=%.0f name=%s event=kernel_failed error=%s\n", now_ms(), name, kn ? kn : "?");
			usleep(100000);
		}
		if (now_ms() >= line_at) {
			uint64_t got = 0;
			int get = enabled && !start_stop; /* start/stop: drained at Stop (CUPTI's flush point) */
			CUptiResult r = get ? pcs_call(&p, PCS_GETDATA, &got) : CUPTI_SUCCESS;
			interval += got;
			printf("t_ms=%.0f name=%s phase=%s get=%s samples=%llu total=%llu dropped=%llu kernels=%llu\n",
			       now_ms(), name, phase(&p), get ? pcs_result_name(&p, r) : "-",
			       (unsigned long long)interval, (unsigned long long)p.samples, (unsigned long long)p.dropped,
			       (unsigned long long)g.kernels);
			fflush(stdout);
			interval = 0;
			line_at += LINE_MS;
		}
	}
	if (enabled)
		run_action(&p, A_UNSAMPLE);
	printf("t_ms=%.0f name=%s event=done samples=%llu total_reported=%llu dropped=%llu kernels=%llu\n", now_ms(), name,
	       (unsigned long long)p.samples, (unsigned long long)p.total, (unsigned long long)p.dropped,
	       (unsigned long long)g.kernels);
	gpu_close(&g); /* first: a context destroyed while enabled flushes into p's buffer */
	pcs_free(&p);
	return 0;
}
