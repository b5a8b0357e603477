/* SPDX-License-Identifier: Apache-2.0 */
/* labelsel.h - Kubernetes label selectors, in the syntax `kubectl -l`
 * takes (k8s.io/apimachinery/pkg/labels.Parse): requirements joined by
 * ',', all of which must hold:
 *   key  !key  key=v  key==v  key!=v  key in (a,b)  key notin (a,b)
 *   key>N  key<N
 * A key is a qualified name (an optional DNS subdomain prefix and '/',
 * then a name of 1 to 63 of [A-Za-z0-9-_.], alphanumeric at both ends); a
 * value is empty or such a name; N a whole number. `key!=v` and `notin`
 * hold for a pod without the key; `>` and `<` need it, with a whole
 * number. The empty selector holds for every pod.
 *
 * A selector comes from a client or a config file: labelsel_check
 * refuses what does not parse, saying why, and gives the canonical form
 * (requirements sorted by key, values sorted and unique, '==' written '=',
 * N in decimal), which compares equal for equal selectors. Bounded: at
 * most LABELSEL_MAX bytes, LABELSEL_REQS_MAX requirements and
 * LABELSEL_VALUES_MAX values of in and notin sets in all. No allocation. */
#ifndef PROCCTL_NODE_LABELSEL_H
#define PROCCTL_NODE_LABELSEL_H

#include <stddef.h>

#define LABELSEL_MAX 1024
#define LABELSEL_REQS_MAX 32
#define LABELSEL_VALUES_MAX 64

/* One label of a pod: key and value, NUL-terminated. */
struct label {
	const char *key, *value;
};

/* Check the len bytes at sel (NUL bytes refused). 0, the canonical form
 * in canon (at most LABELSEL_MAX + 1 bytes with its NUL: give that many);
 * or -EINVAL and why in err, kubectl's way ("found 'x', expected: ...";
 * "invalid label key \"K\": ..."), with bytes outside printable ASCII as
 * \xNN. */
int labelsel_check(const char *sel, size_t len, char *canon, size_t canonlen, char *err, size_t errlen);

/* 1 when the n bytes at k are a label key (a qualified name: [PREFIX/]NAME),
 * or at v a label value (empty, or 1 to 63 of [-A-Za-z0-9_.],
 * alphanumeric at both ends); else 0. */
int labelsel_key_valid(const char *k, size_t n);
int labelsel_value_valid(const char *v, size_t n);
/* 1 when the n bytes at s are a DNS-1123 subdomain (dot-separated labels
 * of [a-z0-9-], alphanumeric at both ends, at most 253 in all: a label
 * key's prefix, a pod's name); else 0. */
int labelsel_subdomain_valid(const char *s, size_t n);

/* 1 when the n labels satisfy sel, a selector labelsel_check accepted
 * (the canonical form, or what it was made from); else 0 (also for a
 * selector it would refuse). */
int labelsel_match(const char *sel, const struct label *labels, size_t n);

#endif
