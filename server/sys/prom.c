/* SPDX-License-Identifier: Apache-2.0 */
/* prom.c - the one writer of /metrics (prom.h). */
#include "prom.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct prom {
	FILE *f;
	char *buf;
	size_t len;
	char **names; /* the families written, in order */
	size_t nnames, cap;
	const char *cur; /* the family samples go to (names' last); NULL: none, or it was refused */
	enum prom_type type; /* its type */
	int err;                       /* the first mistake; 0: none */
	char why[160];
};

struct prom *prom_new(void)
{
	struct prom *p = calloc(1, sizeof *p);
	if (p && !(p->f = open_memstream(&p->buf, &p->len))) {
		free(p);
		return NULL;
	}
	return p;
}

void prom_free(struct prom *p)
{
	size_t i;
	if (!p)
		return;
	if (p->f)
		fclose(p->f);
	free(p->buf);
	for (i = 0; i < p->nnames; i++)
		free(p->names[i]);
	free(p->names);
	free(p);
}

__attribute__((format(printf, 3, 4))) static void mistake(struct prom *p, int err, const char *fmt, ...)
{
	va_list ap;
	if (p->err)
		return;
	p->err = err;
	va_start(ap, fmt);
	vsnprintf(p->why, sizeof p->why, fmt, ap);
	va_end(ap);
}

/* [a-zA-Z_:][a-zA-Z0-9_:]* (a metric's name), or without ':' (a label's). */
static int name_ok(const char *s, int colon)
{
	size_t i;
	if (!s || !*s)
		return 0;
	for (i = 0; s[i]; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':') ||
		      (i && c >= '0' && c <= '9')))
			return 0;
	}
	return 1;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && !strcmp(s + n - k, suffix);
}

/* The unit its name ends with: "_UNIT", or "_UNIT_total" for a counter. */
static int unit_ok(const struct prom_family *f)
{
	char want[64];
	if (!f->unit)
		return 1;
	if (!name_ok(f->unit, 0) ||
	    snprintf(want, sizeof want, "_%s%s", f->unit, f->type == PROM_COUNTER ? "_total" : "") >= (int)sizeof want)
		return 0;
	return ends_with(f->name, want);
}

/* The length of the valid UTF-8 sequence at s (1 to 4), or 0. */
static size_t utf8_len(const unsigned char *s)
{
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (s[0] >= 0xe0 && s[0] <= 0xef) {
		unsigned lo = s[0] == 0xe0 ? 0xa0 : 0x80, hi = s[0] == 0xed ? 0x9f : 0xbf;
		return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 ? 3 : 0;
	}
	if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		unsigned lo = s[0] == 0xf0 ? 0x90 : 0x80, hi = s[0] == 0xf4 ? 0x8f : 0xbf;
		return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 && (s[3] & 0xc0) == 0x80 ? 4 : 0;
	}
	return 0;
}

/* s escaped as the format says: a backslash and a newline always, a
 * double quote in a label value (quote); a byte that is no UTF-8 becomes
 * U+FFFD, since a parser refuses the line (and with it the scrape). */
static void put_escaped(FILE *f, const char *s, int quote)
{
	const unsigned char *u = (const unsigned char *)s;
	while (*u) {
		size_t k = utf8_len(u);
		if (*u == '\\')
			fputs("\\\\", f);
		else if (*u == '\n')
			fputs("\\n", f);
		else if (*u == '"' && quote)
			fputs("\\\"", f);
		else if (!k)
			fputs("\xef\xbf\xbd", f);
		else
			fwrite(u, 1, k, f);
		u += k ? k : 1;
	}
}

int prom_family(struct prom *p, const struct prom_family *f)
{
	static const char *const types[] = {"counter", "gauge", "histogram"};
	size_t i;
	p->cur = NULL;
	if (!name_ok(f->name, 1) || (unsigned)f->type > PROM_HISTOGRAM || !f->help ||
	    (f->type == PROM_COUNTER) != ends_with(f->name, "_total") || !unit_ok(f)) {
		mistake(p, -EINVAL, "family %.80s: its name, type or unit is not right", f->name ? f->name : "(null)");
		return -EINVAL;
	}
	for (i = 0; i < p->nnames; i++)
		if (!strcmp(p->names[i], f->name)) {
			mistake(p, -EEXIST, "family %.80s written twice", f->name);
			return -EEXIST;
		}
	if (p->nnames == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 64;
		char **v = realloc(p->names, cap * sizeof *v);
		if (!v) {
			mistake(p, -ENOMEM, "out of memory");
			return -ENOMEM;
		}
		p->names = v;
		p->cap = cap;
	}
	if (!(p->names[p->nnames] = strdup(f->name))) {
		mistake(p, -ENOMEM, "out of memory");
		return -ENOMEM;
	}
	p->nnames++;
	fprintf(p->f, "# HELP %s ", f->name);
	put_escaped(p->f, f->help, 0);
	fprintf(p->f, "\n# TYPE %s %s\n", f->name, types[f->type]);
	p->cur = p->names[p->nnames - 1];
	p->type = f->type;
	return 0;
}

/* A sample's name and labels (and le, for a bucket), up to its value;
 * 0, or -EINVAL (the mistake kept) when it cannot be written. */
static int sample_head(struct prom *p, const char *suffix, const struct prom_label *l, size_t nl, const char *le)
{
	size_t i, j;
	for (i = 0; i < nl; i++) {
		if (!name_ok(l[i].name, 0) || !strncmp(l[i].name, "__", 2) || !l[i].value ||
		    (p->type == PROM_HISTOGRAM && !strcmp(l[i].name, "le"))) {
			mistake(p, -EINVAL, "family %.80s: a label's name or value is not right", p->cur);
			return -EINVAL;
		}
		for (j = 0; j < i; j++)
			if (!strcmp(l[i].name, l[j].name)) {
				mistake(p, -EINVAL, "family %.80s: label %.40s twice", p->cur, l[i].name);
				return -EINVAL;
			}
	}
	fprintf(p->f, "%s%s", p->cur, suffix);
	for (i = 0; i < nl; i++) {
		fprintf(p->f, "%s%s=\"", i ? "," : "{", l[i].name);
		put_escaped(p->f, l[i].value, 1);
		fputc('"', p->f);
	}
	if (le)
		fprintf(p->f, "%sle=\"%s\"", nl ? "," : "{", le);
	if (nl || le)
		fputc('}', p->f);
	fputc(' ', p->f);
	return 0;
}

/* A sample may go to the family started last, of a type it fits. */
static int fits(struct prom *p, int histogram)
{
	if (!p->cur) {
		mistake(p, -EINVAL, "a sample with no family started (or the family was refused)");
		return 0;
	}
	if ((p->type == PROM_HISTOGRAM) != histogram) {
		mistake(p, -EINVAL, "family %.80s: a sample of the wrong type", p->cur);
		return 0;
	}
	return 1;
}

static void put_real(FILE *f, double v)
{
	if (isnan(v))
		fputs("NaN", f);
	else if (isinf(v))
		fputs(v > 0 ? "+Inf" : "-Inf", f);
	else
		fprintf(f, "%.9f", v);
}

void prom_int(struct prom *p, const struct prom_label *l, size_t nl, uint64_t v)
{
	if (fits(p, 0) && !sample_head(p, "", l, nl, NULL))
		fprintf(p->f, "%llu\n", (unsigned long long)v);
}

void prom_real(struct prom *p, const struct prom_label *l, size_t nl, double v)
{
	if (fits(p, 0) && !sample_head(p, "", l, nl, NULL)) {
		put_real(p->f, v);
		fputc('\n', p->f);
	}
}

void prom_one(struct prom *p, const struct prom_family *f, uint64_t v)
{
	if (!prom_family(p, f))
		prom_int(p, PROM_NOLABELS, v);
}

void prom_histogram(struct prom *p, const struct prom_label *l, size_t nl, const double *bounds, size_t nb,
		    const uint64_t *counts, double sum)
{
	uint64_t cum = 0;
	char le[32];
	size_t k;
	if (!fits(p, 1))
		return;
	for (k = 0; k <= nb; k++) {
		cum += counts[k];
		if (k < nb)
			snprintf(le, sizeof le, "%g", bounds[k]);
		if (sample_head(p, "_bucket", l, nl, k < nb ? le : "+Inf"))
			return;
		fprintf(p->f, "%llu\n", (unsigned long long)cum);
	}
	if (sample_head(p, "_sum", l, nl, NULL))
		return;
	put_real(p->f, sum);
	fputc('\n', p->f);
	if (!sample_head(p, "_count", l, nl, NULL))
		fprintf(p->f, "%llu\n", (unsigned long long)cum);
}

size_t prom_bucket(const double *bounds, size_t nb, double v)
{
	size_t k = 0;
	while (k < nb && v > bounds[k])
		k++;
	return k;
}

int prom_finish(struct prom *p, char **text, size_t *len, char *err, size_t errlen)
{
	int e = p->err;
	*text = NULL;
	*len = 0;
	if (ferror(p->f) && !e) { /* a write that failed for memory: the text is cut short */
		e = -ENOMEM;
		snprintf(p->why, sizeof p->why, "out of memory");
	}
	if (fclose(p->f) != 0 && !e) {
		e = -ENOMEM;
		snprintf(p->why, sizeof p->why, "out of memory");
	}
	p->f = NULL;
	if (e) {
		snprintf(err, errlen, "%s", p->why);
	} else {
		*text = p->buf;
		*len = p->len;
		p->buf = NULL;
	}
	prom_free(p);
	return e;
}
