/* SPDX-License-Identifier: Apache-2.0 */
/* prom.h - the one writer of /metrics: families and their samples in the
 * Prometheus text format 0.0.4.
 *
 * Every part of the daemon that adds to /metrics (the loop, HTTP, gRPC,
 * the process's own) writes through one struct prom, in turn: a family
 * first (prom_family: its HELP and TYPE lines), then its samples. The
 * writer escapes label values and HELP text as the format requires,
 * checks names, and refuses a family written twice or a sample with no
 * family of its kind before it: the first such mistake is kept, and
 * prom_finish returns it instead of the text, so a broken exposition is
 * never served. Not thread-safe: one thread at a time writes. */
#ifndef PROCCTL_NODE_PROM_H
#define PROCCTL_NODE_PROM_H

#include <stddef.h>
#include <stdint.h>

enum prom_type { PROM_COUNTER, PROM_GAUGE, PROM_HISTOGRAM };

struct prom_family {
	const char *name; /* [a-zA-Z_:][a-zA-Z0-9_:]*; a counter's ends with _total */
	enum prom_type type;
	const char *unit; /* NULL, or the base unit its name ends with ("seconds", "bytes"; before _total) */
	const char *help; /* any text: backslashes and newlines are escaped */
};

struct prom_label {
	const char *name;  /* [a-zA-Z_][a-zA-Z0-9_]*, not starting with __ */
	const char *value; /* any bytes but NUL: backslash, quote and newline are escaped */
};

/* A list of labels and its length, for the sample calls:
 * prom_int(p, PROM_LABELS({"kind", k}, {"resource", r}), v). */
#define PROM_LABELS(...)                                                             \
	(const struct prom_label[]){__VA_ARGS__},                                    \
		sizeof((const struct prom_label[]){__VA_ARGS__}) / sizeof(struct prom_label)
#define PROM_NOLABELS NULL, 0

struct prom;

/* A new writer; NULL when out of memory. */
struct prom *prom_new(void);
/* Free p, its text with it (prom_finish takes the text first). */
void prom_free(struct prom *p);

/* Start family f (its HELP and TYPE lines): 0, or -EEXIST
 * when a family of that name was written before, -EINVAL for a name,
 * unit or type that is not right (both kept for prom_finish). */
int prom_family(struct prom *p, const struct prom_family *f);

/* A sample of the family started last (a counter or a gauge): an integer
 * ("%llu"), or a real ("%.9f"; NaN and infinities as the format spells
 * them). */
void prom_int(struct prom *p, const struct prom_label *l, size_t nl, uint64_t v);
void prom_real(struct prom *p, const struct prom_label *l, size_t nl, double v);

/* Family f with one sample, without labels: v. */
void prom_one(struct prom *p, const struct prom_family *f, uint64_t v);

/* The family started last (a histogram), one series of it: counts[k]
 * observations in (bounds[k-1], bounds[k]] for k < nb, counts[nb] over
 * every bound; written cumulative, le="%g", then _sum and _count. */
void prom_histogram(struct prom *p, const struct prom_label *l, size_t nl, const double *bounds, size_t nb,
		    const uint64_t *counts, double sum);

/* The bucket of v: the first k < nb with v <= bounds[k] (bounds rising),
 * or nb (over every bound). */
size_t prom_bucket(const double *bounds, size_t nb, double v);

/* The text (malloc'd, NUL-terminated, its length in *len) and 0, or the
 * first mistake (-EEXIST, -EINVAL, -ENOMEM), said in err, and *text
 * NULL; p is freed either way. */
int prom_finish(struct prom *p, char **text, size_t *len, char *err, size_t errlen);

#endif
