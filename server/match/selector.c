/* SPDX-License-Identifier: Apache-2.0 */
/* selector.c - selectors (selector.h). */
#include "selector.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kube/podmeta.h"

int selector_match(const struct selector *f, const struct selector *k)
{
	if (k->always)
		return 1;
	return (!f->pid || (f->pid == k->pid && (!f->pid_start || f->pid_start == k->pid_start) &&
			    (!f->pid_image || f->pid_image == k->pid_image))) &&
	       (!f->version || f->version == k->version) &&
	       (!f->consumer[0] || !strcmp(f->consumer, k->consumer)) &&
	       (!f->pod_uid[0] || !strcmp(f->pod_uid, k->pod_uid)) &&
	       (!f->container_id[0] || !strcmp(f->container_id, k->container_id));
}

static int hexstr(const char *s, size_t max, int dashes)
{
	size_t i, n = strlen(s);
	if (n > max)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') || (dashes && s[i] == '-')))
			return 0;
	return 1;
}

int selector_same(const struct selector *a, const struct selector *b)
{
	return a->pid == b->pid && a->version == b->version && !strcmp(a->consumer, b->consumer) &&
	       !strcmp(a->pod_uid, b->pod_uid) && !strcmp(a->container_id, b->container_id);
}

int selector_valid(const struct selector *k, const char **why)
{
	if (k->pid < 0)
		*why = "selector.pid: negative";
	else if (k->consumer[0] && procctl_name_valid(k->consumer, PROCCTL_CONSUMER_MAX) < 0)
		*why = "selector.consumer: not a consumer name ([a-z0-9_.-], 1 to 31)";
	else if (!hexstr(k->pod_uid, PROCCTL_POD_UID_MAX, 1))
		*why = "selector.pod_uid: not a pod UID (lowercase hex and dashes, at most 36)";
	else if (!hexstr(k->container_id, PROCCTL_CONTAINER_ID_MAX, 0))
		*why = "selector.container_id: not a container ID (lowercase hex, at most 64)";
	else
		return 0;
	return -EINVAL;
}

static int copy_field(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src);
	if (n >= cap)
		return -EINVAL;
	memcpy(dst, src, n + 1);
	return 0;
}

int selector_from_stored(struct selector *k, int32_t pid, const char *consumer, uint32_t version,
		       const char *pod_uid, const char *container_id, const char **why)
{
	memset(k, 0, sizeof *k);
	k->pid = pid;
	k->version = version;
	if (copy_field(k->consumer, sizeof k->consumer, consumer) < 0) {
		*why = "selector.consumer: not a consumer name ([a-z0-9_.-], 1 to 31)";
		return -EINVAL;
	}
	if (copy_field(k->pod_uid, sizeof k->pod_uid, pod_uid) < 0) {
		*why = "selector.pod_uid: not a pod UID (lowercase hex and dashes, at most 36)";
		return -EINVAL;
	}
	if (copy_field(k->container_id, sizeof k->container_id, container_id) < 0) {
		*why = "selector.container_id: not a container ID (lowercase hex, at most 64)";
		return -EINVAL;
	}
	return selector_valid(k, why);
}

int selector_from(struct selector *k, int32_t pid, const char *consumer, uint32_t version, const char *pod_uid,
		const char *container_id, const char **why)
{
	char uid[PROCCTL_POD_UID_MAX + 1] = "";
	if (pod_uid[0] && !procctl_pod_uid_parse(pod_uid, strlen(pod_uid), uid)) {
		memset(k, 0, sizeof *k);
		*why = "selector.pod_uid: not a pod UID (8-4-4-4-12 hex, or 32 hex)";
		return -EINVAL;
	}
	return selector_from_stored(k, pid, consumer, version, uid, container_id, why);
}

int podsel_from(struct podsel *ps, const char *ns, const char *labels, char *err, size_t errlen)
{
	size_t n = strlen(ns);
	char why[300];
	memset(ps, 0, sizeof *ps);
	if (n && (n > PODSEL_NS_MAX || memchr(ns, '.', n) || !labelsel_subdomain_valid(ns, n))) {
		snprintf(err, errlen, "selector.namespace: not a namespace (a DNS label: [a-z0-9-], at most 63, "
				      "alphanumeric at both ends)");
		return -EINVAL;
	}
	memcpy(ps->ns, ns, n + 1);
	if (labelsel_check(labels, strlen(labels), ps->labels, sizeof ps->labels, why, sizeof why) < 0) {
		snprintf(err, errlen, "selector.label_selector: %s", why);
		return -EINVAL;
	}
	return 0;
}

int podsel_empty(const struct podsel *ps)
{
	return !ps->ns[0] && !ps->labels[0] && !ps->container[0];
}

int podsel_same(const struct podsel *a, const struct podsel *b)
{
	return !strcmp(a->ns, b->ns) && !strcmp(a->labels, b->labels) && !strcmp(a->container, b->container);
}

int podsel_match(const struct podsel *ps, const struct podmeta *m, const char *container_id)
{
	const char *cn;
	if (podsel_empty(ps))
		return 1;
	if (!m || (ps->ns[0] && strcmp(ps->ns, m->ns)) || !podmeta_match(m, ps->labels))
		return 0;
	return !ps->container[0] || ((cn = podmeta_container(m, container_id)) && !strcmp(cn, ps->container));
}

size_t podsel_requirements(const struct podsel *ps)
{
	size_t n = ps->labels[0] ? 1 : 0;
	const char *c;
	int depth = 0;
	for (c = ps->labels; *c; c++) { /* the canonical form: "," between requirements, and in (a,b) */
		depth += *c == '(' ? 1 : *c == ')' ? -1 : 0;
		n += *c == ',' && !depth;
	}
	return n;
}
