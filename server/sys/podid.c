/* SPDX-License-Identifier: Apache-2.0 */
/* podid.c - pod UID, container ID and QoS class from /proc/<pid>/cgroup.
 *
 * The shapes (kubelet, container runtimes):
 *   systemd  .../kubepods.slice/kubepods-burstable.slice/
 *                kubepods-burstable-pod<uid, '-' as '_'>.slice/
 *                cri-containerd-<id>.scope  (docker-<id>.scope, crio-<id>.scope)
 *            Guaranteed pods have no QoS slice: kubepods-pod<uid>.slice;
 *            kind and similar nest a kubelet.slice: kubelet-kubepods-...
 *   cgroupfs .../kubepods/burstable/pod<uid>/<id>   (guaranteed: kubepods/pod<uid>)
 * v1 files hold a line per hierarchy ("3:memory:/kubepods/..."), v2 one
 * line ("0::/kubepods.slice/..."); a reader in another cgroup namespace
 * sees paths relative to its root ("/../../kubepods..."), so components
 * are matched wherever they are, the outermost pod first. */
#define _GNU_SOURCE 1
#include "podid.h"
#include "procstat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FILE_MAX 65536
#define NAME_MAX_ 255

static int is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static char lower(char c)
{
	return c >= 'A' && c <= 'F' ? (char)(c - 'A' + 'a') : c;
}

int procctl_pod_uid_parse(const char *s, size_t n, char out[PROCCTL_POD_UID_MAX + 1])
{
	size_t i;
	if (n == 32) {
		for (i = 0; i < n; i++)
			if (!is_hex(s[i]))
				return 0;
	} else if (n == 36) {
		for (i = 0; i < n; i++) {
			int dash = i == 8 || i == 13 || i == 18 || i == 23;
			if (dash ? (s[i] != '-' && s[i] != '_') : !is_hex(s[i]))
				return 0;
		}
	} else {
		return 0;
	}
	for (i = 0; i < n; i++)
		out[i] = s[i] == '_' ? '-' : lower(s[i]);
	out[n] = 0;
	return 1;
}

static int ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);
	return n >= k && !memcmp(s + n - k, suffix, k);
}

static int starts_with(const char *s, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);
	return n >= k && !memcmp(s, prefix, k);
}

/* The component right below the pod: a container. */
static void container_component(const char *c, size_t n, struct procctl_podid *out)
{
	static const struct {
		const char *prefix, *runtime;
	} scopes[] = {{"cri-containerd-", "containerd"}, {"crio-", "crio"}, {"docker-", "docker"}};
	const char *runtime = "";
	size_t i;
	if (ends_with(c, n, ".scope")) {
		n -= 6;
		for (i = 0; i < sizeof scopes / sizeof scopes[0]; i++)
			if (starts_with(c, n, scopes[i].prefix)) {
				c += strlen(scopes[i].prefix);
				n -= strlen(scopes[i].prefix);
				runtime = scopes[i].runtime;
				break;
			}
		if (!*runtime)
			return; /* crio-conmon-<id>.scope and others: not the container */
	}
	if (n == 0 || n > PROCCTL_CONTAINER_ID_MAX)
		return;
	for (i = 0; i < n; i++)
		if (!is_hex(c[i]))
			return;
	for (i = 0; i < n; i++)
		out->container_id[i] = lower(c[i]);
	out->container_id[n] = 0;
	snprintf(out->runtime, sizeof out->runtime, "%s", runtime);
}

/* A systemd driver slice of the kubelet's: "<P>kubepods-<rest>.slice",
 * P "" or "kubelet-" (kind nests a kubelet.slice), rest a QoS class
 * ("burstable", "besteffort"), a pod ("pod<uid>") or both
 * ("burstable-pod<uid>"). 1 and what it names, or 0. */
struct slice {
	int kubelet;           /* P is "kubelet-" */
	enum procctl_qos qos;  /* NONE: no class in the name */
	int pod;               /* a pod's slice (uid set), else a QoS slice */
	char uid[PROCCTL_POD_UID_MAX + 1];
};

static int kubelet_slice(const char *c, size_t n, struct slice *out)
{
	memset(out, 0, sizeof *out);
	if (!ends_with(c, n, ".slice"))
		return 0;
	n -= 6;
	if ((out->kubelet = starts_with(c, n, "kubelet-")))
		c += 8, n -= 8;
	if (!starts_with(c, n, "kubepods-"))
		return 0;
	c += 9, n -= 9;
	if (starts_with(c, n, "burstable"))
		out->qos = PROCCTL_QOS_BURSTABLE, c += 9, n -= 9;
	else if (starts_with(c, n, "besteffort"))
		out->qos = PROCCTL_QOS_BESTEFFORT, c += 10, n -= 10;
	if (!n)
		return out->qos != PROCCTL_QOS_NONE; /* a QoS slice */
	if (out->qos != PROCCTL_QOS_NONE) {
		if (c[0] != '-')
			return 0;
		c++, n--;
	}
	out->pod = 1;
	return starts_with(c, n, "pod") && procctl_pod_uid_parse(c + 3, n - 3, out->uid);
}

/* How deep a slice sits below the cgroup root, by its name: systemd
 * places "a-b-c.slice" in a.slice/a-b.slice. */
static unsigned slice_depth(const struct slice *sl)
{
	return (unsigned)sl->kubelet + (sl->pod && sl->qos != PROCCTL_QOS_NONE ? 2u : 1u);
}

/* Walking a path down the kubelet's hierarchy. */
enum kstate { K_START, K_KUBELET, K_TOP, K_QOS, K_POD, K_DONE, K_NONE };

struct kwalk {
	enum kstate st;
	unsigned depth;        /* of the next component below the cgroup root */
	int systemd, kubelet;  /* the driver; kind's kubelet.slice on the way */
	enum procctl_qos qos;
};

static int is_qos_dir(const char *c, size_t n, enum procctl_qos *qos)
{
	if (n == 9 && !memcmp(c, "burstable", 9))
		return *qos = PROCCTL_QOS_BURSTABLE, 1;
	if (n == 10 && !memcmp(c, "besteffort", 10))
		return *qos = PROCCTL_QOS_BESTEFFORT, 1;
	return 0;
}

/* The first component seen below a namespace root that is not the cgroup
 * root (w->depth > 0): a QoS or pod cgroup exactly where the kubelet puts
 * one at that depth; else no identity. */
static enum kstate k_inside(struct kwalk *w, const char *c, size_t n, struct procctl_podid *out)
{
	struct slice sl;
	enum procctl_qos qos;
	if (kubelet_slice(c, n, &sl)) {
		if (slice_depth(&sl) != w->depth)
			return K_NONE;
		w->systemd = 1, w->kubelet = sl.kubelet, w->qos = sl.qos;
		if (!sl.pod)
			return K_QOS;
		memcpy(out->pod_uid, sl.uid, sizeof sl.uid);
		return K_POD;
	}
	if (w->depth == 1 && is_qos_dir(c, n, &qos))
		return w->qos = qos, K_QOS;
	if ((w->depth == 1 || w->depth == 2) && starts_with(c, n, "pod") &&
	    procctl_pod_uid_parse(c + 3, n - 3, out->pod_uid)) {
		w->qos = w->depth == 1 ? PROCCTL_QOS_GUARANTEED : PROCCTL_QOS_NONE; /* 2: a class we cannot see */
		return K_POD;
	}
	return K_NONE;
}

/* One component c (n bytes): the next state. */
static enum kstate k_step(struct kwalk *w, const char *c, size_t n, struct procctl_podid *out)
{
	struct slice sl;
	enum procctl_qos qos;
	switch (w->st) {
	case K_START:
		if (w->depth)
			return k_inside(w, c, n, out);
		if (n == 8 && !memcmp(c, "kubepods", 8))
			return K_TOP;
		if (n == 14 && !memcmp(c, "kubepods.slice", 14))
			return w->systemd = 1, K_TOP;
		if (n == 13 && !memcmp(c, "kubelet.slice", 13))
			return w->systemd = w->kubelet = 1, K_KUBELET;
		return K_NONE;
	case K_KUBELET:
		return n == 22 && !memcmp(c, "kubelet-kubepods.slice", 22) ? K_TOP : K_NONE;
	case K_TOP:
	case K_QOS:
		if (!w->systemd) {
			if (w->st == K_TOP && is_qos_dir(c, n, &qos))
				return w->qos = qos, K_QOS;
			if (!starts_with(c, n, "pod") || !procctl_pod_uid_parse(c + 3, n - 3, out->pod_uid))
				return K_NONE;
			if (w->st == K_TOP)
				w->qos = PROCCTL_QOS_GUARANTEED;
			return K_POD;
		}
		if (!kubelet_slice(c, n, &sl) || sl.kubelet != w->kubelet ||
		    (w->st == K_QOS ? !sl.pod || sl.qos != w->qos : sl.pod && sl.qos != PROCCTL_QOS_NONE))
			return K_NONE;
		if (!sl.pod)
			return w->qos = sl.qos, K_QOS;
		if (w->st == K_TOP)
			w->qos = PROCCTL_QOS_GUARANTEED;
		memcpy(out->pod_uid, sl.uid, sizeof sl.uid);
		return K_POD;
	case K_POD:
		container_component(c, n, out);
		return K_DONE;
	default:
		return K_NONE;
	}
}

/* One cgroup path, seen from a cgroup namespace whose root is ns_depth
 * below the cgroup root: the pod, its QoS class and its container, only
 * when the path runs down the kubelet's hierarchy from the cgroup root
 * (only root creates cgroups there) or continues it from where the
 * namespace's root sits in it. 1 found, 0 not in a pod, -EINVAL. */
static int parse_path(const char *path, size_t len, unsigned ns_depth, struct procctl_podid *out)
{
	const char *c = path + 1, *end = path + len; /* after the leading '/' */
	struct kwalk w = {K_START, 0, 0, 0, PROCCTL_QOS_NONE};
	unsigned up = 0;
	memset(out, 0, sizeof *out);
	while (c < end && w.st != K_DONE) {
		const char *slash = memchr(c, '/', (size_t)(end - c));
		size_t n = (size_t)((slash ? slash : end) - c);
		if (n > NAME_MAX_)
			return -EINVAL;
		if (!n) /* "//", or a trailing '/': never the kernel's */
			break;
		if (w.st == K_START && n == 2 && !memcmp(c, "..", 2)) {
			up++; /* above the namespace's root */
		} else {
			if (w.st == K_START) {
				if (up > ns_depth)
					return 0;
				w.depth = ns_depth - up;
			}
			if ((w.st = k_step(&w, c, n, out)) == K_NONE)
				break;
		}
		c += n + 1;
	}
	if (w.st != K_POD && w.st != K_DONE) {
		memset(out, 0, sizeof *out);
		return 0; /* not the kubelet's: a process may name its own cgroups */
	}
	out->qos = w.qos;
	return 1;
}

/* How deep the namespace's root sits below the cgroup root, for the line
 * of hierarchy id (the text before its first ':') in init's cgroup file
 * (the host's init, seen from this namespace: "/../../init.scope" is 2
 * deep): its leading ".." components. 0 without init or that line. */
static unsigned ns_depth(const char *init, size_t init_len, const char *id, size_t id_len)
{
	const char *line = init, *end = init ? init + init_len : NULL;
	while (line && line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line)), *le = nl ? nl : end;
		const char *c2 = (size_t)(le - line) > id_len + 1 && !memcmp(line, id, id_len) && line[id_len] == ':'
					 ? memchr(line + id_len + 1, ':', (size_t)(le - line - id_len - 1))
					 : NULL;
		if (c2) {
			unsigned d = 0;
			const char *p = c2 + 1;
			while (le - p >= 3 && !memcmp(p, "/..", 3) && (le - p == 3 || p[3] == '/'))
				d++, p += 3;
			return d;
		}
		line = le < end ? le + 1 : end; /* past a last line without a newline: no further */
	}
	return 0;
}

int procctl_podid_parse(const char *text, size_t len, const char *init, size_t init_len, struct procctl_podid *out)
{
	const char *line = text, *end = text + len;
	struct procctl_podid best, cur;
	int have = 0;

	memset(out, 0, sizeof *out);
	if (!text || len > FILE_MAX)
		return -EINVAL;
	memset(&best, 0, sizeof best);
	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *le = nl ? nl : end, *c1, *c2;
		int v2, r;
		if (le == line) { /* an empty line: only the last one, after the final newline */
			line = le + 1; /* le < end: a newline */
			continue;
		}
		/* "ID:controllers:path", the path may hold ':' itself */
		c1 = memchr(line, ':', (size_t)(le - line));
		c2 = c1 ? memchr(c1 + 1, ':', (size_t)(le - c1 - 1)) : NULL;
		if (!c1 || !c2 || c1 == line || c2 + 1 >= le || c2[1] != '/')
			return -EINVAL;
		v2 = c1 - line == 1 && line[0] == '0' && c2 == c1 + 1;
		r = parse_path(c2 + 1, (size_t)(le - c2 - 1), ns_depth(init, init_len, line, (size_t)(c1 - line)), &cur);
		if (r < 0)
			return r;
		if (r) {
			cur.cgroup_version = v2 ? 2 : 1;
			if (have && (strcmp(best.pod_uid, cur.pod_uid) ||
				     (best.container_id[0] && cur.container_id[0] &&
				      strcmp(best.container_id, cur.container_id))))
				return -EINVAL; /* two pods or containers: trust neither */
			if (!have || (!best.container_id[0] && cur.container_id[0]))
				best = cur; /* the most complete line */
			have = 1;
		}
		line = le < end ? le + 1 : end; /* past a last line without a newline: no further */
	}
	if (!have)
		return -ENOENT;
	*out = best;
	return 0;
}

int procctl_podid_hierarchies(const char *text, size_t len, char *buf, size_t buflen)
{
	const char *line = text, *end = text + len;
	size_t o = 0;
	int n = 0;
	if (buflen)
		buf[0] = 0;
	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line)), *le = nl ? nl : end;
		const char *c1 = memchr(line, ':', (size_t)(le - line));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(le - c1 - 1)) : NULL;
		if (c2 && o < buflen && c2 == c1 + 1) /* "0::": the unified hierarchy */
			o += (size_t)snprintf(buf + o, buflen - o, "%sv2", n ? " " : "");
		else if (c2 && o < buflen)
			o += (size_t)snprintf(buf + o, buflen - o, "%sv1:%.*s", n ? " " : "", (int)(c2 - c1 - 1), c1 + 1);
		n += c2 != NULL;
		line = le < end ? le + 1 : end; /* past a last line without a newline: no further */
	}
	return n;
}

/* A cgroup file into buf (FILE_MAX + 1 bytes): its length, or -errno
 * (-ESRCH gone, -EIO over FILE_MAX, or what open or read said). */
static ssize_t read_cgroup(const char *proc_root, pid_t pid, char *buf)
{
	ssize_t n = procstat_read(proc_root, pid, "cgroup", buf, FILE_MAX + 1);
	return n > FILE_MAX ? -EIO : n;
}

int procctl_podid_read(const char *proc_root, pid_t pid, struct procctl_podid *out)
{
	char *buf = malloc(2 * (FILE_MAX + 1)), *init = buf + FILE_MAX + 1;
	ssize_t n, ni;
	int rc;

	memset(out, 0, sizeof *out);
	if (!buf)
		return -ENOMEM;
	/* Pid 1 (the host's init, with the host's pids) says where this
	 * cgroup namespace's root sits; unreadable, the root is the root. */
	ni = read_cgroup(proc_root, 1, init);
	n = read_cgroup(proc_root, pid, buf);
	rc = n < 0 ? (int)n : procctl_podid_parse(buf, (size_t)n, ni > 0 ? init : NULL, ni > 0 ? (size_t)ni : 0, out);
	free(buf);
	return rc;
}

const char *procctl_qos_name(enum procctl_qos q)
{
	switch (q) {
	case PROCCTL_QOS_GUARANTEED:
		return "Guaranteed";
	case PROCCTL_QOS_BURSTABLE:
		return "Burstable";
	case PROCCTL_QOS_BESTEFFORT:
		return "BestEffort";
	default:
		return "";
	}
}
