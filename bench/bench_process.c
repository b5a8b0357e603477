/* SPDX-License-Identifier: Apache-2.0 */
/* bench_process - the process side against floors measured in the same
 * run. Prints one JSON object per line:
 *   {"name", "value", "unit", "floor", "ratio"}
 * value and floor are medians over interleaved rounds; ratio = value/floor.
 *
 *   poll_idle  procctl_poll, nothing new     floor: non-inlined acquire load + compare
 *   poll_4k    procctl_poll of a new 4 KiB   floor: memcpy + hardware CRC32C of 4 KiB
 *   init       procctl_init + procctl_close  floor: memfd_create, ftruncate, seal,
 *                                            mmap, munmap, close
 */
#define _GNU_SOURCE 1
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "procctl.h"
#include "bench.h"
#include "region.h"

#define ROUNDS 15

/* ---- poll_idle ---- */
static procctl_t ctx;
static uint32_t cached;
static const uint32_t *seqp;

__attribute__((noinline)) static int floor_idle(void)
{
	return __atomic_load_n(seqp, __ATOMIC_ACQUIRE) == cached ? 0 : 1;
}

static int (*volatile floor_idle_fn)(void) = floor_idle;
static int (*volatile poll_fn)(procctl_t *, void *, size_t, uint64_t *) = procctl_poll;

static void bench_poll_idle(void)
{
	double v[ROUNDS], f[ROUNDS];
	const long n = 20000000;
	int r;
	for (r = 0; r < ROUNDS; r++) {
		int (*pf)(procctl_t *, void *, size_t, uint64_t *) = poll_fn;
		int (*ff)(void) = floor_idle_fn;
		double t0 = bench_now_ns();
		long i;
		int acc = 0;
		for (i = 0; i < n; i++)
			acc += ff();
		f[r] = (bench_now_ns() - t0) / (double)n;
		t0 = bench_now_ns();
		for (i = 0; i < n; i++)
			acc += pf(&ctx, NULL, 0, NULL);
		v[r] = (bench_now_ns() - t0) / (double)n;
		if (acc)
			abort();
	}
	bench_report("poll_idle", "ns", bench_median(v, ROUNDS), bench_median(f, ROUNDS));
}

/* Make ctx forget what it delivered and saw (private fields: the seq
 * it last finished with, in its poll cell and as its wait token). */
static void forget(procctl_t *c)
{
	c->seen_seq_ = ~0u;
	c->canary_[PROCCTL__CANARY_CELLS] = 0;
	c->applied_gen_ = 0;
}

/* ---- poll_4k ---- */
static void bench_poll_4k(const unsigned char *payload_src)
{
	static unsigned char dst[4096];
	double v[ROUNDS], f[ROUNDS];
	const int n = 20000;
	uint32_t crc = 0;
	int r;
	for (r = 0; r < ROUNDS; r++) {
		double t0 = bench_now_ns();
		int i;
		for (i = 0; i < n; i++) {
			memcpy(dst, payload_src, 4096);
			__asm__ __volatile__("" : : "r"(dst) : "memory");
			crc += procctl_crc32c(0, payload_src, 4096);
		}
		f[r] = (bench_now_ns() - t0) / n;
		t0 = bench_now_ns();
		for (i = 0; i < n; i++) {
			forget(&ctx); /* so each poll reads a new config */
			if (poll_fn(&ctx, dst, sizeof dst, NULL) != 4096)
				abort();
		}
		v[r] = (bench_now_ns() - t0) / n;
	}
	if (crc == 1)
		puts("");
	bench_report("poll_4k", "ns", bench_median(v, ROUNDS), bench_median(f, ROUNDS));
}

/* The configuration every benchmark uses: 4 KiB payload, 4 resources. */
static procctl_config_t bench_cfg(void *storage)
{
	procctl_config_t cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.consumer = "bench";
	cfg.schema_version = 1;
	cfg.payload_capacity = 4096;
	cfg.state_capacity = 256;
	cfg.resource_capacity = 4;
	cfg.state_storage = storage;
	return cfg;
}

/* ---- init ---- */
static void bench_init(void)
{
	static unsigned char storage[PROCCTL_STATE_STORAGE(4, 256)];
	procctl_config_t cfg = bench_cfg(storage);
	double v[ROUNDS], f[ROUNDS];
	const int n = 400;
	int r;

	for (r = 0; r < ROUNDS; r++) {
		double t0 = bench_now_ns();
		int i;
		for (i = 0; i < n; i++) {
			int fd = memfd_create("procctl:bench-v1", MFD_CLOEXEC | MFD_ALLOW_SEALING);
			void *m;
			if (fd < 0 || ftruncate(fd, 3 * 4096) < 0 ||
			    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
				abort();
			m = mmap(NULL, 3 * 4096, PROT_READ, MAP_SHARED, fd, 0);
			if (m == MAP_FAILED)
				abort();
			munmap(m, 3 * 4096);
			close(fd);
		}
		f[r] = (bench_now_ns() - t0) / n;
		t0 = bench_now_ns();
		for (i = 0; i < n; i++) {
			procctl_t c;
			if (procctl_init(&c, &cfg) < 0)
				abort();
			procctl_close(&c);
		}
		v[r] = (bench_now_ns() - t0) / n;
	}
	bench_report("init", "ns", bench_median(v, ROUNDS), bench_median(f, ROUNDS));
}

int main(void)
{
	static unsigned char storage[PROCCTL_STATE_STORAGE(4, 256)];
	static unsigned char payload[4096];
	struct procctl_region reg;
	enum procctl_reject why;
	procctl_config_t cfg = bench_cfg(storage);
	struct stat st;
	char path[64];
	int fd, i;

	if (procctl_init(&ctx, &cfg) < 0)
		return 1;
	/* This process is its own agent: map the region read/write. */
	snprintf(path, sizeof path, "/proc/self/fd/%d", procctl_fd(&ctx));
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || procctl_region_map(&reg, fd, (uint64_t)st.st_size, &why) < 0 ||
	    procctl_region_claim(&reg, 1, 1, 10000000000ull) < 0)
		return 1;
	close(fd);
	for (i = 0; i < 4096; i++)
		payload[i] = (unsigned char)(i * 7);
	if (procctl_region_publish(&reg, payload, sizeof payload) < 0)
		return 1;
	seqp = &reg.ctrl->seq;
	cached = __atomic_load_n(seqp, __ATOMIC_RELAXED);

	bench_poll_4k(reg.map + reg.hdr.slot_off[reg.active] + reg.hdr.payload_off);
	/* Settle: the last poll consumed the config, so poll is idle now. */
	forget(&ctx);
	procctl_poll(&ctx, payload, sizeof payload, NULL);
	bench_poll_idle();
	bench_init();
	procctl_region_unmap(&reg);
	procctl_close(&ctx);
	return 0;
}
