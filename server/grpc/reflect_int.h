/* SPDX-License-Identifier: Apache-2.0 */
/* reflect_int.h - what reflect.c (the descriptor set's index) and
 * reflect_answer.c (the answers) share: the index, the wire reader, the
 * lookups. */
#ifndef PROCCTL_NODE_REFLECT_INT_H
#define PROCCTL_NODE_REFLECT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "reflect.h"

enum sym_kind { SYM_MESSAGE, SYM_FIELD, SYM_ONEOF, SYM_ENUM, SYM_ENUM_VALUE, SYM_SERVICE, SYM_METHOD, SYM_EXTENSION };

/* Names are offsets into the arena, which grows while indexing. */
struct rfile {
	const uint8_t *p; /* the file's bytes in the set */
	size_t len;
	uint32_t name, name_len;
	uint32_t dep, ndeps; /* its imports: deps[dep..dep+ndeps), file indices */
};

struct rsym {
	uint32_t name, len;
	uint32_t file;
	uint8_t kind;
};

struct rext {
	uint32_t extendee, extendee_len; /* full name, no leading '.' */
	int32_t number;
	uint32_t file;
};

struct reflect {
	struct rfile *files;
	uint32_t nfiles;
	uint32_t *by_name; /* file indices sorted by name */
	uint32_t *deps;
	uint32_t ndeps;
	struct rsym *syms; /* sorted by name */
	uint32_t nsyms;
	struct rext *exts;
	uint32_t nexts;
	uint32_t *services; /* arena offsets of their full names, in set order */
	uint32_t nservices;
	char *arena;
	size_t arena_len;
};

/* ---- the wire reader (reflect.c) ---- */

struct pb {
	const uint8_t *p, *end;
};

struct pbf {
	uint32_t num, wt;
	uint64_t v;       /* wire type 0 */
	const uint8_t *p; /* wire type 2 */
	size_t len;
};

/* The next field: 1, 0 at the end, -EINVAL. */
int reflect_pb_next(struct pb *b, struct pbf *f);

/* ---- lookups (reflect.c) ---- */

int reflect_name_cmp(const char *a, size_t alen, const char *b, size_t blen);
/* The index of the file named name, or -1. */
int reflect_file_find(const struct reflect *r, const char *name, size_t n);
/* The symbol of that full name (no leading '.'), or NULL. */
const struct rsym *reflect_sym_find(const struct reflect *r, const char *name, size_t n);

#endif
