/* SPDX-License-Identifier: Apache-2.0 */
/* inject.c - libprocctl-cupti's entry: the CUDA driver loads the library
 * named by CUDA_INJECTION64_PATH at cuInit and calls InitializeInjection.
 * It finds the driver's and CUPTI's calls (dlsym, one table: cupti_calls.h),
 * follows the program's contexts by CUPTI's resource callbacks, and
 * starts the control thread (control.c), which samples a GPU's contexts
 * only while procctl grants the GPU's PC sampling. Whatever fails, it
 * says so once on stderr and leaves the program as it was: never granted,
 * a program runs as without it.
 *
 * Environment: PROCCTL_CUPTI_CONSUMER (pcsamp), PROCCTL_CUPTI_KIND (2),
 * PROCCTL_CUPTI_LIBRARY (the libcupti to load; default its soname, found
 * by the library's RUNPATH, the toolkit's folders). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "inject.h"

#define STR_(x) #x
#define STR(x) STR_(x) /* a call's symbol: cuda.h's mapping (cuCtxPushCurrent_v2) applied */

#define DESTROY_WAIT_S 5 /* a context's destroy, and the exit, wait this long for a claimer */

struct inject inj = {.mu = PTHREAD_MUTEX_INITIALIZER, .idle = PTHREAD_COND_INITIALIZER,
		     .stats_mu = PTHREAD_MUTEX_INITIALIZER, .wake_fd = -1};

static void say(const char *what, const char *why)
{
	fprintf(stderr, "procctl-cupti: %s: %s; PC sampling is off in this process\n", what, why);
}

/* One entry of the table from h: 0, or -1 said. */
static int from(void *h, const char *name, void *slot)
{
	void *s = dlsym(h, name);
	if (!s) {
		fprintf(stderr, "procctl-cupti: no %s: the driver or CUPTI is older than the headers (CUDA_VERSION %s); "
				"PC sampling is off in this process\n", name, STR(CUDA_VERSION));
		return -1;
	}
	memcpy(slot, &s, sizeof s); /* a function's address, as dlsym gives it */
	return 0;
}

#define LOADING "loading CUPTI (PROCCTL_CUPTI_LIBRARY names another)"

/* CUPTI, loaded: PROCCTL_CUPTI_LIBRARY's when set (a path: a regular file,
 * opened first without waiting, so that a FIFO or a device named there
 * cannot hold the program in cuInit), else its soname. NULL, said. */
static void *cupti_open(void)
{
	const char *lib = getenv("PROCCTL_CUPTI_LIBRARY");
	char via[40], why[300];
	struct stat st;
	void *h;
	int fd;
	if (!lib || !*lib || !strchr(lib, '/')) {
		if (!(h = dlopen(lib && *lib ? lib : PROCCTL_CUPTI_SONAME, RTLD_NOW | RTLD_LOCAL)))
			say(LOADING, dlerror());
		return h;
	}
	if ((fd = open(lib, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)) < 0 || fstat(fd, &st) < 0 ||
	    !S_ISREG(st.st_mode)) {
		snprintf(why, sizeof why, "%s: %s", lib, fd < 0 ? strerror(errno) : "not a regular file");
		if (fd >= 0)
			close(fd);
		say(LOADING, why);
		return NULL;
	}
	snprintf(via, sizeof via, "/proc/self/fd/%d", fd); /* the file checked, whatever the path names now */
	if (!(h = dlopen(via, RTLD_NOW | RTLD_LOCAL))) {
		snprintf(why, sizeof why, "%s: %s", lib, dlerror());
		say(LOADING, why);
	}
	close(fd);
	return h;
}

/* The table's entries from the driver (already loaded: it loaded us) and
 * from CUPTI: 0, or -1 said. */
static int resolve(void)
{
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD), *cupti;
	if (!cuda) {
		say("libcuda.so.1 is not loaded", dlerror());
		return -1;
	}
	if (!(cupti = cupti_open()))
		return -1;
#define DRIVER(f) if (from(cuda, STR(f), &inj.c.f) < 0) return -1;
#define CUPTI(f) if (from(cupti, STR(f), &inj.c.f) < 0) return -1;
	CUPTI_CALLS_DRIVER(DRIVER)
	CUPTI_CALLS_CUPTI(CUPTI)
#undef DRIVER
#undef CUPTI
	return 0;
}

/* The UUID of ctx's GPU: 0, or -1 when the driver cannot say. */
static int uuid_of(CUcontext ctx, uint8_t out[16])
{
	uint32_t ord;
	CUdevice dev;
	CUuuid u;
	if (inj.c.cuptiGetDeviceId(ctx, &ord) != CUPTI_SUCCESS || inj.c.cuDeviceGet(&dev, (int)ord) != CUDA_SUCCESS ||
	    inj.c.cuDeviceGetUuid(&u, dev) != CUDA_SUCCESS)
		return -1;
	memcpy(out, u.bytes, 16);
	return 0;
}

/* The GPU u's index in inj.uuid, added if new: -1 past INJECT_GPUS. Under mu. */
static int gpu_index(const uint8_t u[16])
{
	unsigned i;
	for (i = 0; i < inj.ngpus; i++)
		if (!memcmp(inj.uuid[i], u, 16))
			return (int)i;
	if (inj.ngpus == INJECT_GPUS) {
		inj.lost_gpus++;
		return -1;
	}
	memcpy(inj.uuid[inj.ngpus], u, 16);
	return (int)inj.ngpus++;
}

/* A PC record's samples, by function (pcs_record_fn): drains run on
 * either side. Its name is kept for the process's life: CUPTI may hand
 * the same string out in any later record, of any context. */
static void record(void *arg, char *function, uint64_t samples)
{
	(void)arg;
	pthread_mutex_lock(&inj.stats_mu);
	top_add(&inj.top, function, samples);
	pcs_names_keep(&inj.names, function);
	pthread_mutex_unlock(&inj.stats_mu);
}

/* The entry of ctx not being destroyed, or NULL. Under mu. */
static struct inject_ctx *find(CUcontext ctx)
{
	int i;
	for (i = 0; i < INJECT_CTXS; i++)
		if (inj.ctxs[i].ctx == ctx && !inj.ctxs[i].dying)
			return &inj.ctxs[i];
	return NULL;
}

/* Now plus DESTROY_WAIT_S, on the clock of inj.idle. */
static void deadline(struct timespec *until)
{
	clock_gettime(CLOCK_MONOTONIC, until);
	until->tv_sec += DESTROY_WAIT_S;
}

int ctx_claim(struct inject_ctx *x, const struct timespec *until)
{
	int r = 0;
	while (x->busy && until && r != ETIMEDOUT)
		r = pthread_cond_timedwait(&inj.idle, &inj.mu, until);
	if (x->busy)
		return 0;
	x->busy = 1;
	return 1;
}

void ctx_unclaim(struct inject_ctx *x)
{
	x->busy = 0;
	if (x->dying == 2) /* its destroy went on without it: forgotten, its buffers left to CUPTI */
		memset(x, 0, sizeof *x);
	pthread_cond_broadcast(&inj.idle);
}

static void ctx_created(CUcontext ctx)
{
	uint8_t u[16];
	int i, gpu;
	if (uuid_of(ctx, u) < 0)
		return;
	pthread_mutex_lock(&inj.mu);
	for (i = 0, gpu = gpu_index(u); gpu >= 0 && i < INJECT_CTXS; i++) {
		struct inject_ctx *x = &inj.ctxs[i];
		if (!x->ctx) {
			memset(x, 0, sizeof *x);
			x->ctx = ctx;
			x->gpu = gpu;
			pcs_init(&x->p, &inj.c, ctx, 1, 0);
			x->p.record = record;
			break;
		}
	}
	inj.lost_ctxs += gpu >= 0 && i == INJECT_CTXS;
	pthread_mutex_unlock(&inj.mu);
}

/* A context going away is let go of here, on the program's thread, while
 * it still exists, once no other thread is in it (5 s at most); the
 * control thread reports the release. */
static void ctx_destroying(CUcontext ctx)
{
	struct timespec until;
	struct inject_ctx *x;
	deadline(&until);
	pthread_mutex_lock(&inj.mu);
	if ((x = find(ctx))) {
		x->dying = 1; /* nothing starts on it: find and the control thread pass it over */
		if (ctx_claim(x, &until)) {
			pthread_mutex_unlock(&inj.mu);
			ctx_unsample(x);
			pthread_mutex_lock(&inj.mu);
			memset(x, 0, sizeof *x); /* its buffers, if a Disable failed, left to CUPTI */
			pthread_cond_broadcast(&inj.idle);
		} else {
			x->dying = 2; /* its claimer forgets it when done */
			say("a context's destroy", "another thread was in CUPTI for it for 5 s; going on without it");
		}
	}
	pthread_mutex_unlock(&inj.mu);
}

/* A module unloading: the range of its context, sampling, ends here and
 * another starts (CUPTI's flush point after a module load-unload-load). */
static void module_unloading(CUcontext ctx)
{
	struct inject_ctx *x;
	pthread_mutex_lock(&inj.mu);
	if ((x = find(ctx)) && !x->busy && x->sampling && ctx_claim(x, NULL)) {
		pthread_mutex_unlock(&inj.mu);
		if (ctx_split(x) < 0)
			ctx_unsample(x); /* the control thread finds it not sampling: released */
		pthread_mutex_lock(&inj.mu);
		ctx_unclaim(x);
	}
	pthread_mutex_unlock(&inj.mu);
}

static void CUPTIAPI on_resource(void *arg, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
	const CUpti_ResourceData *rd = data;
	(void)arg;
	if (domain != CUPTI_CB_DOMAIN_RESOURCE || !rd || !rd->context)
		return;
	if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED)
		ctx_created(rd->context);
	else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING)
		ctx_destroying(rd->context);
	else if (cbid == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING)
		module_unloading(rd->context);
	else
		return;
	control_wake();
}

/* The program exits: every context sampling stops and disables (CUPTI's
 * teardown for contexts never destroyed; 5 s at most for another thread
 * in one), and nothing starts again. */
static void at_exit(void)
{
	struct timespec until;
	int i;
	deadline(&until);
	pthread_mutex_lock(&inj.mu);
	inj.exiting = 1;
	for (i = 0; i < INJECT_CTXS; i++) {
		struct inject_ctx *x = &inj.ctxs[i];
		if (!x->ctx || x->dying || !ctx_claim(x, &until))
			continue;
		pthread_mutex_unlock(&inj.mu);
		ctx_unsample(x);
		pthread_mutex_lock(&inj.mu);
		ctx_unclaim(x);
	}
	pthread_mutex_unlock(&inj.mu);
	control_wake();
}

static void failed(int32_t r, uint32_t call)
{
	pthread_mutex_lock(&inj.stats_mu);
	inj.errors++;
	inj.last_error = r;
	inj.last_call = call;
	pthread_mutex_unlock(&inj.stats_mu);
}

/* One PC sampling call on x, its failure counted: 1 it succeeded. */
static int call(struct inject_ctx *x, enum pcs_call c)
{
	uint64_t got = 0;
	CUptiResult r = pcs_call(&x->p, c, &got);
	if (r != CUPTI_SUCCESS)
		failed((int32_t)r, (uint32_t)c + 1);
	return r == CUPTI_SUCCESS;
}

/* x's samples since the last account, into the counts. */
static void account(struct inject_ctx *x)
{
	pthread_mutex_lock(&inj.stats_mu);
	inj.samples += x->p.samples;
	inj.dropped += x->p.dropped;
	pthread_mutex_unlock(&inj.stats_mu);
	x->p.samples = x->p.dropped = 0;
}

/* Make x's context current on this thread: 1, or 0 counted. */
static int push(struct inject_ctx *x)
{
	CUresult r = inj.c.cuCtxPushCurrent(x->ctx);
	if (r != CUDA_SUCCESS)
		failed((int32_t)r, 0);
	return r == CUDA_SUCCESS;
}

static void pop(void)
{
	CUcontext prev;
	inj.c.cuCtxPopCurrent(&prev);
}

/* Disable x (enabled): its buffers dropped, or kept when Disable failed
 * (CUPTI may still write into them), and then x is never sampled again. */
static void disable(struct inject_ctx *x)
{
	if (call(x, PCS_DISABLE))
		pcs_drop(&x->p);
	else
		x->broken = 1;
	account(x);
	x->sampling = x->started = 0;
}

int ctx_sample(struct inject_ctx *x)
{
	if (x->broken || !push(x))
		return -EIO;
	x->p.period = inj.period;
	if (!call(x, PCS_ENABLE)) { /* PCS_ENABLE disables again when it fails past Enable */
		x->broken = x->p.stuck; /* ... unless that Disable failed */
		pop();
		return -EIO;
	}
	x->sampling = 1;
	if (!call(x, PCS_CONFIGURE) || !call(x, PCS_START)) {
		disable(x);
		pop();
		return -EIO;
	}
	x->started = 1;
	pop();
	return 0;
}

void ctx_unsample(struct inject_ctx *x)
{
	int pushed;
	if (!x->sampling)
		return;
	pushed = push(x);
	if (x->started)
		call(x, PCS_STOP);
	call(x, PCS_GETDATA);
	disable(x);
	if (pushed)
		pop();
}

int ctx_split(struct inject_ctx *x)
{
	int ok;
	if (!x->sampling || !x->started || !push(x))
		return -EIO;
	x->started = 0;
	ok = call(x, PCS_STOP) && call(x, PCS_GETDATA) && call(x, PCS_START);
	x->started = ok;
	account(x);
	pop();
	return ok ? 0 : -EIO;
}

static int number(const char *s, unsigned long max, unsigned long dflt, unsigned long *out)
{
	char *end;
	if (!s || !*s) {
		*out = dflt;
		return 0;
	}
	errno = 0;
	*out = strtoul(s, &end, 10);
	return errno || *end || *out < 1 || *out > max ? -1 : 0;
}

__attribute__((visibility("default"))) int InitializeInjection(void);

/* inj.idle on CLOCK_MONOTONIC: a wait's bound is not moved by the wall
 * clock. Before any thread waits on it. */
static void idle_on_monotonic(void)
{
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_destroy(&inj.idle);
	pthread_cond_init(&inj.idle, &a);
	pthread_condattr_destroy(&a);
}

/* CUPTI's callbacks, as subscriber "procctl" (CUPTI has one per process):
 * 0, or -1 said (with the subscriber that has them). */
static int subscribe(CUpti_SubscriberHandle *sub)
{
	char old[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1], why[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 80];
	CUpti_SubscriberParams sp;
	CUptiResult r;
	memset(&sp, 0, sizeof sp);
	memset(old, 0, sizeof old);
	sp.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
	sp.subscriberName = "procctl";
	sp.oldSubscriberName = old;
	sp.oldSubscriberSize = sizeof old - 1;
	if ((r = inj.c.cuptiSubscribe_v2(sub, on_resource, NULL, &sp)) != CUPTI_SUCCESS) {
		const char *name = NULL;
		inj.c.cuptiGetResultString(r, &name);
		snprintf(why, sizeof why, "%s%s%s%s", name ? name : "CUPTI_ERROR_?", old[0] ? " (held by " : "", old,
			 old[0] ? ")" : "");
		say("cuptiSubscribe", why);
		return -1;
	}
	if (inj.c.cuptiEnableDomain(1, *sub, CUPTI_CB_DOMAIN_RESOURCE) != CUPTI_SUCCESS) {
		inj.c.cuptiUnsubscribe(*sub);
		say("cuptiEnableDomain", "CUPTI refused its resource callbacks");
		return -1;
	}
	return 0;
}

int InitializeInjection(void)
{
	static int once;
	const char *consumer = getenv("PROCCTL_CUPTI_CONSUMER");
	unsigned long kind;
	CUpti_SubscriberHandle sub;
	char err[200];
	if (__atomic_exchange_n(&once, 1, __ATOMIC_ACQ_REL))
		return 1;
	if (number(getenv("PROCCTL_CUPTI_KIND"), UINT32_MAX, 2, &kind) < 0) {
		say("PROCCTL_CUPTI_KIND", "not a number from 1 to 4294967295");
		return 1;
	}
	inj.kind = (uint32_t)kind;
	idle_on_monotonic();
	/* Subscribed before the region and its thread exist: no context is
	 * created before cuInit returns, and none is missed. */
	if (resolve() < 0 || subscribe(&sub) < 0)
		return 1;
	if (control_start(consumer && *consumer ? consumer : "pcsamp", err, sizeof err) < 0) {
		inj.c.cuptiUnsubscribe(sub);
		say("procctl", err);
		return 1;
	}
	atexit(at_exit);
	return 1;
}
