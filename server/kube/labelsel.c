/* SPDX-License-Identifier: Apache-2.0 */
/* labelsel.c - Kubernetes label selectors (labelsel.h): one parser, for
 * labelsel_check (then the canonical form) and labelsel_match. */
#define _GNU_SOURCE 1
#include "labelsel.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/log.h"

enum tok { T_END, T_IDENT, T_IN, T_NOTIN, T_NOT, T_NE, T_EQ, T_EQEQ, T_GT, T_LT, T_LPAREN, T_RPAREN, T_COMMA };
enum op { OP_EXISTS, OP_NOT_EXISTS, OP_EQ, OP_NE, OP_IN, OP_NOTIN, OP_GT, OP_LT };

struct span {
	const char *p;
	size_t n;
};

struct req {
	enum op op;
	struct span key;
	size_t v0, nv; /* its values: vals[v0 .. v0 + nv) */
	long long num; /* OP_GT, OP_LT */
};

struct sel {
	struct req r[LABELSEL_REQS_MAX];
	size_t nr;
	struct span vals[LABELSEL_VALUES_MAX];
	size_t nvals;
};

struct lexer {
	const char *s, *end;
	enum tok t;
	struct span tok; /* t's text */
	char *err;
	size_t errlen;
};

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int is_special(char c)
{
	return c == '=' || c == '!' || c == '(' || c == ')' || c == '<' || c == '>' || c == ',';
}

static int span_is(struct span s, const char *lit)
{
	return s.n == strlen(lit) && !memcmp(s.p, lit, s.n);
}

/* Where a key or value may stand, "in" and "notin" are words like any. */
static int is_word(enum tok t)
{
	return t == T_IDENT || t == T_IN || t == T_NOTIN;
}

static void next(struct lexer *l)
{
	const char *p = l->s;
	size_t n = 1;
	while (p < l->end && is_space(*p))
		p++;
	l->tok.p = p;
	if (p == l->end) {
		l->tok.n = 0;
		l->t = T_END;
		return;
	}
	switch (*p) {
	case '!':
		l->t = p + 1 < l->end && p[1] == '=' ? (n = 2, T_NE) : T_NOT;
		break;
	case '=':
		l->t = p + 1 < l->end && p[1] == '=' ? (n = 2, T_EQEQ) : T_EQ;
		break;
	case '>': l->t = T_GT; break;
	case '<': l->t = T_LT; break;
	case '(': l->t = T_LPAREN; break;
	case ')': l->t = T_RPAREN; break;
	case ',': l->t = T_COMMA; break;
	default:
		while (p + n < l->end && !is_space(p[n]) && !is_special(p[n]))
			n++;
		l->t = T_IDENT;
		break;
	}
	l->tok.n = n;
	l->s = p + n;
	if (l->t == T_IDENT && span_is(l->tok, "in"))
		l->t = T_IN;
	else if (l->t == T_IDENT && span_is(l->tok, "notin"))
		l->t = T_NOTIN;
}

/* s, printable as a log value is (node_log_quote), cut at 64 bytes
 * ("..."). */
static const char *shown(char *buf, size_t len, struct span s)
{
	char raw[65];
	size_t n = s.n < sizeof raw - 1 ? s.n : sizeof raw - 1;
	memcpy(raw, s.p, n);
	raw[n] = 0;
	node_log_quote(buf, len - 3, raw);
	if (n < s.n)
		strcat(buf, "...");
	return buf;
}

static int fail(struct lexer *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct lexer *l, const char *fmt, ...)
{
	va_list ap;
	if (l->err && l->errlen) {
		va_start(ap, fmt);
		vsnprintf(l->err, l->errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* "found 'TOKEN', expected: WHAT". */
static int unexpected(struct lexer *l, const char *prefix, const char *what)
{
	char q[300];
	return fail(l, "%sfound '%s', expected: %s", prefix, shown(q, sizeof q, l->tok), what);
}

static int alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], at most 63: a label value
 * (empty too) and a key's name part. */
static int name_ok(struct span s)
{
	size_t i;
	if (s.n > 63 || (s.n && (!alnum(s.p[0]) || !alnum(s.p[s.n - 1]))))
		return 0;
	for (i = 0; i < s.n; i++)
		if (!alnum(s.p[i]) && s.p[i] != '-' && s.p[i] != '_' && s.p[i] != '.')
			return 0;
	return 1;
}

/* A DNS-1123 subdomain: dot-separated labels of [a-z0-9-], alphanumeric
 * at both ends, at most 253 in all. */
static int subdomain_ok(struct span s)
{
	size_t i;
	if (!s.n || s.n > 253)
		return 0;
	for (i = 0; i < s.n; i++) {
		char c = s.p[i], prev = i ? s.p[i - 1] : '.', after = i + 1 < s.n ? s.p[i + 1] : '.';
		int lower = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (c == '.' ? prev == '.' || after == '.' : c == '-' ? prev == '.' || after == '.' : !lower)
			return 0;
	}
	return 1;
}

static int key_check(struct lexer *l, struct span k)
{
	const char *slash = memchr(k.p, '/', k.n);
	struct span name = k;
	char q[300];
	if (slash) {
		struct span prefix = {k.p, (size_t)(slash - k.p)};
		name.p = slash + 1;
		name.n = k.n - prefix.n - 1;
		if (memchr(name.p, '/', name.n))
			return fail(l, "invalid label key \"%s\": a key has at most one '/' (PREFIX/NAME)", shown(q, sizeof q, k));
		if (!subdomain_ok(prefix))
			return fail(l, "invalid label key \"%s\": its prefix must be a DNS subdomain (lowercase "
				       "[a-z0-9.-], alphanumeric at each end, at most 253)", shown(q, sizeof q, k));
	}
	if (!name.n || !name_ok(name))
		return fail(l, "invalid label key \"%s\": its name must be 1 to 63 of [-A-Za-z0-9_.], alphanumeric at "
			       "both ends", shown(q, sizeof q, k));
	return 0;
}

int labelsel_key_valid(const char *k, size_t n)
{
	struct lexer quiet = {k, k + n, T_END, {k, 0}, NULL, 0};
	return key_check(&quiet, (struct span){k, n}) == 0;
}

int labelsel_value_valid(const char *v, size_t n)
{
	return name_ok((struct span){v, n});
}

int labelsel_subdomain_valid(const char *s, size_t n)
{
	return subdomain_ok((struct span){s, n});
}

static int value_add(struct lexer *l, struct sel *s, struct req *r, struct span v)
{
	char q[300], qk[300];
	if (!name_ok(v))
		return fail(l, "invalid label value \"%s\" for key \"%s\": at most 63 of [-A-Za-z0-9_.], alphanumeric "
			       "at both ends, or empty", shown(q, sizeof q, v), shown(qk, sizeof qk, r->key));
	if (s->nvals == LABELSEL_VALUES_MAX)
		return fail(l, "more than %d values in all", LABELSEL_VALUES_MAX);
	s->vals[s->nvals++] = v;
	r->nv++;
	return 0;
}

/* The whole number of > and <: digits (a label value starts with an
 * alphanumeric, so no sign), in range. */
static int number(struct lexer *l, struct req *r, struct span v)
{
	char buf[72], q[300];
	size_t i;
	for (i = 0; i < v.n; i++)
		if (v.p[i] < '0' || v.p[i] > '9')
			break;
	if (!v.n || i < v.n || v.n >= sizeof buf)
		return fail(l, "for '>' and '<' the value must be a whole number, not \"%s\"", shown(q, sizeof q, v));
	memcpy(buf, v.p, v.n);
	buf[v.n] = 0;
	errno = 0;
	r->num = strtoll(buf, NULL, 10);
	if (errno)
		return fail(l, "for '>' and '<' the value must be a whole number, not \"%s\" (out of range)", buf);
	return 0;
}

/* key op value, key in|notin (list): l at the token after the key. */
static int operation(struct lexer *l, struct sel *s, struct req *r)
{
	static const enum op ops[] = {[T_EQ] = OP_EQ, [T_EQEQ] = OP_EQ, [T_NE] = OP_NE, [T_GT] = OP_GT, [T_LT] = OP_LT,
				      [T_IN] = OP_IN, [T_NOTIN] = OP_NOTIN};
	struct span v;
	int e;
	if (l->t == T_END || l->t == T_COMMA) {
		r->op = OP_EXISTS;
		return 0;
	}
	if (l->t != T_EQ && l->t != T_EQEQ && l->t != T_NE && l->t != T_GT && l->t != T_LT && l->t != T_IN &&
	    l->t != T_NOTIN)
		return unexpected(l, "unable to parse requirement: ", "in, notin, =, ==, !=, >, <");
	r->op = ops[l->t];
	next(l);
	if (r->op != OP_IN && r->op != OP_NOTIN) {
		v = (struct span){l->tok.p, 0};
		if (is_word(l->t)) {
			v = l->tok;
			next(l);
		} else if (l->t != T_END && l->t != T_COMMA) {
			return unexpected(l, "unable to parse requirement: ", "identifier");
		}
		if ((e = value_add(l, s, r, v)) < 0)
			return e;
		return r->op == OP_GT || r->op == OP_LT ? number(l, r, v) : 0;
	}
	if (l->t != T_LPAREN)
		return unexpected(l, "", "'('");
	next(l);
	for (;;) {
		if (is_word(l->t)) {
			v = l->tok;
			next(l);
		} else if (l->t == T_COMMA || l->t == T_RPAREN) {
			v = (struct span){l->tok.p, 0}; /* "(a,)": a and "" */
		} else {
			return unexpected(l, "", "',', ')' or identifier");
		}
		if ((e = value_add(l, s, r, v)) < 0)
			return e;
		if (l->t == T_RPAREN)
			break;
		if (l->t != T_COMMA)
			return unexpected(l, "", "',' or ')'");
		next(l);
	}
	next(l);
	return 0;
}

static int requirement(struct lexer *l, struct sel *s)
{
	struct req *r;
	int e;
	if (s->nr == LABELSEL_REQS_MAX)
		return fail(l, "more than %d requirements", LABELSEL_REQS_MAX);
	r = &s->r[s->nr];
	memset(r, 0, sizeof *r);
	r->v0 = s->nvals;
	if (l->t == T_NOT) {
		next(l);
		if (!is_word(l->t))
			return unexpected(l, "unable to parse requirement: ", "identifier");
		r->op = OP_NOT_EXISTS;
	}
	r->key = l->tok;
	if ((e = key_check(l, r->key)) < 0)
		return e;
	next(l);
	if (r->op != OP_NOT_EXISTS && (e = operation(l, s, r)) < 0)
		return e;
	s->nr++;
	return 0;
}

static int parse(const char *sel, size_t len, struct sel *s, char *err, size_t errlen)
{
	struct lexer l = {sel, sel + len, T_END, {sel, 0}, err, errlen};
	int e;
	s->nr = s->nvals = 0;
	if (len > LABELSEL_MAX)
		return fail(&l, "longer than %d bytes", LABELSEL_MAX);
	if (memchr(sel, 0, len))
		return fail(&l, "a NUL byte");
	next(&l);
	if (l.t == T_END)
		return 0;
	if (!is_word(l.t) && l.t != T_NOT)
		return unexpected(&l, "", "!, identifier, or 'end of string'");
	for (;;) {
		if ((e = requirement(&l, s)) < 0)
			return e;
		if (l.t == T_END)
			return 0;
		if (l.t != T_COMMA)
			return unexpected(&l, "", "',' or 'end of string'");
		next(&l);
		if (!is_word(l.t) && l.t != T_NOT)
			return unexpected(&l, "", "identifier after ','");
	}
}

static int span_cmp(struct span a, struct span b)
{
	int c = memcmp(a.p, b.p, a.n < b.n ? a.n : b.n);
	return c ? c : (a.n > b.n) - (a.n < b.n);
}

static int req_cmp(const struct sel *s, const struct req *x, const struct req *y)
{
	size_t i;
	int c = span_cmp(x->key, y->key);
	if (c || x->op != y->op)
		return c ? c : (int)x->op - (int)y->op;
	if (x->num != y->num)
		return x->num < y->num ? -1 : 1;
	for (i = 0; i < x->nv && i < y->nv; i++)
		if ((c = span_cmp(s->vals[x->v0 + i], s->vals[y->v0 + i])))
			return c;
	return (x->nv > y->nv) - (x->nv < y->nv);
}

/* Each set sorted and unique, then the requirements by key (insertion
 * sorts: a few dozen at most, and no state outside the call). */
static void canonical_order(struct sel *s)
{
	size_t i, j, k;
	for (i = 0; i < s->nr; i++) {
		struct req *r = &s->r[i];
		struct span *v = &s->vals[r->v0];
		for (j = 1; j < r->nv; j++)
			for (k = j; k && span_cmp(v[k - 1], v[k]) > 0; k--) {
				struct span t = v[k];
				v[k] = v[k - 1];
				v[k - 1] = t;
			}
		for (j = k = 0; j < r->nv; j++)
			if (!k || span_cmp(v[k - 1], v[j]))
				v[k++] = v[j];
		r->nv = k;
	}
	for (j = 1; j < s->nr; j++)
		for (k = j; k && req_cmp(s, &s->r[k - 1], &s->r[k]) > 0; k--) {
			struct req t = s->r[k];
			s->r[k] = s->r[k - 1];
			s->r[k - 1] = t;
		}
}

int labelsel_check(const char *sel, size_t len, char *canon, size_t canonlen, char *err, size_t errlen)
{
	static const char *const opname[] = {[OP_EQ] = "=", [OP_NE] = "!=", [OP_GT] = ">", [OP_LT] = "<",
					     [OP_IN] = " in (", [OP_NOTIN] = " notin ("};
	struct sel s;
	size_t i, j, o = 0;
	int e;
	if ((e = parse(sel, len, &s, err, errlen)) < 0)
		return e;
	canonical_order(&s);
	for (i = 0; i < s.nr && o < canonlen; i++) {
		const struct req *r = &s.r[i];
		o += (size_t)snprintf(canon + o, canonlen - o, "%s%s%.*s", i ? "," : "", r->op == OP_NOT_EXISTS ? "!" : "",
				      (int)r->key.n, r->key.p);
		if (o >= canonlen || r->op == OP_EXISTS || r->op == OP_NOT_EXISTS)
			continue;
		o += (size_t)snprintf(canon + o, canonlen - o, "%s", opname[r->op]);
		if (r->op == OP_GT || r->op == OP_LT)
			o += o < canonlen ? (size_t)snprintf(canon + o, canonlen - o, "%lld", r->num) : 0;
		for (j = 0; r->op != OP_GT && r->op != OP_LT && j < r->nv && o < canonlen; j++)
			o += (size_t)snprintf(canon + o, canonlen - o, "%s%.*s", j ? "," : "", (int)s.vals[r->v0 + j].n,
					      s.vals[r->v0 + j].p);
		if ((r->op == OP_IN || r->op == OP_NOTIN) && o < canonlen)
			o += (size_t)snprintf(canon + o, canonlen - o, ")");
	}
	if (canonlen)
		canon[o < canonlen ? o : canonlen - 1] = 0;
	if (o >= canonlen || o > LABELSEL_MAX) {
		if (err && errlen)
			snprintf(err, errlen, "longer than %d bytes written out", LABELSEL_MAX);
		return -EINVAL;
	}
	return 0;
}

/* A label's value as > and < read it: a whole number, signed. */
static int label_number(const char *v, long long *out)
{
	char *end;
	if (!((v[0] >= '0' && v[0] <= '9') || ((v[0] == '-' || v[0] == '+') && v[1] >= '0' && v[1] <= '9')))
		return 0;
	errno = 0;
	*out = strtoll(v, &end, 10);
	return !*end && !errno;
}

static int holds(const struct sel *s, const struct req *r, const struct label *labels, size_t n)
{
	const char *value = NULL;
	long long num;
	size_t i, in = 0;
	for (i = 0; i < n && !value; i++)
		if (strlen(labels[i].key) == r->key.n && !memcmp(labels[i].key, r->key.p, r->key.n))
			value = labels[i].value;
	for (i = 0; value && i < r->nv; i++)
		in |= strlen(value) == s->vals[r->v0 + i].n && !memcmp(value, s->vals[r->v0 + i].p, s->vals[r->v0 + i].n);
	switch (r->op) {
	case OP_EXISTS: return value != NULL;
	case OP_NOT_EXISTS: return value == NULL;
	case OP_EQ:
	case OP_IN: return value && in;
	case OP_NE:
	case OP_NOTIN: return !value || !in;
	case OP_GT: return value && label_number(value, &num) && num > r->num;
	case OP_LT: return value && label_number(value, &num) && num < r->num;
	}
	return 0;
}

int labelsel_match(const char *sel, const struct label *labels, size_t n)
{
	struct sel s;
	size_t i;
	if (parse(sel, strlen(sel), &s, NULL, 0) < 0)
		return 0;
	for (i = 0; i < s.nr; i++)
		if (!holds(&s, &s.r[i], labels, n))
			return 0;
	return 1;
}
