/* bench.h - what every benchmark program shares: the clock, the median,
 * and the JSON line each figure is reported as (with its floor and the
 * ratio to it). */
#ifndef PROCCTL_BENCH_H
#define PROCCTL_BENCH_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline int64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Sorts v. */
static inline double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
	return v[n / 2];
}

static inline void bench_report(const char *name, const char *unit, double value, double floor)
{
	printf("{\"name\": \"%s\", \"value\": %.3f, \"unit\": \"%s\", \"floor\": %.3f, \"ratio\": %.3f}\n", name, value,
	       unit, floor, value / floor);
	fflush(stdout);
}

#endif
