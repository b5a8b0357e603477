/* SPDX-License-Identifier: Apache-2.0 */
/* cfgwatch.c - following the config file with inotify: a write or a
 * swap (Kubernetes' ..data symlink) rebuilds the configuration and
 * applies what can change while the daemon runs (node_watch_config). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "node_int.h"

#define RELOAD_SETTLE_NS (100 * MS) /* a file written in steps is read once it settled */
#define RELOAD_MAX_WAIT_NS (1000 * MS) /* ... or a second after the first change, in a busy directory */

/* Watch the directories of the path and of what it resolves to now (for
 * a ConfigMap: the volume's, where ..data is swapped, and the dated one).
 * 0, or -errno when the path's own directory cannot be watched. */
static int watch_dirs(struct node *n)
{
	char buf[PATH_MAX], *slash, *real;
	const uint32_t mask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB;
	snprintf(buf, sizeof buf, "%s", n->cfg_path);
	slash = strrchr(buf, '/');
	if (slash)
		*slash = slash == buf ? (slash[1] = 0, '/') : 0;
	if (inotify_add_watch(n->cfg_ifd, slash ? buf : ".", mask) < 0)
		return -errno;
	if ((real = realpath(n->cfg_path, NULL))) {
		slash = strrchr(real, '/');
		if (slash && slash != real) {
			*slash = 0;
			inotify_add_watch(n->cfg_ifd, real, mask);
		}
		free(real);
	}
	return 0;
}

/* t_cfg: the changes settled (or came for a second): reload. */
void cfg_on_due(struct timer *t, int64_t now)
{
	struct node *n = container_of(t, struct node, t_cfg);
	(void)now;
	n->cfg_first = 0;
	cfg_reload(n);
}

/* Something changed near the file: reload once things settle. */
void cfg_events(struct node *n, int64_t now)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	int64_t due;
	int any = 0;
	while (read(n->cfg_ifd, buf, sizeof buf) > 0)
		any = 1;
	if (!any)
		return;
	if (!n->cfg_first)
		n->cfg_first = now;
	due = now + RELOAD_SETTLE_NS;
	if (due > n->cfg_first + RELOAD_MAX_WAIT_NS)
		due = n->cfg_first + RELOAD_MAX_WAIT_NS;
	if (timer_arm(&n->timers, &n->t_cfg, due) < 0) /* no room: reload now */
		cfg_on_due(&n->t_cfg, now);
}

/* node_reload (SIGHUP): now, without waiting for a change to settle. */
void cfg_asked(struct node *n)
{
	if (n->cfg_ifd < 0) {
		node_log(PROCCTL_LOG_INFO, "reload_ignored", "reason=\"no config file (--config) to read again\"");
		return;
	}
	node_log(PROCCTL_LOG_INFO, "reload_asked", "file=%s signal=SIGHUP", n->cfg_path);
	timer_disarm(&n->timers, &n->t_cfg);
	n->cfg_first = 0;
	if (cfg_reload(n) == 0) /* said, so that whoever sent it sees it done */
		node_log(PROCCTL_LOG_INFO, "config_unchanged", "file=%s desired=%zu", n->cfg_path, n->cfg.ndesired);
}

/* Build the configuration again and apply its [desired] sections: 1 it
 * changed (logged), 0 it did not, -1 it could not be read (logged). */
int cfg_reload(struct node *n)
{
	struct node_cfg *c = malloc(sizeof *c);
	char err[512];
	int others, desired, r;
	if ((r = watch_dirs(n)) < 0) /* a swap made a new directory to follow */
		node_log(PROCCTL_LOG_WARN, "config_not_watched", "file=%s error=%s", n->cfg_path, strerror(-r));
	if (!c) {
		node_log(PROCCTL_LOG_ERROR, "config_reload_failed", "file=%s error=\"out of memory\"", n->cfg_path);
		return -1;
	}
	if (n->cfg_build(c, err, sizeof err, n->cfg_arg) < 0) {
		char q[sizeof err];
		node_log(PROCCTL_LOG_ERROR, "config_reload_failed", "file=%s error=\"%s\" kept=running", n->cfg_path,
			 node_log_quote(q, sizeof q, err));
		free(c);
		return -1;
	}
	others = memcmp(c, &n->cfg, offsetof(struct node_cfg, desired)) != 0;
	desired = c->ndesired != n->cfg.ndesired || memcmp(c->desired, n->cfg.desired, sizeof c->desired) != 0;
	if (others)
		node_log(PROCCTL_LOG_WARN, "config_restart_needed", "file=%s reason=\"only [desired] sections apply while "
			 "running; the rest at the next start\"", n->cfg_path);
	desired_from_file(n, c); /* every time: a section refused before is tried again */
	if (desired) {
		memcpy(n->cfg.desired, c->desired, sizeof c->desired);
		n->cfg.ndesired = c->ndesired;
	}
	if (others || desired)
		node_log(PROCCTL_LOG_INFO, "config_reloaded", "file=%s desired=%zu", n->cfg_path, n->cfg.ndesired);
	free(c);
	return others || desired;
}

int node_watch_config(struct node *n, const char *path,
		      int (*build)(struct node_cfg *c, char *err, size_t errlen, void *arg), void *arg)
{
	int r;
	if ((n->cfg_ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0)
		return -errno;
	n->cfg_path = path;
	n->cfg_build = build;
	n->cfg_arg = arg;
	if ((r = watch_dirs(n)) < 0) {
		close(n->cfg_ifd);
		n->cfg_ifd = -1;
		return r;
	}
	/* Once more: a change just before the watch began. */
	if (timer_arm(&n->timers, &n->t_cfg, now_ns() + RELOAD_SETTLE_NS) < 0)
		cfg_on_due(&n->t_cfg, now_ns());
	return 0;
}
