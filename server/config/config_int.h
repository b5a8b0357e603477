/* SPDX-License-Identifier: Apache-2.0 */
/* config_int.h - what config.c (the file and its sections),
 * config_keys.c (the keys) and config_values.c (the values: numbers,
 * durations, lists, addresses, ids) share. Internal to procctl-node's
 * config. */
#ifndef PROCCTL_CONFIG_INT_H
#define PROCCTL_CONFIG_INT_H

#include <stddef.h>
#include <stdint.h>

#define MS 1000000ull
#define LINE_MAX_ 4096

enum src { SRC_DEFAULT, SRC_FILE, SRC_FLAG };

/* Where a value came from, and the error buffer: what one key's setter
 * needs besides the value. */
struct where {
	enum src src;
	char *err;
	size_t errlen;
	const char *name; /* "FILE:LINE: KEY" or "--flag" */
};

/* The key tables, one a section. */
enum keyset { KEYS_GLOBAL, KEYS_ARBITER, KEYS_DESIRED };
/* Each key's default of set s into obj (the section's struct). */
void cfg_defaults(enum keyset s, void *obj);
/* key = v into obj, by set s's table (section: "an [arbiter]" and the
 * like, for the error; NULL for the global keys): 0, or -EINVAL. */
int cfg_set_key(enum keyset s, const char *section, void *obj, const struct where *w, const char *key, const char *v);

/* Say what is wrong with w's value: -EINVAL, err set to "NAME: what". */
int cfg_fail(const struct where *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* v into dst (cap bytes), or too long: -EINVAL. */
int cfg_copy(const struct where *w, char *dst, size_t cap, const char *v);
int cfg_boolean(const struct where *w, const char *v, int *out);
/* Milliseconds in [lo_ns, hi_ns] (given in ns), into *out_ns. */
int cfg_millis(const struct where *w, const char *v, uint64_t lo_ns, uint64_t hi_ns, uint64_t *out_ns);
int cfg_u32(const struct where *w, const char *v, uint32_t lo, uint32_t hi, uint32_t *out);
/* HOST:PORT (or unix:/PATH for gRPC), PORT 0 (the kernel picks) to 65535: 0, or -EINVAL. */
int cfg_listen_addr(const struct where *w, const char *v);
/* s without its leading and trailing blanks (in place). */
char *cfg_trim(char *s);
/* fn(w, arg, item) for each comma-separated item of v (an empty one is an error). */
int cfg_each_item(const struct where *w, const char *v, int (*fn)(const struct where *, void *, const char *),
		  void *arg);
/* each_item's: a consumer name into a node_cfg; a resource id into an arbiter's. */
int cfg_add_consumer(const struct where *w, void *arg, const char *item);
int cfg_add_resource(const struct where *w, void *arg, const char *item);

#endif
