/* SPDX-License-Identifier: Apache-2.0 */
/* podid.h - a process's Kubernetes identity from /proc/<pid>/cgroup: pod
 * UID, container ID and QoS class, for cgroup v1 and v2, the systemd and
 * the cgroupfs drivers, and paths seen from another cgroup namespace.
 *
 * The text is untrusted: a process with a delegated cgroup subtree names
 * the cgroups below its own. So only a path down the kubelet's own
 * hierarchy from the cgroup root counts, the pod is the one at the
 * kubelet's level, and the container the component right below it;
 * names deeper down are never read. */
#ifndef PROCCTL_PODID_H
#define PROCCTL_PODID_H

#include <stddef.h>
#include <sys/types.h>

enum procctl_qos {
	PROCCTL_QOS_NONE = 0, /* not in a pod */
	PROCCTL_QOS_GUARANTEED,
	PROCCTL_QOS_BURSTABLE,
	PROCCTL_QOS_BESTEFFORT,
};

#define PROCCTL_POD_UID_MAX 36       /* 8-4-4-4-12; a static pod's is 32 hex */
#define PROCCTL_CONTAINER_ID_MAX 64  /* hex */

struct procctl_podid {
	char pod_uid[PROCCTL_POD_UID_MAX + 1];            /* lowercase, dashes as in the API; "" none */
	char container_id[PROCCTL_CONTAINER_ID_MAX + 1];  /* lowercase hex; "" none */
	char runtime[16];     /* "containerd", "crio", "docker", or "" (cgroupfs: not named) */
	enum procctl_qos qos;
	int cgroup_version;   /* 1 or 2: of the line the identity came from */
};

/* Parse the text of a /proc/<pid>/cgroup file. Only the kubelet's
 * hierarchy names a pod: kubepods (cgroupfs), kubepods.slice (systemd;
 * kind's kubelet.slice/kubelet-kubepods.slice) right under the cgroup
 * root, then the QoS level, the pod, the container, each named as the
 * kubelet and the runtimes name them (only root can create cgroups
 * there); a pod-like name anywhere else (a delegated subtree a user can
 * write) is no identity. A path seen from another cgroup namespace
 * ("/../../kubepods-besteffort-pod<uid>.slice/...") is placed by init:
 * the text of the host's init's cgroup file as this namespace sees it
 * (its leading ".." say how deep the namespace's root is; NULL: at the
 * cgroup root); a path must then continue the hierarchy at the depth it
 * climbed to. 0: in a pod (container_id empty when the process sits in
 * the pod's own cgroup); -ENOENT: not in a pod; -EINVAL: malformed, or
 * lines naming different pods or containers. */
int procctl_podid_parse(const char *text, size_t len, const char *init, size_t init_len, struct procctl_podid *out);

/* The same for <proc_root>/<pid>/cgroup (proc_root NULL: /proc), with
 * <proc_root>/1/cgroup as init; also -ESRCH when the process is gone,
 * -EIO when the file is over 64 KiB, -ENOMEM. */
int procctl_podid_read(const char *proc_root, pid_t pid, struct procctl_podid *out);

/* The hierarchies a cgroup file's lines name, for the log: "v2" for its
 * "0::" line, "v1:CONTROLLERS" for each other ("v1:cpu,cpuacct",
 * "v1:name=systemd"), space-separated, into buf (cut short to buflen):
 * their number. The pod identity is read from every one of them. */
int procctl_podid_hierarchies(const char *text, size_t len, char *buf, size_t buflen);

/* A pod UID as text: 8-4-4-4-12 hex (with '-', or '_' as a systemd unit
 * name writes it) or 32 hex (a static pod's), either case. 1 and out
 * lowercase, with dashes where it has them (how the API writes it), else
 * 0. */
int procctl_pod_uid_parse(const char *s, size_t n, char out[PROCCTL_POD_UID_MAX + 1]);

const char *procctl_qos_name(enum procctl_qos q);

#endif
