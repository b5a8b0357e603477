/* SPDX-License-Identifier: Apache-2.0 */
/* fdlimit.c - the descriptors network connections may take (fdlimit.h). */
#include "fdlimit.h"

#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <sys/resource.h>

static struct fd_budget budget;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Descriptors open now (64 when they cannot be counted). */
static int open_now(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	if (!d)
		return 64;
	while (readdir(d))
		n++;
	closedir(d);
	return n > 3 ? n - 3 : 0; /* ".", ".." and the directory's own */
}

static void work_out(void)
{
	struct rlimit rl;
	long lim, keep, room;
	lim = getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > INT_MAX
		      ? INT_MAX
		      : (long)rl.rlim_cur;
	budget.base = open_now();
	keep = lim / 8;
	keep = keep < FD_RESERVE_MIN ? FD_RESERVE_MIN : keep > FD_RESERVE_MAX ? FD_RESERVE_MAX : keep;
	if (keep > (lim - budget.base) / 2)
		keep = lim > budget.base ? (lim - budget.base) / 2 : 0;
	room = lim - keep - budget.base;
	budget.room = room > 0 ? (int)room : 0;
	budget.tcp = budget.base + budget.room - budget.room / 4;
	budget.http = budget.base + budget.room;
}

const struct fd_budget *fd_budget(void)
{
	pthread_once(&once, work_out);
	return &budget;
}
