/* SPDX-License-Identifier: Apache-2.0 */
/* echo client - the config-only consumer. It applies each config, acks
 * it, reports what it applied in its status bytes, and falls back to its
 * defaults when the config is cleared or no agent holds a lease. Its
 * configs are text: one with a byte below 0x20 (other than tab and
 * newline) is rejected with -EINVAL and the config before it kept, and
 * its status says why (error=...) until the next config. Every change it
 * makes is one log line on stdout:
 *
 *   event=applied gen=G bytes=N hash=H payload=TEXT
 *   event=rejected gen=G error=EINVAL
 *   event=cleared gen=G            (back to defaults)
 *   event=lease state=expired|live (defaults | the config again)
 *
 * It waits in procctl_wait; with --epoll, in epoll_wait on its event
 * socket (PROCCTL_EVENT_FD: a program with an event loop of its own), and
 * each applied line then says what woke it (woken=event|timeout: the
 * time procctl_lease_get gives it to look at the lease again).
 *
 * Usage: echo-client [--consumer NAME] [--schema N] [--epoll]
 * (procctl:NAME-vN; default echo, 1)
 */
#define PROCCTL_IMPLEMENTATION
#include "procctl.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int is_text(const char *s, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 && s[i] != '\t' && s[i] != '\n')
			return 0;
	return 1;
}

/* The status bytes: what it applied, and why it refused the last one. */
/* The status bytes, written when they change: each write rings the
 * agent's doorbell, and it reads the state block again. */
static void report(procctl_t *ctx, uint64_t applied, uint32_t hash, uint32_t count, int config, const char *why)
{
	static char last[256];
	static int last_n = -1;
	char status[256];
	int n = snprintf(status, sizeof status, "applied=%llu hash=%08x count=%u mode=%s%s%s", (unsigned long long)applied,
			 hash, count, config ? "config" : "defaults", why ? " error=" : "", why ? why : "");
	if (n == last_n && !memcmp(status, last, (size_t)n))
		return;
	if (procctl_state_set(ctx, status, (size_t)n, 0) == 0) {
		memcpy(last, status, (size_t)n);
		last_n = n;
	}
}

/* What the loop keeps between turns: the config applied, the lease as last
 * seen, and what woke it. */
struct seen {
	uint64_t gen, applied;
	uint32_t hash, count;
	int expired, have_config;
	const char *woken;
	const char *why; /* why the last config was refused */
};

/* The flags into cfg and use_epoll: 0, or 2 (said why). */
static int parse(int argc, char **argv, procctl_config_t *cfg, int *use_epoll)
{
	int i;

	for (i = 1; i < argc; i += 2) {
		char *end;
		unsigned long v;
		if (!strcmp(argv[i], "--epoll")) {
			*use_epoll = 1;
			i--;
			continue;
		}
		if (i + 1 == argc)
			break;
		if (!strcmp(argv[i], "--consumer")) {
			cfg->consumer = argv[i + 1];
			continue;
		}
		v = strtoul(argv[i + 1], &end, 10);
		if (strcmp(argv[i], "--schema") || !*argv[i + 1] || *end || !v || v > UINT32_MAX)
			break;
		cfg->schema_version = (uint32_t)v;
	}
	if (i != argc) {
		fprintf(stderr, "usage: %s [--consumer NAME] [--schema N (1 or more; default 1)] [--epoll]\n", argv[0]);
		return 2;
	}
	if (procctl_name_valid(cfg->consumer, PROCCTL_CONSUMER_MAX) < 0) {
		fprintf(stderr, "echo-client: --consumer: '%s' is not a consumer name ([a-z0-9_.-], 1 to %u)\n",
			cfg->consumer, PROCCTL_CONSUMER_MAX);
		return 2;
	}
	return 0;
}

/* The region made, and with --epoll the loop's epoll set watching its event
 * socket (*ep): 0, or 1 (said why). */
static int start(procctl_t *ctx, procctl_config_t *cfg, int use_epoll, int *ep)
{
	int err;

	cfg->flags = use_epoll ? PROCCTL_EVENT_FD : 0;
	err = procctl_init(ctx, cfg);
	if (err < 0) {
		fprintf(stderr, "echo-client: procctl_init: %s\n", strerror(-err));
		return 1;
	}
	if (use_epoll) {
		struct epoll_event ev = {.events = EPOLLIN};
		if ((*ep = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
		    epoll_ctl(*ep, EPOLL_CTL_ADD, procctl_event_fd(ctx), &ev) < 0) {
			perror("echo-client: epoll");
			return 1;
		}
	}
	return 0;
}

/* The config's turn: polled, then applied, rejected or cleared (a line
 * each), the status written before the ack or nack. */
static void take(procctl_t *ctx, struct seen *s)
{
	static char buf[4097];
	int n = procctl_poll(ctx, buf, sizeof buf - 1, &s->gen);

	if (n > 0 && !is_text(buf, (size_t)n)) {
		printf("event=rejected gen=%llu error=EINVAL\n", (unsigned long long)s->gen);
		s->why = "not-text";
		report(ctx, s->applied, s->hash, s->count, s->have_config && !s->expired, s->why); /* read with the nack */
		procctl_nack(ctx, s->gen, -EINVAL, 0);
	} else if (n > 0) {
		buf[n] = 0;
		s->applied = s->gen;
		s->hash = procctl_crc32c(0, buf, (size_t)n);
		s->count++;
		s->have_config = 1;
		printf("event=applied gen=%llu bytes=%d hash=%08x%s%s payload=%s\n", (unsigned long long)s->gen, n,
		       s->hash, *s->woken ? " woken=" : "", s->woken, buf);
		s->why = NULL;
		/* the status first: whoever sees the ack sees what it applied */
		report(ctx, s->applied, s->hash, s->count, !procctl_lease_expired(ctx, 0), s->why);
		procctl_ack(ctx, s->gen, 0);
	} else if (n == -ENODATA) {
		s->have_config = 0;
		s->why = NULL;
		printf("event=cleared gen=%llu\n", (unsigned long long)s->gen);
		report(ctx, s->applied, s->hash, s->count, 0, s->why);
		procctl_ack(ctx, s->gen, 0);
	}
}

/* Until the next turn: in the program's epoll_wait (ep), as long as the
 * lease allows (a look a lease after the last would count a lapse), or a
 * second at most in procctl_wait. */
static void wait_turn(procctl_t *ctx, int ep, const char **woken)
{
	if (ep >= 0) { /* the program's own loop: its fds, and procctl's */
		struct epoll_event ev;
		procctl_lease_t lease;
		int r;
		procctl_lease_get(ctx, 0, &lease);
		r = epoll_wait(ep, &ev, 1, lease.look_ms);
		*woken = r > 0 ? "event" : "timeout";
		if (r > 0 && procctl_event_read(ctx) == -EPIPE) /* looked: then procctl_poll in take() */
			epoll_ctl(ep, EPOLL_CTL_DEL, procctl_event_fd(ctx), NULL); /* shut down: the timeout alone */
	} else {
		procctl_wait(ctx, 1000000000);
	}
}

int main(int argc, char **argv)
{
	static char storage[PROCCTL_STATE_STORAGE(0, 256)];
	procctl_config_t cfg;
	procctl_t ctx;
	struct seen s = {0, 0, 0, 0, -1, 0, "", NULL};
	int err, ep = -1, use_epoll = 0;

	memset(&cfg, 0, sizeof cfg);
	cfg.consumer = "echo";
	cfg.schema_version = 1;
	cfg.payload_capacity = 4096;
	cfg.state_capacity = 256;
	cfg.state_storage = storage;
	if ((err = parse(argc, argv, &cfg, &use_epoll)) || (err = start(&ctx, &cfg, use_epoll, &ep)))
		return err;
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("event=started pid=%d consumer=%s schema=%u\n", (int)getpid(), cfg.consumer, cfg.schema_version);

	while (!stop) {
		int now_expired;

		take(&ctx, &s);
		now_expired = procctl_lease_expired(&ctx, 0);
		if (now_expired != s.expired && (s.expired != -1 || s.have_config)) {
			printf("event=lease state=%s\n", now_expired ? "expired" : "live");
		}
		s.expired = now_expired;
		report(&ctx, s.applied, s.hash, s.count, s.have_config && !s.expired, s.why);
		wait_turn(&ctx, ep, &s.woken);
	}
	if (ep >= 0)
		close(ep);
	printf("event=stopped\n");
	procctl_close(&ctx);
	return 0;
}
