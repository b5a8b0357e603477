/* SPDX-License-Identifier: Apache-2.0 */
/* admission.c - who an arbiter grants to (admission.h). */
#include "admission.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/log.h"
#include "sys/podid.h"
#include "procctl.h"

static int number(const char *s, uint32_t *out)
{
	char *end;
	unsigned long v;
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > UINT32_MAX - 1) /* (uid_t)-1 is nobody's */
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int admission_add(struct admission *a, enum admit_list l, const char *item, const char **why)
{
	switch (l) {
	case ADMIT_UIDS:
	case ADMIT_GIDS: {
		uint32_t *v = l == ADMIT_UIDS ? a->uids : a->gids;
		size_t *n = l == ADMIT_UIDS ? &a->nuids : &a->ngids;
		if (*n == ADMIT_MAX)
			return *why = "more than 16 entries", -EINVAL;
		if (number(item, &v[*n]) < 0)
			return *why = "not a uid or gid (a number)", -EINVAL;
		++*n;
		return 0;
	}
	case ADMIT_PODS:
		if (a->npods == ADMIT_MAX)
			return *why = "more than 16 entries", -EINVAL;
		if (!procctl_pod_uid_parse(item, strlen(item), a->pods[a->npods]))
			return *why = "not a pod UID (8-4-4-4-12 hex, or 32 hex)", -EINVAL;
		a->npods++;
		return 0;
	case ADMIT_CGROUPS:
		if (a->ncgroups == ADMIT_CGROUP_MAX)
			return *why = "more than 8 entries", -EINVAL;
		if (item[0] != '/' || strlen(item) >= ADMIT_PATH_MAX || strstr(item, "/../") ||
		    (strlen(item) >= 3 && !strcmp(item + strlen(item) - 3, "/..")))
			return *why = "not an absolute cgroup path (no '..')", -EINVAL;
		snprintf(a->cgroups[a->ncgroups], sizeof a->cgroups[0], "%s", item);
		/* "/a/b/" and "/a/b" name the same subtree */
		if (strlen(item) > 1 && item[strlen(item) - 1] == '/')
			a->cgroups[a->ncgroups][strlen(item) - 1] = 0;
		a->ncgroups++;
		return 0;
	}
	return *why = "no such list", -EINVAL;
}

int admission_listed(const struct admission *a)
{
	return a->nuids || a->ngids || a->npods || a->ncgroups;
}

/* path is prefix or below it, on a component boundary ("/a/b" covers
 * "/a/b" and "/a/b/c", not "/a/bc"). */
static int under(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);
	if (n == 1) /* "/" */
		return path[0] == '/';
	return !strncmp(path, prefix, n) && (path[n] == 0 || path[n] == '/');
}

int admission_check(const struct admission *a, const struct admit_who *w, char *why, size_t len)
{
	char shown[4 * ADMIT_PATH_MAX + 1];
	size_t i;
	if (!a->deny)
		return 1;
	for (i = 0; i < a->nuids; i++)
		if (a->uids[i] == (uint32_t)w->uid)
			return 1;
	for (i = 0; i < a->ngids; i++)
		if (a->gids[i] == (uint32_t)w->gid)
			return 1;
	for (i = 0; w->pod[0] && i < a->npods; i++)
		if (!strcmp(a->pods[i], w->pod))
			return 1;
	for (i = 0; w->cgroup[0] && i < a->ncgroups; i++)
		if (under(w->cgroup, a->cgroups[i]))
			return 1;
	/* Whoever may make cgroups names them: shown escaped, printable ASCII
	 * (it goes into the log and the API's strings). */
	snprintf(why, len, "uid %u gid %u pod %s cgroup %s: in no admit_ list (admit_default = deny)", (unsigned)w->uid,
		 (unsigned)w->gid, w->pod[0] ? w->pod : "none",
		 w->cgroup[0] ? node_log_quote(shown, sizeof shown, w->cgroup) : "unknown");
	return 0;
}
