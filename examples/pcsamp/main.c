/* SPDX-License-Identifier: Apache-2.0 */
/* pcsamp - a CUDA program whose PC sampling is an exclusive resource: it
 * samples only while procctl grants it "GPU PC sampling" on its GPU. The
 * holder loop (examples/token/holder.c, on a control thread of its own)
 * reports ACQUIRING, HOLDING, RELEASING and RELEASED; acquiring is
 * enable + configure + start, releasing stop + drain + disable
 * (cupti.c), and the main thread runs the application's kernels all along.
 * The resource is (--kind, the GPU's 16-byte UUID), so processes that see
 * one GPU under different indices contend for one resource. A line per
 * hold:
 *
 *   event=hold pid=P turn=N samples=S acquire_ms=A release_ms=R [error="..."]
 *
 * Its config and status are the token schema's (token_schema.h), so the
 * token agent and procctl-node's [arbiter] serve it as they serve tokens.
 * pcsamp-standin is the same holder with standin.c: no GPU, acquiring and
 * releasing sleep the times the CUPTI calls take.
 *
 * Usage: pcsamp [--consumer NAME] [--kind N] [--device N] [--witness FILE]
 *               [--lease-max MS]
 *        pcsamp-standin ... --uuid UUID [--acquire-ms MS] [--release-ms MS]
 * SIGTERM/SIGINT: release and exit. */
#define PROCCTL_IMPLEMENTATION
#include "procctl.h"
#include "procctl_agent.h" /* procctl_now_ns */

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "holder.h"
#include "pcsamp.h"
#include "procctl_agent.h"
#include "token_schema.h"

#define KIND_DEFAULT 2 /* the chart's and the examples' number for GPU PC sampling */

static procctl_t ctx;
static struct backend *be;
static uint64_t turn, samples;
static double t_acquire, t_release;

static double now_ms(void)
{
	return (double)procctl_now_ns() / 1e6;
}

static int on_acquire(void *arg)
{
	char why[160];
	double t0 = now_ms();
	int r = backend_acquire(be, why, sizeof why);
	(void)arg;
	t_acquire = now_ms() - t0;
	samples = 0;
	if (r < 0)
		printf("event=hold pid=%d turn=%llu samples=0 acquire_ms=%.3f release_ms=0 error=\"%s\"\n", (int)getpid(),
		       (unsigned long long)turn + 1, t_acquire, why);
	else
		turn++;
	return r;
}

static void on_release(void *arg)
{
	char why[160];
	double t0 = now_ms();
	(void)arg;
	samples += backend_release(be, why, sizeof why);
	t_release = now_ms() - t0;
	printf("event=hold pid=%d turn=%llu samples=%llu acquire_ms=%.3f release_ms=%.3f%s%s%s\n", (int)getpid(),
	       (unsigned long long)turn, (unsigned long long)samples, t_acquire, t_release, why[0] ? " error=\"" : "",
	       why, why[0] ? "\"" : "");
}

static void on_signal(int sig)
{
	(void)sig;
	holder_stop();
}

static int usage(const char *argv0)
{
	fprintf(stderr, "usage: %s [--consumer NAME] [--kind N] [--device N] [--witness FILE] [--lease-max MS] "
			"[--uuid UUID --acquire-ms MS --release-ms MS (the stand-in)]\n", argv0);
	return 2;
}

int main(int argc, char **argv)
{
	static char storage[PROCCTL_STATE_STORAGE(1, sizeof(struct token_status))];
	struct holder_use use = {on_acquire, on_release, NULL, 1, 0};
	struct pcsamp_opts o = {0, {0}, 0, 30, 20};
	procctl_config_t cfg;
	procctl_resource_t key;
	sigset_t mask;
	pthread_t t;
	char err[256];
	int i, r, witness = -1;
	long kind = KIND_DEFAULT;

	memset(&cfg, 0, sizeof cfg);
	memset(&key, 0, sizeof key);
	cfg.consumer = "pcsamp";
	cfg.schema_version = TOKEN_SCHEMA_VERSION;
	cfg.payload_capacity = 64;
	cfg.state_capacity = sizeof(struct token_status);
	cfg.resource_capacity = 1;
	cfg.state_storage = storage;
	for (i = 1; i + 1 < argc; i += 2) {
		const char *a = argv[i], *v = argv[i + 1];
		if (!strcmp(a, "--consumer"))
			cfg.consumer = v;
		else if (!strcmp(a, "--kind"))
			kind = strtol(v, NULL, 10);
		else if (!strcmp(a, "--device"))
			o.device = atoi(v);
		else if (!strcmp(a, "--witness"))
			witness = open(v, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		else if (!strcmp(a, "--lease-max"))
			cfg.lease_max_ns = strtoull(v, NULL, 10) * 1000000ull;
		else if (!strcmp(a, "--uuid") && procctl_resource_id_parse(v, o.uuid) == 0)
			o.uuid_given = 1;
		else if (!strcmp(a, "--acquire-ms"))
			o.acquire_ms = (unsigned)atoi(v);
		else if (!strcmp(a, "--release-ms"))
			o.release_ms = (unsigned)atoi(v);
		else
			return usage(argv[0]);
	}
	if (i != argc || kind < 1 || kind > UINT32_MAX)
		return usage(argv[0]);
	setvbuf(stdout, NULL, _IOLBF, 0); /* its lines and the holder's write(2)s in order */
	if (!(be = backend_open(&o, err, sizeof err))) {
		fprintf(stderr, "pcsamp: %s\n", err);
		return 1;
	}
	key.kind = (uint32_t)kind;
	memcpy(key.id, o.uuid, sizeof key.id);
	if ((r = procctl_init(&ctx, &cfg)) < 0) {
		fprintf(stderr, "pcsamp: procctl_init: %s\n", strerror(-r));
		return 1;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	holder_init(&ctx, &key, witness, &use);
	procctl_resource_id_format(o.uuid, err);
	printf("event=started pid=%d kind=%ld id=%s\n", (int)getpid(), kind, err);
	/* The signals reach the main thread (the work loop), not the control thread. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	r = pthread_create(&t, NULL, holder_control, NULL);
	pthread_sigmask(SIG_UNBLOCK, &mask, NULL);
	if (r != 0)
		return 1;
	while (!holder_stopping())
		backend_work(be);
	pthread_join(t, NULL);
	procctl_close(&ctx);
	backend_close(be);
	return 0;
}
