/* SPDX-License-Identifier: Apache-2.0 */
/* admission.h - who an arbiter grants to ([arbiter NAME] admit_* keys): by
 * default everyone; with admit_default = deny, only a process that an
 * admit_ list names, by its effective uid or gid, its pod (the kubelet's
 * hierarchy: podid.h) or a prefix of its cgroup v2 path. Pure: the
 * process's credentials are read elsewhere (procstat.h). */
#ifndef PROCCTL_ADMISSION_H
#define PROCCTL_ADMISSION_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sys/podid.h"

#define ADMIT_MAX 16       /* entries in each list */
#define ADMIT_CGROUP_MAX 8 /* cgroup prefixes */
#define ADMIT_PATH_MAX 256

struct admission {
	int deny; /* admit_default = deny */
	uint32_t uids[ADMIT_MAX], gids[ADMIT_MAX];
	size_t nuids, ngids;
	char pods[ADMIT_MAX][PROCCTL_POD_UID_MAX + 1];
	size_t npods;
	char cgroups[ADMIT_CGROUP_MAX][ADMIT_PATH_MAX];
	size_t ncgroups;
};

enum admit_list { ADMIT_UIDS, ADMIT_GIDS, ADMIT_PODS, ADMIT_CGROUPS };

/* What admission looks at of a process. */
struct admit_who {
	uid_t uid;          /* effective */
	gid_t gid;          /* effective */
	const char *pod;    /* "" none */
	const char *cgroup; /* the cgroup v2 path; "" unknown */
};

/* Add one item (a number, a pod UID, an absolute cgroup path) to a list:
 * 0, or -EINVAL with why. */
int admission_add(struct admission *a, enum admit_list l, const char *item, const char **why);
/* 1 when some admit_ list has an entry. */
int admission_listed(const struct admission *a);
/* 1 admitted; 0 refused, and why says who it is and why not. */
int admission_check(const struct admission *a, const struct admit_who *w, char *why, size_t len);

#endif
