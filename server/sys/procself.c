/* SPDX-License-Identifier: Apache-2.0 */
/* procself.c - the daemon's own process metrics (procself.h). */
#include "procself.h"

#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "prom.h"

#define FAMILY(name, type, unit, help) (&(const struct prom_family){name, type, unit, help})

/* /proc/self/stat's fields after the command's ")": field 3 (state) is
 * v[0]. The command may hold spaces and parentheses: the last ")" ends it. */
enum { STAT_UTIME = 11, STAT_STIME = 12, STAT_THREADS = 17, STAT_START = 19, STAT_VSIZE = 20, STAT_RSS = 21, STAT_N };

/* What malloc holds (every arena's, mallinfo2): in use, and free but
 * kept (what a resident set that grows while in_use does not is made
 * of: fragments of freed memory). */
static void heap_metrics(struct prom *p)
{
	struct mallinfo2 mi = mallinfo2();
	prom_family(p, FAMILY("procctl_heap_bytes", PROM_GAUGE, "bytes",
			      "What malloc holds, by state: in_use (allocated, mmapped ones included), free (freed, "
			      "kept by malloc)."));
	prom_int(p, PROM_LABELS({"state", "in_use"}), (unsigned long long)(mi.uordblks + mi.hblkhd));
	prom_int(p, PROM_LABELS({"state", "free"}), (unsigned long long)mi.fordblks);
}

static int read_stat(unsigned long long v[STAT_N])
{
	char buf[1024], *s, *end;
	size_t len, i;
	FILE *f = fopen("/proc/self/stat", "re");
	if (!f)
		return -errno;
	len = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[len] = 0;
	if (!(s = strrchr(buf, ')')))
		return -EPROTO;
	s++;
	for (i = 0; i < STAT_N; i++) {
		while (*s == ' ')
			s++;
		if (i == 0) { /* the state: a letter */
			s += *s != 0;
			continue;
		}
		v[i] = strtoull(s, &end, 10);
		if (end == s)
			return -EPROTO;
		s = end;
	}
	return 0;
}

/* The system's boot time, seconds since the epoch (/proc/stat's btime). */
static int boot_time(unsigned long long *btime)
{
	char line[256];
	int ok = 0;
	FILE *f = fopen("/proc/stat", "re");
	if (!f)
		return -errno;
	while (!ok && fgets(line, sizeof line, f))
		ok = sscanf(line, "btime %llu", btime) == 1;
	fclose(f);
	return ok ? 0 : -EPROTO;
}

/* Open descriptors, the directory's own not counted; -errno when it
 * cannot be opened (none left). */
static long open_fds(void)
{
	struct dirent *e;
	long n = 0;
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -errno;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d);
	closedir(d);
	return n;
}

void procself_metrics(struct prom *p, void *arg)
{
	unsigned long long st[STAT_N], btime;
	long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE), fds = open_fds();
	int have = read_stat(st) == 0 && tck > 0 && page > 0;
	struct rlimit rl;
	(void)arg;
	prom_family(p, FAMILY("process_cpu_seconds_total", PROM_COUNTER, "seconds", "Total user and system CPU time spent in seconds."));
	if (have)
		prom_real(p, PROM_NOLABELS, (double)(st[STAT_UTIME] + st[STAT_STIME]) / (double)tck);
	prom_family(p, FAMILY("process_open_fds", PROM_GAUGE, NULL, "Number of open file descriptors."));
	if (fds >= 0)
		prom_int(p, PROM_NOLABELS, (unsigned long)fds);
	prom_family(p, FAMILY("process_max_fds", PROM_GAUGE, NULL, "Maximum number of open file descriptors."));
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		prom_int(p, PROM_NOLABELS, rl.rlim_cur);
	prom_family(p, FAMILY("process_virtual_memory_bytes", PROM_GAUGE, "bytes", "Virtual memory size in bytes."));
	if (have)
		prom_int(p, PROM_NOLABELS, st[STAT_VSIZE]);
	prom_family(p, FAMILY("process_resident_memory_bytes", PROM_GAUGE, "bytes", "Resident memory size in bytes."));
	if (have)
		prom_int(p, PROM_NOLABELS, st[STAT_RSS] * (unsigned long long)page);
	prom_family(p, FAMILY("process_start_time_seconds", PROM_GAUGE, "seconds",
			      "Start time of the process since unix epoch in seconds."));
	if (have && boot_time(&btime) == 0)
		prom_real(p, PROM_NOLABELS, (double)btime + (double)st[STAT_START] / (double)tck);
	prom_family(p, FAMILY("process_threads", PROM_GAUGE, NULL, "Number of OS threads in the process."));
	if (have)
		prom_int(p, PROM_NOLABELS, st[STAT_THREADS]);
	heap_metrics(p);
}
