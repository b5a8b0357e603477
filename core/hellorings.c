/* SPDX-License-Identifier: Apache-2.0 */
/* hellorings.c - the hello probe's perf rings (hellorings.h). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hellorings.h"

#define HIT_PAGES 4 /* ~700 hits a CPU between two drains; more: a lost record, a full scan */
#define RFD_TAG (UINT32_MAX - 2)

/* One past the highest CPU number the kernel may ever have online. */
long hello_possible_cpus(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
	char buf[256];
	long n = sysconf(_SC_NPROCESSORS_CONF);
	size_t e;
	if (f) {
		if (fgets(buf, sizeof buf, f)) { /* "0-7", "0,2-5": the last number is the highest */
			e = strcspn(buf, "\n");
			while (e && buf[e - 1] >= '0' && buf[e - 1] <= '9')
				e--;
			if (strtol(buf + e, NULL, 10) + 1 > n)
				n = strtol(buf + e, NULL, 10) + 1;
		}
		fclose(f);
	}
	return n > 4096 ? 4096 : n;
}

static long page_size(void)
{
	return sysconf(_SC_PAGESIZE);
}

/* A ring on cpu: records (task and mappings) or, with records 0, none of
 * its own: the hits of uprobes that output into it. 0, -ENODEV for a CPU
 * that is not online, or -errno. */
static int ring_open(struct hello_ring *rg, int cpu, unsigned pages, int records)
{
	struct perf_event_attr a;
	void *m;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY;
	a.sample_type = PERF_SAMPLE_TID;
	a.sample_id_all = 1;
	a.mmap = a.mmap2 = a.task = a.comm = a.comm_exec = records ? 1 : 0; /* executable mappings only */
	a.watermark = 1;
	a.wakeup_watermark = 1; /* every record wakes */
	rg->cpu = cpu;
	rg->fd = (int)syscall(SYS_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (rg->fd < 0)
		return errno == ENODEV || errno == EINVAL ? -ENODEV : -errno;
	rg->size = (uint64_t)pages * (uint64_t)page_size();
	m = mmap(NULL, (size_t)(rg->size + (uint64_t)page_size()), PROT_READ | PROT_WRITE, MAP_SHARED, rg->fd, 0);
	if (m == MAP_FAILED) {
		/* EPERM: past the locked memory perf allows (perf_event_mlock_kb
		 * a CPU, then RLIMIT_MEMLOCK) without CAP_IPC_LOCK */
		int err = errno == EPERM ? -EDQUOT : -errno;
		close(rg->fd);
		rg->fd = -1;
		return err;
	}
	rg->meta = m;
	rg->data = (unsigned char *)m + page_size();
	return 0;
}

static void ring_close(struct hello_ring *rg)
{
	if (rg->meta)
		munmap(rg->meta, (size_t)(rg->size + (uint64_t)page_size()));
	if (rg->fd >= 0)
		close(rg->fd);
}

static int watch(int epfd, int fd, uint32_t tag)
{
	struct epoll_event ee = {.events = EPOLLIN, .data.u32 = tag};
	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ee) < 0 ? -errno : 0;
}

int hello_rings_open(struct hello_rings *rs, int outer, long ncpu, unsigned rec_pages)
{
	int c, err;
	rs->outer = outer;
	rs->muted = 0;
	rs->n = 0;
	rs->rec = calloc((size_t)ncpu, sizeof *rs->rec);
	rs->hit = calloc((size_t)ncpu, sizeof *rs->hit);
	if ((rs->rfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
		return -errno;
	if (!rs->rec || !rs->hit)
		return -ENOMEM;
	if ((err = watch(outer, rs->rfd, RFD_TAG)) < 0)
		return err;
	for (c = 0; c < ncpu; c++) {
		struct hello_ring *rec = &rs->rec[rs->n], *hit = &rs->hit[rs->n];
		if ((err = ring_open(rec, c, rec_pages, 1)) == -ENODEV)
			continue;
		if (err < 0 || (err = ring_open(hit, c, HIT_PAGES, 0)) < 0) {
			if (err == -ENODEV)
				err = -EIO; /* the CPU went offline in between */
			ring_close(rec);
			return err;
		}
		rs->n++;
		if ((err = watch(rs->rfd, rec->fd, (uint32_t)c)) < 0 || (err = watch(outer, hit->fd, (uint32_t)c)) < 0)
			return err;
	}
	return rs->n ? 0 : -ENODEV;
}

void hello_rings_close(struct hello_rings *rs)
{
	int c;
	for (c = 0; c < rs->n; c++) {
		ring_close(&rs->rec[c]);
		ring_close(&rs->hit[c]);
	}
	free(rs->rec);
	free(rs->hit);
	rs->rec = rs->hit = NULL;
	rs->n = 0;
	if (rs->rfd >= 0)
		close(rs->rfd);
	rs->rfd = -1;
}

void hello_epoll_consume(int epfd)
{
	struct epoll_event ev[64];
	while (epoll_wait(epfd, ev, 64, 0) == 64)
		;
}

static size_t drain(struct hello_rings *rs, struct hello_ring *rg, hello_record_fn fn, void *arg)
{
	uint64_t head = __atomic_load_n(&rg->meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = rg->meta->data_tail;
	size_t n = 0;
	while (head - tail >= sizeof(struct perf_event_header)) {
		struct perf_event_header hd;
		uint64_t at = tail & (rg->size - 1);
		const unsigned char *r;
		if (at + sizeof hd <= rg->size) {
			memcpy(&hd, rg->data + at, sizeof hd);
		} else {
			size_t first = (size_t)(rg->size - at);
			memcpy(&hd, rg->data + at, first);
			memcpy((unsigned char *)&hd + first, rg->data, sizeof hd - first);
		}
		if (hd.size < sizeof hd || hd.size > head - tail)
			break; /* cannot be: the kernel writes whole records */
		if (at + hd.size <= rg->size) {
			r = rg->data + at;
		} else {
			size_t first = (size_t)(rg->size - at);
			memcpy(rs->scratch, rg->data + at, first);
			memcpy(rs->scratch + first, rg->data, hd.size - first);
			r = rs->scratch;
		}
		fn(arg, r, hd.size);
		tail += hd.size;
		n++;
	}
	__atomic_store_n(&rg->meta->data_tail, tail, __ATOMIC_RELEASE);
	return n;
}

size_t hello_rings_drain(struct hello_rings *rs, hello_record_fn fn, void *arg)
{
	size_t n = 0;
	int c;
	hello_epoll_consume(rs->rfd);
	for (c = 0; c < rs->n; c++)
		n += drain(rs, &rs->hit[c], fn, arg);
	rs->fill = 0;
	for (c = 0; c < rs->n; c++) {
		struct hello_ring *rg = &rs->rec[c];
		uint64_t held = __atomic_load_n(&rg->meta->data_head, __ATOMIC_ACQUIRE) - rg->meta->data_tail;
		if (held * 256 / rg->size > rs->fill)
			rs->fill = held * 256 / rg->size;
		n += drain(rs, rg, fn, arg);
	}
	return n;
}

int hello_rings_mute(struct hello_rings *rs, int muted)
{
	struct epoll_event ee = {.events = muted ? 0 : EPOLLIN, .data.u32 = RFD_TAG};
	if (!muted == !rs->muted)
		return 0;
	if (epoll_ctl(rs->outer, EPOLL_CTL_MOD, rs->rfd, &ee) < 0)
		return -errno;
	rs->muted = muted;
	return 0;
}
