/* SPDX-License-Identifier: Apache-2.0 */
/* token agent - an exclusive-resource agent on libprocctl-agent alone (no
 * daemon): a registry for the token consumer and an arbiter for one kind,
 * which hands each resource to one token client at a time, round robin
 * after the hold time. A second instance waits passive and takes over,
 * adopting the grants, when the first goes.
 *
 * Usage: token-agent [--consumer NAME] [--lock-dir DIR] [--kind K]
 *                    [--resources N | --id UUID] [--hold MS] [--lease MS] [--rescan MS]
 *                    [--hello 0|1]
 * Resources are of kind K (a number, default 1), ids 0 .. N-1 (their first
 * byte: token-client --id), or the one resource UUID (a GPU's: pcsamp's). Each client gets token_schema.h's struct
 * token_config (the hold and the number of resources); at the end its
 * struct token_status is read back (turns, time held). SIGTERM/SIGINT:
 * hand off and exit, after a summary line per resource.
 *
 * A client that starts later is found at once by the procctl:hello probe
 * (procctl_hello, as procctl-node does: perf uprobes, root or CAP_PERFMON),
 * else at the next rescan (--rescan, default 60 s); --hello 0 turns it off.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procctl_arbiter.h"
#include "token_schema.h"

#define MS 1000000ull
#define TICK_MS 5       /* without doorbells, reports are read this often */
#define UNHEARD_MS 1000 /* with them, a doorbell not heard (muted) is read this often */

/* The poll timeout until the arbiter's next tick: at most TICK_MS without
 * doorbells, UNHEARD_MS with them. */
static int timeout_ms(const procctl_arbiter_t *a, int bells)
{
	uint64_t due = procctl_arbiter_next_tick(a), now = (uint64_t)procctl_now_ns();
	uint64_t most = bells ? UNHEARD_MS : TICK_MS;
	if (due <= now)
		return 0;
	return due - now >= most * MS ? (int)most : (int)((due - now + MS - 1) / MS);
}

static procctl_registry_t *reg;
static volatile sig_atomic_t stop;
static struct token_config config; /* what every client gets */

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void on_log(enum procctl_log_level level, const char *event, const char *fields, void *arg)
{
	static const char *names[] = {"error", "warn", "info", "debug"};
	(void)arg;
	if (level <= PROCCTL_LOG_INFO)
		fprintf(stderr, "level=%s event=%s %s\n", names[level], event, fields);
}

/* The config, to one client: -EPERM while this agent is passive (it goes
 * out again when the lock comes). */
static void configure(procctl_client_t *c)
{
	procctl_client_write(c, &config, sizeof config);
}

static void on_event(const struct procctl_event *ev, void *arg)
{
	(void)arg;
	if (ev->type == PROCCTL_EV_ATTACHED) {
		configure(ev->client);
	} else if (ev->type == PROCCTL_EV_OWNERSHIP) {
		printf("event=ownership consumer=%s held=%d\n", ev->consumer, ev->held);
		if (ev->held) {
			procctl_client_t *cs[256];
			size_t i, n = procctl_registry_clients(reg, cs, 256);
			for (i = 0; i < n; i++)
				configure(cs[i]);
		}
	}
}

/* What each client reports of itself (its struct token_status). */
static void statuses(void)
{
	procctl_client_t *cs[256];
	struct procctl_state *st = malloc(sizeof *st);
	size_t i, n = procctl_registry_clients(reg, cs, 256);
	for (i = 0; st && i < n; i++) {
		struct procctl_client_info info;
		struct token_status ts;
		int r, tries = 0;
		procctl_client_info(cs[i], &info, sizeof info);
		/* -EAGAIN: the client is writing it (it reports after every
		 * change); it is done within a moment unless it is stopped. */
		while ((r = procctl_client_read_state(cs[i], st, sizeof *st, -1)) == -EAGAIN && ++tries < 100)
			usleep(10000);
		if (r < 0) {
			printf("event=client_status pid=%d error=%s\n", (int)info.pid, strerrorname_np(-r));
			continue;
		}
		if (st->data_len != sizeof ts) { /* not (yet) this schema's status */
			printf("event=client_status pid=%d bytes=%u expected=%zu\n", (int)info.pid, st->data_len, sizeof ts);
			continue;
		}
		memcpy(&ts, st->data, sizeof ts);
		printf("event=client_status pid=%d turns=%llu held_ms=%llu last_grant=%016llx hold_ms=%llu\n",
		       (int)info.pid, (unsigned long long)ts.turns, (unsigned long long)(ts.held_ns / MS),
		       (unsigned long long)ts.last_grant_id, (unsigned long long)(ts.hold_ns / MS));
	}
	free(st);
}

/* The hello probe's news, to the registry. */
static void on_hello_pid(pid_t pid, void *arg)
{
	(void)arg;
	if (pid)
		procctl_registry_notify(reg, pid);
	else
		procctl_registry_rescan(reg); /* records were lost */
}

static void on_hello_exec(pid_t pid, void *arg)
{
	(void)arg;
	procctl_registry_exec(reg, pid);
}

/* The hello probe, or NULL (said why: found at rescans then). */
static procctl_hello_t *hello_start(uint64_t rescan_ns)
{
	struct procctl_hello_opts ho;
	procctl_hello_t *h;
	memset(&ho, 0, sizeof ho);
	ho.sz = sizeof ho;
	ho.on_pid = on_hello_pid;
	ho.on_exec = on_hello_exec;
	if (!(h = procctl_hello_new(&ho)))
		fprintf(stderr, "token-agent: no hello probe (%s): clients started later are found at rescans, every %llu ms\n",
			procctl_hello_error(-errno), (unsigned long long)((rescan_ns ? rescan_ns : 60000 * MS) / MS));
	return h;
}

static int uuid_ids; /* --id: resources are named by UUID */

/* A resource's id as the lines give it: its first byte, or the UUID. */
static const char *id_str(const procctl_resource_t *r)
{
	static char buf[37];
	if (uuid_ids)
		procctl_resource_id_format(r->id, buf);
	else
		snprintf(buf, sizeof buf, "%u", r->id[0]);
	return buf;
}

/* One line per change of holder. */
static void show(const struct procctl_arbiter_snapshot *s, size_t n, pid_t *last)
{
	size_t i;
	for (i = 0; i < n; i++) {
		if (s[i].holder_pid == last[i])
			continue;
		last[i] = s[i].holder_pid;
		printf("event=holder resource=%u:%s pid=%d grant=%016llx waiters=%u handoffs=%llu\n", s[i].res.kind,
		       id_str(&s[i].res), (int)s[i].holder_pid, (unsigned long long)s[i].grant_id, s[i].waiters,
		       (unsigned long long)s[i].handoffs);
	}
}

static int usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [--consumer NAME] [--lock-dir DIR] [--kind K] [--resources N | --id UUID] [--hold MS] "
		"[--lease MS] [--rescan MS] [--hello 0|1]\n",
		argv0);
	return 2;
}

struct args {
	unsigned long kind, nres, hold_ms;
	int hello;
};

/* The flags into o, a and res[0].id (--id): 0, or 2 (said why). */
static int parse(int argc, char **argv, struct procctl_registry_opts *o, struct args *a, procctl_resource_t *res)
{
	int ai;
	for (ai = 1; ai < argc; ai++) {
		char *end = NULL;
		if (ai + 1 >= argc)
			return usage(argv[0]);
		if (!strcmp(argv[ai], "--consumer"))
			o->consumer = argv[++ai];
		else if (!strcmp(argv[ai], "--lock-dir"))
			o->lock_dir = argv[++ai];
		else if (!strcmp(argv[ai], "--kind"))
			a->kind = strtoul(argv[++ai], &end, 10);
		else if (!strcmp(argv[ai], "--resources"))
			a->nres = strtoul(argv[++ai], &end, 10);
		else if (!strcmp(argv[ai], "--id") && procctl_resource_id_parse(argv[ai + 1], res[0].id) == 0)
			uuid_ids = ++ai;
		else if (!strcmp(argv[ai], "--hold"))
			a->hold_ms = strtoul(argv[++ai], &end, 10);
		else if (!strcmp(argv[ai], "--lease"))
			o->lease_ns = strtoull(argv[++ai], &end, 10) * MS;
		else if (!strcmp(argv[ai], "--rescan"))
			o->rescan_ns = strtoull(argv[++ai], &end, 10) * MS;
		else if (!strcmp(argv[ai], "--hello") && (!strcmp(argv[ai + 1], "0") || !strcmp(argv[ai + 1], "1")))
			a->hello = argv[++ai][0] == '1';
		else
			return usage(argv[0]);
		if (end && *end)
			return usage(argv[0]);
	}
	if (a->nres < 1 || a->nres > PROCCTL_ARB_MAX_RESOURCES || a->hold_ms < 1 || a->kind < 1 ||
	    a->kind > UINT32_MAX) {
		fprintf(stderr, "token-agent: --resources 1..%d, --hold at least 1 ms, --kind 1..%u\n",
			PROCCTL_ARB_MAX_RESOURCES, UINT32_MAX);
		return 2;
	}
	if (o->consumer && procctl_name_valid(o->consumer, PROCCTL_CONSUMER_MAX) < 0) {
		fprintf(stderr, "token-agent: --consumer: '%s' is not a consumer name ([a-z0-9_.-], 1 to %u)\n",
			o->consumer, PROCCTL_CONSUMER_MAX);
		return 2;
	}
	if (uuid_ids && a->nres != 1) {
		fprintf(stderr, "token-agent: --id names one resource: no --resources with it\n");
		return 2;
	}
	return 0;
}

/* The registry (reg), with doorbells where the kernel has futex_waitv
 * (o->flags says which): 0, or 1 (said why). */
static int registry_start(struct procctl_registry_opts *o)
{
	o->flags = PROCCTL_REGISTRY_DOORBELLS; /* react to each report at once */
	reg = procctl_registry_new(o);
	if (!reg && errno == ENOSYS) {
		fprintf(stderr, "token-agent: no futex_waitv (Linux < 5.16): reports are seen at %d ms ticks\n", TICK_MS);
		o->flags = 0;
		reg = procctl_registry_new(o);
	}
	if (!reg) {
		fprintf(stderr, "token-agent: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}

/* The arbiter of the resources res, on the registry's source src: NULL
 * (said why) when there is none. */
static procctl_arbiter_t *arbiter_start(struct procctl_arbiter_source *src, const char *consumer, const struct args *ar,
					procctl_resource_t *res)
{
	struct procctl_arbiter_opts ao;
	procctl_arbiter_t *a;
	int err;

	if ((err = procctl_arbiter_registry_source(src, reg, consumer, 100 * MS)) < 0) {
		fprintf(stderr, "token-agent: %s\n", strerror(-err));
		return NULL;
	}
	memset(&ao, 0, sizeof ao);
	ao.sz = sizeof ao;
	ao.kind = (uint32_t)ar->kind;
	ao.hold_ns = ar->hold_ms * MS;
	ao.flags = PROCCTL_ARB_READY_EVENTS; /* every registry dispatch is followed by a tick */
	ao.resources = res;
	ao.nresources = ar->nres;
	a = procctl_arbiter_new(&ao, src);
	if (!a) {
		fprintf(stderr, "token-agent: %s\n", strerror(errno));
		return NULL;
	}
	return a;
}

/* The loop until a signal or a registry failure: the hello probe's news,
 * the registry's, the arbiter's tick, a line per change of holder (snap,
 * last: its nres resources). 0, or the registry's error. A hello probe
 * that fails is let go (*hello NULL). */
/* Said once: the first full scan of /proc is done (what ran before this
 * agent is attached; what starts later is found by the hello, or by a rescan). */
static void scanned_once(void)
{
	static int said;
	struct procctl_registry_stats st;
	if (said)
		return;
	procctl_registry_stats(reg, &st, sizeof st);
	if (st.scans) {
		printf("event=scanned clients=%u\n", st.clients);
		said = 1;
	}
}

static int serve(procctl_arbiter_t *a, procctl_hello_t **hello, int bells, struct procctl_arbiter_snapshot *snap,
		 size_t nres, pid_t *last)
{
	int err = 0, tick_err, last_err = 0;

	while (!stop && !err) {
		struct pollfd p[2] = {{procctl_registry_fd(reg), POLLIN, 0},
				      {*hello ? procctl_hello_fd(*hello) : -1, POLLIN, 0}};
		if (poll(p, 2, timeout_ms(a, bells)) < 0 && errno != EINTR)
			break;
		if (*hello && (p[1].revents & POLLIN) && (err = procctl_hello_dispatch(*hello)) < 0) {
			fprintf(stderr, "token-agent: hello: %s (found at rescans from here)\n", strerror(-err));
			procctl_hello_free(*hello);
			*hello = NULL;
			err = 0;
		}
		err = procctl_registry_dispatch(reg);
		if (err) {
			fprintf(stderr, "token-agent: registry: %s\n", strerror(-err));
			break;
		}
		scanned_once();
		tick_err = procctl_arbiter_tick(a); /* a write to one holder failed: the next tick retries */
		if (tick_err && tick_err != last_err)
			fprintf(stderr, "token-agent: arbiter: %s\n", strerror(-tick_err));
		last_err = tick_err;
		show(snap, procctl_arbiter_snapshot(a, snap, nres, sizeof *snap), last);
	}
	return err;
}

/* A summary line per resource, at the end. */
static void summary(procctl_arbiter_t *a, struct procctl_arbiter_snapshot *snap, size_t nres)
{
	size_t i, n = procctl_arbiter_snapshot(a, snap, nres, sizeof *snap);
	for (i = 0; i < n; i++)
		printf("event=summary resource=%u:%s handoffs=%llu held_ms=%llu pending_ms=%llu blocked_ms=%llu\n",
		       snap[i].res.kind, id_str(&snap[i].res), (unsigned long long)snap[i].handoffs,
		       (unsigned long long)(snap[i].hold_ns_total / MS), (unsigned long long)(snap[i].pending_ns / MS),
		       (unsigned long long)(snap[i].blocked_ns / MS));
}

int main(int argc, char **argv)
{
	static procctl_resource_t res[PROCCTL_ARB_MAX_RESOURCES];
	static struct procctl_arbiter_snapshot snap[PROCCTL_ARB_MAX_RESOURCES];
	static pid_t last[PROCCTL_ARB_MAX_RESOURCES];
	struct procctl_registry_opts o;
	struct procctl_arbiter_source src;
	struct args ar = {1, 1, 1000, 1};
	procctl_hello_t *hello = NULL;
	procctl_arbiter_t *a;
	size_t i;
	int err = 0;

	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.consumer = "token";
	o.on_event = on_event;
	if ((err = parse(argc, argv, &o, &ar, res)))
		return err;
	for (i = 0; i < ar.nres; i++) {
		res[i].kind = (uint32_t)ar.kind;
		if (!uuid_ids)
			res[i].id[0] = (uint8_t)i;
	}
	config.hold_ns = ar.hold_ms * MS;
	config.resources = (uint32_t)ar.nres;
	setvbuf(stdout, NULL, _IOLBF, 0);
	procctl_set_log(on_log, NULL);
	if ((err = registry_start(&o)))
		return err;
	if (!(a = arbiter_start(&src, o.consumer, &ar, res)))
		return 1;
	if (ar.hello)
		hello = hello_start(o.rescan_ns);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	printf("event=started pid=%d kind=%lu resources=%lu hold_ms=%lu hello=%d\n", (int)getpid(), ar.kind, ar.nres,
	       ar.hold_ms, hello != NULL);
	err = serve(a, &hello, o.flags != 0, snap, ar.nres, last);
	summary(a, snap, ar.nres);
	statuses();
	printf("event=stopping mode=hand-off\n");
	if (hello)
		procctl_hello_free(hello);
	procctl_arbiter_free(a);
	procctl_registry_close(reg, 0);
	procctl_arbiter_registry_source_free(&src);
	return err ? 1 : 0;
}
