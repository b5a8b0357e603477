/* SPDX-License-Identifier: Apache-2.0 */
/* reflect.c - gRPC server reflection from a serialized FileDescriptorSet.
 *
 * There is no descriptor.proto codegen here: a small wire reader walks
 * the set (varints and length-delimited fields; fixed32/fixed64 skipped;
 * groups, wire types 6 and 7, varints past 64 bits and lengths past the
 * end refused) and indexes, at reflect_new, what the requests name:
 *   FileDescriptorSet       file=1
 *   FileDescriptorProto     name=1 package=2 dependency=3 message_type=4
 *                           enum_type=5 service=6 extension=7
 *   DescriptorProto         name=1 field=2 nested_type=3 enum_type=4
 *                           extension=6 oneof_decl=8
 *   EnumDescriptorProto     name=1 value=2
 *   ServiceDescriptorProto  name=1 method=2
 *   FieldDescriptorProto    name=1 extendee=2 number=3
 *   EnumValueDescriptorProto, MethodDescriptorProto,
 *   OneofDescriptorProto    name=1
 * Symbols are full names as protoc scopes them: "pkg.Msg.Inner",
 * "pkg.Msg.field", "pkg.Msg.oneof", "pkg.Svc.Method", extensions in the
 * scope they are declared in; enum values are siblings of their
 * enum ("pkg.VALUE", "pkg.Msg.VALUE"). Answers hold each file's own bytes,
 * the slice of the set, unchanged. Other fields are skipped unread.
 *
 * A set that names an import it does not hold (protoc without
 * --include_imports), two files of one name or one symbol defined twice
 * is refused: reflection would hand clients descriptors they cannot
 * build. The requests come from the network: they and everything they
 * make us do are bounded. */
#define _GNU_SOURCE 1
#include "reflect_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SET_MAX (64u << 20)   /* bytes of a descriptor set */
#define FILES_MAX 4096
#define DEPS_MAX 65536        /* imports, all files together */
#define SYMS_MAX (1u << 18)
#define ARENA_MAX (32u << 20) /* bytes of names, all together */
#define NAME_MAX_ 1024        /* a full name, a package or a file name */
#define DEPTH_MAX 32          /* nested messages */

/* ---- the wire reader ---- */

static int pb_varint(struct pb *b, uint64_t *v)
{
	uint64_t x = 0;
	unsigned i;
	for (i = 0; i < 10; i++) {
		uint8_t c;
		if (b->p == b->end)
			return -EINVAL;
		c = *b->p++;
		if (i == 9 && c > 1)
			return -EINVAL; /* past 64 bits */
		x |= (uint64_t)(c & 0x7f) << (7 * i);
		if (!(c & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -EINVAL;
}

int reflect_pb_next(struct pb *b, struct pbf *f)
{
	uint64_t tag, n;
	if (b->p == b->end)
		return 0;
	if (pb_varint(b, &tag) || tag >> 3 == 0 || tag >> 3 > (1u << 29) - 1)
		return -EINVAL;
	f->num = (uint32_t)(tag >> 3);
	f->wt = (uint32_t)(tag & 7);
	switch (f->wt) {
	case 0:
		return pb_varint(b, &f->v) ? -EINVAL : 1;
	case 1:
		n = 8;
		break;
	case 2:
		if (pb_varint(b, &n) || n > (uint64_t)(b->end - b->p))
			return -EINVAL;
		f->p = b->p;
		f->len = (size_t)n;
		break;
	case 5:
		n = 4;
		break;
	default: /* groups (3, 4), 6, 7 */
		return -EINVAL;
	}
	if (n > (uint64_t)(b->end - b->p))
		return -EINVAL;
	b->p += n;
	return 1;
}

/* Field 1, a string, of a message: the last one, as protobuf merges. */
static int pb_name(const uint8_t *p, size_t len, const uint8_t **name, size_t *n)
{
	struct pb b = {p, p + len};
	struct pbf f;
	int rc;
	*name = NULL;
	*n = 0;
	while ((rc = reflect_pb_next(&b, &f)) > 0) {
		if (f.num != 1)
			continue;
		if (f.wt != 2)
			return -EINVAL;
		*name = f.p;
		*n = f.len;
	}
	return rc;
}

/* ---- indexing ---- */

struct build {
	struct reflect *r;
	size_t arena_cap, files_cap, deps_cap, syms_cap, exts_cap, svcs_cap;
	char name[NAME_MAX_ + 1]; /* the scope being indexed */
};

/* Room for one more in *arrp, an array that doubles (the pointer moved
 * with memcpy: it is a struct's pointer, not a void *). */
static int grow(void *arrp, size_t *cap, size_t n, size_t size, size_t max)
{
	void *a, *p;
	size_t c;
	if (n < *cap)
		return 0;
	if (n >= max)
		return -EINVAL; /* more than any real set */
	c = *cap ? *cap * 2 : 16;
	if (c > max)
		c = max;
	memcpy(&a, arrp, sizeof a);
	p = realloc(a, c * size);
	if (!p)
		return -ENOMEM;
	memcpy(arrp, &p, sizeof p);
	*cap = c;
	return 0;
}

static int arena_add(struct build *bd, const char *s, size_t n, uint32_t *off)
{
	struct reflect *r = bd->r;
	if (n + 1 > ARENA_MAX - r->arena_len)
		return -EINVAL;
	while (r->arena_len + n + 1 > bd->arena_cap) {
		size_t c = bd->arena_cap ? bd->arena_cap * 2 : 4096;
		char *p = realloc(r->arena, c);
		if (!p)
			return -ENOMEM;
		r->arena = p;
		bd->arena_cap = c;
	}
	memcpy(r->arena + r->arena_len, s, n);
	r->arena[r->arena_len + n] = 0;
	*off = (uint32_t)r->arena_len;
	r->arena_len += n + 1;
	return 0;
}

static int is_ident(const uint8_t *s, size_t n)
{
	size_t i;
	if (n == 0)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return 0;
	return 1;
}

/* A package: identifiers joined by single dots, or nothing. */
static int is_package(const uint8_t *s, size_t n)
{
	size_t i, start = 0;
	if (n == 0)
		return 1;
	for (i = 0; i <= n; i++)
		if (i == n || s[i] == '.') {
			if (!is_ident(s + start, i - start))
				return 0;
			start = i + 1;
		}
	return 1;
}

/* Symbol "scope.name" (bd->name[0..scope) is the scope), left in
 * bd->name[0..*full) as the scope of what it holds. */
static int sym_add(struct build *bd, size_t scope, const uint8_t *name, size_t n, enum sym_kind kind, uint32_t file,
		   size_t *full)
{
	struct reflect *r = bd->r;
	size_t len = scope + (scope ? 1 : 0) + n;
	struct rsym *s;
	uint32_t off;
	int rc;
	if (!is_ident(name, n) || len > NAME_MAX_)
		return -EINVAL;
	if (scope)
		bd->name[scope] = '.';
	memcpy(bd->name + len - n, name, n);
	rc = grow(&r->syms, &bd->syms_cap, r->nsyms, sizeof *r->syms, SYMS_MAX);
	if (!rc)
		rc = arena_add(bd, bd->name, len, &off);
	if (rc)
		return rc;
	s = &r->syms[r->nsyms++];
	s->name = off;
	s->len = (uint32_t)len;
	s->file = file;
	s->kind = (uint8_t)kind;
	if (full)
		*full = len;
	return 0;
}

/* A message that only names itself: a field, a oneof, an enum value, a
 * method. */
static int leaf(struct build *bd, const struct pbf *f, size_t scope, enum sym_kind kind, uint32_t file)
{
	const uint8_t *name;
	size_t n;
	int rc;
	if (f->wt != 2)
		return -EINVAL;
	rc = pb_name(f->p, f->len, &name, &n);
	return rc ? rc : sym_add(bd, scope, name, n, kind, file, NULL);
}

/* An extension: a symbol, and a number of its extendee. */
static int extension(struct build *bd, const struct pbf *ext, size_t scope, uint32_t file)
{
	struct reflect *r = bd->r;
	struct pb b = {ext->p, ext->p + ext->len};
	const uint8_t *extendee = NULL;
	size_t n = 0;
	uint64_t number = 0;
	struct pbf f;
	struct rext *e;
	uint32_t off;
	int rc = leaf(bd, ext, scope, SYM_EXTENSION, file);
	if (rc)
		return rc;
	while ((rc = reflect_pb_next(&b, &f)) > 0) {
		if (f.num == 2) {
			if (f.wt != 2)
				return -EINVAL;
			extendee = f.p;
			n = f.len;
		} else if (f.num == 3) {
			if (f.wt != 0)
				return -EINVAL;
			number = f.v;
		}
	}
	if (rc)
		return rc;
	if (n && extendee[0] == '.') {
		extendee++;
		n--;
	}
	if (!n || n > NAME_MAX_ || !is_package(extendee, n) || number < 1 || number > (1u << 29) - 1)
		return -EINVAL;
	rc = grow(&r->exts, &bd->exts_cap, r->nexts, sizeof *r->exts, SYMS_MAX);
	if (!rc)
		rc = arena_add(bd, (const char *)extendee, n, &off);
	if (rc)
		return rc;
	e = &r->exts[r->nexts++];
	e->extendee = off;
	e->extendee_len = (uint32_t)n;
	e->number = (int32_t)number;
	e->file = file;
	return 0;
}

static int enumeration(struct build *bd, const struct pbf *en, size_t scope, uint32_t file)
{
	struct pb b = {en->p, en->p + en->len};
	const uint8_t *name;
	struct pbf f;
	size_t n;
	int rc;
	if (en->wt != 2)
		return -EINVAL;
	rc = pb_name(en->p, en->len, &name, &n);
	if (!rc)
		rc = sym_add(bd, scope, name, n, SYM_ENUM, file, NULL);
	while (!rc && (rc = reflect_pb_next(&b, &f)) > 0)
		rc = f.num == 2 ? leaf(bd, &f, scope, SYM_ENUM_VALUE, file) : 0; /* values: the enum's siblings */
	return rc;
}

static int message(struct build *bd, const struct pbf *msg, size_t scope, uint32_t file, unsigned depth)
{
	struct pb b = {msg->p, msg->p + msg->len};
	const uint8_t *name;
	struct pbf f;
	size_t n, full = 0;
	int rc;
	if (msg->wt != 2 || depth > DEPTH_MAX)
		return -EINVAL;
	rc = pb_name(msg->p, msg->len, &name, &n);
	if (!rc)
		rc = sym_add(bd, scope, name, n, SYM_MESSAGE, file, &full);
	while (!rc && (rc = reflect_pb_next(&b, &f)) > 0) {
		switch (f.num) {
		case 2:
			rc = leaf(bd, &f, full, SYM_FIELD, file);
			break;
		case 3:
			rc = message(bd, &f, full, file, depth + 1);
			break;
		case 4:
			rc = enumeration(bd, &f, full, file);
			break;
		case 6:
			rc = extension(bd, &f, full, file);
			break;
		case 8:
			rc = leaf(bd, &f, full, SYM_ONEOF, file);
			break;
		default:
			rc = 0;
		}
	}
	return rc;
}

static int service(struct build *bd, const struct pbf *svc, size_t scope, uint32_t file)
{
	struct reflect *r = bd->r;
	struct pb b = {svc->p, svc->p + svc->len};
	const uint8_t *name;
	struct pbf f;
	size_t n, full = 0;
	int rc;
	if (svc->wt != 2)
		return -EINVAL;
	rc = pb_name(svc->p, svc->len, &name, &n);
	if (!rc)
		rc = sym_add(bd, scope, name, n, SYM_SERVICE, file, &full);
	if (!rc)
		rc = grow(&r->services, &bd->svcs_cap, r->nservices, sizeof *r->services, SYMS_MAX);
	if (rc)
		return rc;
	r->services[r->nservices++] = r->syms[r->nsyms - 1].name;
	while ((rc = reflect_pb_next(&b, &f)) > 0)
		if (f.num == 2 && (rc = leaf(bd, &f, full, SYM_METHOD, file)))
			return rc;
	return rc;
}

/* One FileDescriptorProto: its name, package and imports first (they may
 * come in any order), then what it defines. */
static int file_add(struct build *bd, const uint8_t *p, size_t len)
{
	struct reflect *r = bd->r;
	const uint8_t *name = NULL, *pkg = NULL;
	size_t name_len = 0, pkg_len = 0;
	struct pb b = {p, p + len};
	struct rfile *fl;
	struct pbf f;
	uint32_t fi = r->nfiles, dep = r->ndeps, off;
	int rc;

	if ((rc = grow(&r->files, &bd->files_cap, r->nfiles, sizeof *r->files, FILES_MAX)))
		return rc;
	while ((rc = reflect_pb_next(&b, &f)) > 0) {
		if (f.num < 1 || f.num > 3)
			continue;
		if (f.wt != 2)
			return -EINVAL;
		if (f.num == 1) {
			name = f.p;
			name_len = f.len;
		} else if (f.num == 2) {
			pkg = f.p;
			pkg_len = f.len;
		} else {
			if (!f.len || f.len > NAME_MAX_ || memchr(f.p, 0, f.len))
				return -EINVAL;
			rc = grow(&r->deps, &bd->deps_cap, r->ndeps, sizeof *r->deps, DEPS_MAX);
			if (!rc)
				rc = arena_add(bd, (const char *)f.p, f.len, &r->deps[r->ndeps]);
			if (rc)
				return rc;
			r->ndeps++; /* a name now, an index once every file is in */
		}
	}
	if (rc)
		return rc;
	if (!name_len || name_len > NAME_MAX_ || memchr(name, 0, name_len) || pkg_len > NAME_MAX_ ||
	    !is_package(pkg, pkg_len))
		return -EINVAL;
	if ((rc = arena_add(bd, (const char *)name, name_len, &off)))
		return rc;
	fl = &r->files[r->nfiles++];
	fl->p = p;
	fl->len = len;
	fl->name = off;
	fl->name_len = (uint32_t)name_len;
	fl->dep = dep;
	fl->ndeps = r->ndeps - dep;

	if (pkg_len)
		memcpy(bd->name, pkg, pkg_len);
	b.p = p;
	while ((rc = reflect_pb_next(&b, &f)) > 0) {
		switch (f.num) {
		case 4:
			rc = message(bd, &f, pkg_len, fi, 1);
			break;
		case 5:
			rc = enumeration(bd, &f, pkg_len, fi);
			break;
		case 6:
			rc = service(bd, &f, pkg_len, fi);
			break;
		case 7:
			rc = extension(bd, &f, pkg_len, fi);
			break;
		default:
			rc = 0;
		}
		if (rc)
			return rc;
	}
	return rc;
}

int reflect_name_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);
	return c ? c : (alen > blen) - (alen < blen);
}

static int sym_sort(const void *a, const void *b, void *arena)
{
	const struct rsym *x = a, *y = b;
	return reflect_name_cmp((const char *)arena + x->name, x->len, (const char *)arena + y->name, y->len);
}

static int file_sort(const void *a, const void *b, void *refl)
{
	const struct reflect *r = refl;
	const struct rfile *x = &r->files[*(const uint32_t *)a], *y = &r->files[*(const uint32_t *)b];
	return reflect_name_cmp(r->arena + x->name, x->name_len, r->arena + y->name, y->name_len);
}

int reflect_file_find(const struct reflect *r, const char *name, size_t n)
{
	size_t lo = 0, hi = r->nfiles;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct rfile *f = &r->files[r->by_name[mid]];
		int c = reflect_name_cmp(r->arena + f->name, f->name_len, name, n);
		if (!c)
			return (int)r->by_name[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

const struct rsym *reflect_sym_find(const struct reflect *r, const char *name, size_t n)
{
	size_t lo = 0, hi = r->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct rsym *s = &r->syms[mid];
		int c = reflect_name_cmp(r->arena + s->name, s->len, name, n);
		if (!c)
			return s;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Sort the files and symbols; duplicates and missing imports refused. */
static int finish(struct reflect *r)
{
	uint32_t i;
	if (r->nfiles) {
		r->by_name = malloc(r->nfiles * sizeof *r->by_name);
		if (!r->by_name)
			return -ENOMEM;
	}
	for (i = 0; i < r->nfiles; i++)
		r->by_name[i] = i;
	if (r->nfiles)
		qsort_r(r->by_name, r->nfiles, sizeof *r->by_name, file_sort, r);
	if (r->nsyms)
		qsort_r(r->syms, r->nsyms, sizeof *r->syms, sym_sort, r->arena);
	for (i = 1; i < r->nfiles; i++) {
		const struct rfile *a = &r->files[r->by_name[i - 1]], *b = &r->files[r->by_name[i]];
		if (!reflect_name_cmp(r->arena + a->name, a->name_len, r->arena + b->name, b->name_len))
			return -EINVAL;
	}
	for (i = 1; i < r->nsyms; i++) {
		const struct rsym *a = &r->syms[i - 1], *b = &r->syms[i];
		if (!reflect_name_cmp(r->arena + a->name, a->len, r->arena + b->name, b->len))
			return -EINVAL;
	}
	for (i = 0; i < r->ndeps; i++) {
		const char *name = r->arena + r->deps[i];
		int f = reflect_file_find(r, name, strlen(name));
		if (f < 0)
			return -EINVAL;
		r->deps[i] = (uint32_t)f;
	}
	return 0;
}

void reflect_free(struct reflect *r)
{
	if (!r)
		return;
	free(r->files);
	free(r->by_name);
	free(r->deps);
	free(r->syms);
	free(r->exts);
	free(r->services);
	free(r->arena);
	free(r);
}

int reflect_new(struct reflect **out, const uint8_t *fdset, size_t len)
{
	struct build *bd;
	struct pb b = {NULL, NULL};
	struct pbf f;
	int rc;

	*out = NULL;
	if ((!fdset && len) || len > SET_MAX)
		return -EINVAL;
	bd = calloc(1, sizeof *bd);
	if (!bd)
		return -ENOMEM;
	bd->r = calloc(1, sizeof *bd->r);
	if (!bd->r) {
		free(bd);
		return -ENOMEM;
	}
	if (fdset) {
		b.p = fdset;
		b.end = fdset + len;
	}
	while ((rc = reflect_pb_next(&b, &f)) > 0) {
		if (f.num != 1)
			continue;
		rc = f.wt == 2 ? file_add(bd, f.p, f.len) : -EINVAL;
		if (rc)
			break;
	}
	if (!rc)
		rc = finish(bd->r);
	if (rc)
		reflect_free(bd->r);
	else
		*out = bd->r;
	free(bd);
	return rc;
}
