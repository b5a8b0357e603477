/* SPDX-License-Identifier: Apache-2.0 */
/* hellorings.h - the hello probe's perf rings (hello.c). On every CPU two
 * rings: one of task and mapping records (a software dummy event: execs,
 * forks, exits, executable mappings, everything the host does) and one of
 * uprobe hits (the processes saying hello; the uprobes write there through
 * PERF_EVENT_IOC_SET_OUTPUT). Both wake on every record. The record rings
 * sit in an epoll of their own inside the hello's, so that all of them
 * are muted with one call: the host's churn then waits for a timer while
 * a hello is still heard at once. Internal to libprocctl-agent. */
#ifndef PROCCTL_HELLORINGS_H
#define PROCCTL_HELLORINGS_H

/* This file's globals carry the library's prefix in its symbols (a program
 * linking libprocctl-agent.a may have a hello_epoll_consume of its own). */
#define hello_epoll_consume procctl__hello_epoll_consume
#define hello_possible_cpus procctl__hello_possible_cpus
#define hello_rings_close procctl__hello_rings_close
#define hello_rings_drain procctl__hello_rings_drain
#define hello_rings_mute procctl__hello_rings_mute
#define hello_rings_open procctl__hello_rings_open

#include <stddef.h>
#include <stdint.h>

struct hello_ring {
	int fd, cpu;
	struct perf_event_mmap_page *meta;
	unsigned char *data;
	uint64_t size; /* data bytes, a power of two */
};

struct hello_rings {
	int outer;  /* the hello's epoll (not owned) */
	int rfd;    /* the record rings' epoll, in outer while not muted */
	int muted;
	int n;      /* CPUs with both rings */
	uint64_t fill; /* the most bytes a record ring held at the last drain, in 1/256ths of its size */
	struct hello_ring *rec, *hit;
	unsigned char scratch[65536]; /* a record that wraps a ring's end */
};

/* One past the highest CPU number the kernel may ever have online (at
 * most 4096). */
long hello_possible_cpus(void);

/* One record (its perf_event_header first, len bytes in all). */
typedef void (*hello_record_fn)(void *arg, const unsigned char *r, size_t len);

/* Both rings on each of ncpu possible CPUs (those not online skipped), the
 * record rings rec_pages data pages each (a power of two), into outer
 * (with data.u32 UINT32_MAX - 2). 0, -ENODEV when no CPU has them,
 * -EDQUOT when a ring could not be locked in memory, or -errno;
 * hello_rings_close either way. */
int hello_rings_open(struct hello_rings *rs, int outer, long ncpu, unsigned rec_pages);
void hello_rings_close(struct hello_rings *rs);

/* Clears the readiness epfd reports (level-triggered: a perf fd's is
 * cleared by being polled). */
void hello_epoll_consume(int epfd);

/* Clears the rings' readiness (outer's is the caller's), then reads every
 * record of every ring into fn, hits first: how many records there were
 * (and in fill, how full the fullest record ring was). */
size_t hello_rings_drain(struct hello_rings *rs, hello_record_fn fn, void *arg);

/* Muted: records no longer make outer readable (hits still do); they wait
 * for the next drain. Records that came while muted may not make outer
 * readable when unmuted: drain once after. 0 or -errno. */
int hello_rings_mute(struct hello_rings *rs, int muted);

#endif
