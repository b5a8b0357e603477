/* SPDX-License-Identifier: Apache-2.0 */
/* config.c - procctl-node's configuration file: its lines and sections
 * (each key's value through config_keys.c's table), and what a section
 * must have once it has ended.
 *
 * The file: one "key = value" a line; blank lines and lines starting with
 * '#' are skipped; "[arbiter NAME]" starts the settings of one arbiter,
 * "[desired NAME]" one desired config. A key given twice in one section
 * is an error, except grpc_listen, which adds a listener. Durations carry
 * their unit in the key (_ms), lists are comma-separated, booleans are
 * true or false. */
#define _GNU_SOURCE 1
#include "config.h"
#include "config_int.h"
#include "desired/desired.h"
#include "kube/labelsel.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "procctl_agent.h"

#define FILE_MAX (1 << 20)

char *node_cfg_bound_addr(const char *addr, unsigned port, char *buf, size_t len)
{
	const char *colon = strrchr(addr, ':');
	snprintf(buf, len, "%.*s:%u", colon ? (int)(colon - addr) : (int)strlen(addr), addr, port);
	return buf;
}

int node_cfg_socket_gid(const struct node_cfg *c, gid_t *gid, char *err, size_t errlen)
{
	const char *g = c->socket_group;
	struct group gr, *found = NULL;
	size_t len = 16384;
	char *buf = NULL, *more;
	int r;
	*gid = (gid_t)-1;
	if (!g[0])
		return 0;
	if (!g[strspn(g, "0123456789")]) {
		*gid = (gid_t)strtoul(g, NULL, 10);
		return 0;
	}
	/* A directory's group (LDAP, sssd) may list thousands of members:
	 * the buffer grows until its entry fits, to 16 MiB. */
	do {
		if (!(more = realloc(buf, len))) {
			r = ENOMEM;
			break;
		}
		buf = more;
		r = getgrnam_r(g, &gr, buf, len, &found);
		len *= 2;
	} while (r == ERANGE && len <= (16u << 20));
	if (!r && found)
		*gid = gr.gr_gid;
	free(buf);
	if (r || !found) {
		snprintf(err, errlen, "socket_group %s: %s", g, r ? strerror(r) : "no such group");
		return r ? -r : -ENOENT;
	}
	return 0;
}

/* What a section must have, once it has ended (at is "FILE:LINE" of its
 * header): 0, or -EINVAL. An arbiter's resources get its kind then. */
static int arbiter_done(struct node_cfg *c, struct node_arbiter_cfg *a, const char *at, char *err, size_t errlen)
{
	size_t i;
	if (!a)
		return 0;
	if (!a->kind) {
		snprintf(err, errlen, "%s: [arbiter %s]: kind: missing (the kind's number, as processes report it)", at,
			 a->name);
		return -EINVAL;
	}
	if (!a->consumer[0]) {
		snprintf(err, errlen, "%s: [arbiter %s]: consumer: missing (whose processes it grants to)", at, a->name);
		return -EINVAL;
	}
	for (i = 0; &c->arbiters[i] != a; i++)
		if (c->arbiters[i].kind == a->kind) {
			snprintf(err, errlen, "%s: [arbiter %s]: kind %u is [arbiter %s]'s already", at, a->name, a->kind,
				 c->arbiters[i].name);
			return -EINVAL;
		}
	if (admission_listed(&a->admit) && !a->admit.deny) {
		snprintf(err, errlen, "%s: [arbiter %s]: admit_ lists take effect with admit_default = deny", at, a->name);
		return -EINVAL;
	}
	if (a->admit.deny && !admission_listed(&a->admit)) {
		snprintf(err, errlen, "%s: [arbiter %s]: admit_default = deny with no admit_uids, admit_gids, admit_pods "
			 "or admit_cgroups admits nobody: name who may hold it", at, a->name);
		return -EINVAL;
	}
	for (i = 0; i < a->nresources; i++)
		a->resources[i].kind = a->kind;
	return 0;
}

static int desired_done(const struct node_cfg *c, struct node_desired_cfg *d, const char *at, char *err,
			size_t errlen)
{
	struct selector k;
	struct podsel ps;
	char perr[400];
	const char *why = NULL;
	size_t i;
	if (!d)
		return 0;
	if (!d->sel.consumer[0]) {
		snprintf(err, errlen, "%s: [desired %s]: consumer: required", at, d->name);
		return -EINVAL;
	}
	if (!d->has_data) {
		snprintf(err, errlen, "%s: [desired %s]: data or data_base64: missing", at, d->name);
		return -EINVAL;
	}
	if (selector_from(&k, 0, d->sel.consumer, d->sel.version, d->sel.pod_uid, d->sel.container_id, &why) < 0 ||
	    desired_check(&k, &why) < 0) {
		snprintf(err, errlen, "%s: [desired %s]: %s", at, d->name, why ? why : "a bad selector");
		return -EINVAL;
	}
	memcpy(d->sel.pod_uid, k.pod_uid, sizeof k.pod_uid); /* as the API writes it */
	if (podsel_from(&ps, d->pod.ns, d->pod.labels, perr, sizeof perr) < 0) { /* the text, kept canonical */
		snprintf(err, errlen, "%s: [desired %s]: %s", at, d->name,
			 perr + (strncmp(perr, "selector.", 9) ? 0 : 9)); /* the key's name, as the file has it */
		return -EINVAL;
	}
	d->pod = ps;
	for (i = 0; &c->desired[i] != d; i++)
		if (desired_conflict(&c->desired[i].sel, &c->desired[i].pod, &d->sel, &d->pod)) {
			int same = selector_same(&c->desired[i].sel, &d->sel) && podsel_same(&c->desired[i].pod, &d->pod);
			snprintf(err, errlen,
				 "%s: [desired %s]: %s [desired %s] (one process would match both, at the same precedence)",
				 at, d->name, same ? "the same selector as" : "overlaps", c->desired[i].name);
			return -EINVAL;
		}
	return 0;
}

static int section_done(struct node_cfg *c, struct node_arbiter_cfg *a, struct node_desired_cfg *d,
			const char *at, char *err, size_t errlen)
{
	int r = arbiter_done(c, a, at, err, errlen);
	return r ? r : desired_done(c, d, at, err, errlen);
}

/* Where node_cfg_parse is in a file. */
struct parse {
	struct node_cfg *c;
	struct node_arbiter_cfg *arb; /* the section being read, if any */
	struct node_desired_cfg *des;
	char section_at[NODE_PATH_MAX + 32];
	char seen[64][40];            /* keys given in this section */
	size_t nseen;
};

static int desired_section(struct parse *ps, const struct where *w, const char *name)
{
	struct node_cfg *c = ps->c;
	size_t i;
	if (procctl_name_valid(name, PROCCTL_CONSUMER_MAX) < 0)
		return cfg_fail(w, "'%s' is not a name for a desired config ([a-z0-9_.-], 1 to %u)", name, PROCCTL_CONSUMER_MAX);
	for (i = 0; i < c->ndesired; i++)
		if (!strcmp(c->desired[i].name, name))
			return cfg_fail(w, "[desired %s] twice", name);
	if (c->ndesired == NODE_DESIRED_MAX)
		return cfg_fail(w, "more than %d desired configs", NODE_DESIRED_MAX);
	ps->des = &c->desired[c->ndesired++];
	memset(ps->des, 0, sizeof *ps->des);
	strcpy(ps->des->name, name);
	cfg_defaults(KEYS_DESIRED, ps->des);
	return 0;
}

static int arbiter_section(struct parse *ps, const struct where *w, const char *kind)
{
	struct node_cfg *c = ps->c;
	size_t i;
	if (procctl_name_valid(kind, NODE_KIND_NAME_MAX) < 0 || kind[0] < 'a' || kind[0] > 'z')
		return cfg_fail(w, "'%s' is not a name for a resource kind (a letter, then [a-z0-9_.-]; 1 to %u)", kind,
			    NODE_KIND_NAME_MAX);
	for (i = 0; i < c->narbiters; i++)
		if (!strcmp(c->arbiters[i].name, kind))
			return cfg_fail(w, "[arbiter %s] twice", kind);
	if (c->narbiters == NODE_ARBITERS_MAX)
		return cfg_fail(w, "more than %d arbiters", NODE_ARBITERS_MAX);
	ps->arb = &c->arbiters[c->narbiters++];
	memset(ps->arb, 0, sizeof *ps->arb);
	strcpy(ps->arb->name, kind);
	cfg_defaults(KEYS_ARBITER, ps->arb);
	return 0;
}

/* "[arbiter NAME]" or "[desired NAME]" (s trimmed), at where. The
 * section before it is checked whole first. */
static int section(struct parse *ps, const struct where *w, char *s, const char *at)
{
	size_t sl = strlen(s);
	char *in;
	int is_desired, r;
	if (s[sl - 1] != ']')
		return cfg_fail(w, "'%s' is not a section ([arbiter NAME] or [desired NAME])", s);
	s[sl - 1] = 0;
	in = cfg_trim(s + 1);
	is_desired = !strncmp(in, "desired", 7) && (in[7] == ' ' || in[7] == '\t');
	if (!is_desired && (strncmp(in, "arbiter", 7) || (in[7] != ' ' && in[7] != '\t')))
		return cfg_fail(w, "'[%s]' is not a section ([arbiter NAME] or [desired NAME])", in);
	if ((r = section_done(ps->c, ps->arb, ps->des, ps->section_at, w->err, w->errlen)) < 0)
		return r;
	snprintf(ps->section_at, sizeof ps->section_at, "%s", at);
	ps->arb = NULL;
	ps->des = NULL;
	ps->nseen = 0; /* keys are per section */
	return is_desired ? desired_section(ps, w, cfg_trim(in + 8)) : arbiter_section(ps, w, cfg_trim(in + 8));
}

/* "key = value" (s trimmed) in the section being read; where becomes
 * "FILE:LINE: KEY" for its errors. */
static int key_line(struct parse *ps, struct where *w, char *s, char *where, size_t wherelen, const char *at)
{
	char *eq = strchr(s, '='), *key, *val;
	size_t i;
	if (!eq)
		return cfg_fail(w, "'%s' is not key = value", s);
	*eq = 0;
	key = cfg_trim(s);
	val = cfg_trim(eq + 1);
	snprintf(where, wherelen, "%s: %s", at, key);
	if (!*key)
		return cfg_fail(w, "a value without a key");
	if (strcmp(key, "grpc_listen")) {
		for (i = 0; i < ps->nseen; i++)
			if (!strcmp(ps->seen[i], key))
				return cfg_fail(w, "given twice");
		if (ps->nseen < sizeof ps->seen / sizeof ps->seen[0])
			snprintf(ps->seen[ps->nseen++], sizeof ps->seen[0], "%s", key);
	}
	if (ps->arb)
		return cfg_set_key(KEYS_ARBITER, "an [arbiter]", ps->arb, w, key, val);
	if (ps->des)
		return cfg_set_key(KEYS_DESIRED, "a [desired]", ps->des, w, key, val);
	return cfg_set_key(KEYS_GLOBAL, NULL, ps->c, w, key, val);
}

int node_cfg_parse(struct node_cfg *c, const char *text, size_t len, const char *name, char *err, size_t errlen)
{
	char line[LINE_MAX_], at[NODE_PATH_MAX + 32], where[LINE_MAX_ + NODE_PATH_MAX + 64];
	struct parse ps = {.c = c};
	const char *p = text, *end = text + len;
	int lineno = 0, r;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		struct where w = {SRC_FILE, err, errlen, where};
		char *s;

		lineno++;
		snprintf(at, sizeof at, "%.*s:%d", NODE_PATH_MAX, name, lineno);
		snprintf(where, sizeof where, "%s", at);
		if (n >= sizeof line)
			return cfg_fail(&w, "a line over %zu bytes", sizeof line - 1);
		memcpy(line, p, n);
		line[n] = 0;
		p += n + 1;
		if (memchr(line, 0, n))
			return cfg_fail(&w, "a NUL byte");
		s = cfg_trim(line);
		if (!*s || *s == '#')
			continue;
		r = *s == '[' ? section(&ps, &w, s, at) : key_line(&ps, &w, s, where, sizeof where, at);
		if (r)
			return r;
	}
	return section_done(c, ps.arb, ps.des, ps.section_at, err, errlen);
}

int node_cfg_load(struct node_cfg *c, const char *path, char *err, size_t errlen)
{
	char *buf;
	size_t len = 0;
	ssize_t n = 0;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY), r; /* a FIFO would block */
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return r;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(err, errlen, "%s: not a regular file", path);
		return -EINVAL;
	}
	buf = malloc(FILE_MAX + 1);
	if (!buf) {
		close(fd);
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	while (len <= FILE_MAX && (n = read(fd, buf + len, FILE_MAX + 1 - len)) > 0)
		len += (size_t)n;
	r = n < 0 ? -errno : 0;
	close(fd);
	if (r)
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
	else if (len > FILE_MAX)
		r = -EFBIG, snprintf(err, errlen, "%s: over %d bytes", path, FILE_MAX);
	else
		r = node_cfg_parse(c, buf, len, path, err, errlen);
	free(buf);
	return r;
}
