/* SPDX-License-Identifier: Apache-2.0 */
/* table.c - the process table as the services see it: a process's pod
 * and desired config, a write to it noted, the events about it numbered
 * and kept, and the processes a selector matches. It calls no service:
 * reads, waits, arbiters and requests call it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node_int.h"

/* A config write (or clear) that made generation g of p. */
void proc_wrote(struct node *n, struct proc *p, int64_t g, uint64_t rev)
{
	if (g <= 0)
		return;
	n->stats.writes++;
	if (!p->first_gen)
		p->first_gen = (uint64_t)g;
	p->written_gen = p->desired_gen = (uint64_t)g;
	p->written_ns = now_ns();
	p->desired_rev = rev;
	p->write_rev = n->desired.revision;
}

const struct podmeta *proc_pod(const struct node *n, const struct proc *p)
{
	return p->key.pod_uid[0] ? kubepods_find(&n->kube, p->key.pod_uid) : NULL;
}

int node_pods_known(const struct node *n)
{
	return (!n->kube.kw || n->kube.synced) && (!n->pconfigs.kw || n->pconfigs.synced);
}

const struct desired *proc_desired(const struct node *n, const struct proc *p)
{
	return desired_match(&n->desired, &p->key, proc_pod(n, p));
}

/* Number, pack and keep one event (ev's oneof set by the caller). */
void node_emit(struct node *n, const struct selector *k, PbEvent *ev)
{
	char token[48];
	uint8_t stack[512], *buf = stack;
	size_t len;
	uint64_t seq = events_last(n->ev) + 1;
	ev->sequence = seq;
	snprintf(token, sizeof token, "%016llx.%llu", (unsigned long long)n->incarnation, (unsigned long long)seq);
	ev->resume_token = token;
	len = protobuf_c_message_get_packed_size(&ev->base);
	if (len > sizeof stack && !(buf = malloc(len))) {
		node_log(PROCCTL_LOG_ERROR, "event_lost", "seq=%llu error=ENOMEM", (unsigned long long)seq);
		return;
	}
	protobuf_c_message_pack(&ev->base, buf);
	if (events_append(n->ev, k, buf, len) < 0)
		node_log(PROCCTL_LOG_ERROR, "event_lost", "seq=%llu error=ENOMEM", (unsigned long long)seq);
	if (buf != stack)
		free(buf);
	n->kick = 1;
}

/* A Selector as a filter: 0, or INVALID_ARGUMENT and a reason. */
enum node_code selector_from_pb(const PbSelector *s, struct selector *k, const char **why)
{
	memset(k, 0, sizeof *k);
	if (s && selector_from(k, s->pid, s->consumer, s->schema_version, s->pod_uid, s->container_id, why) < 0)
		return NODE_INVALID_ARGUMENT;
	return NODE_OK;
}

/* A container ID none attached has, as docker ps and crictl print them
 * (the first 12 digits): the ID of the one attached container it begins;
 * INVALID_ARGUMENT when it begins two. */
static enum node_code container_prefix(const struct node *n, struct selector *k, char *err, size_t errlen)
{
	size_t i, len = strlen(k->container_id);
	const char *full = NULL;
	for (i = 0; len && i < n->nprocs; i++)
		if (!strcmp(n->procs[i]->key.container_id, k->container_id))
			return NODE_OK;
	for (i = 0; len && i < n->nprocs; i++) {
		const char *id = n->procs[i]->key.container_id;
		if (strncmp(id, k->container_id, len))
			continue;
		if (full && strcmp(full, id)) {
			snprintf(err, errlen, "selector.container_id: %s begins the IDs of more than one container (%s, %s): "
					      "give more of it", k->container_id, full, id);
			return NODE_INVALID_ARGUMENT;
		}
		full = id;
	}
	if (full)
		memcpy(k->container_id, full, sizeof k->container_id);
	return NODE_OK;
}

enum node_code filter_from_pb(const struct node *n, const PbSelector *s, struct selector *k, struct podsel *ps, char *err,
			      size_t errlen)
{
	const char *why = NULL;
	enum node_code code;
	memset(ps, 0, sizeof *ps);
	if (selector_from_pb(s, k, &why)) {
		snprintf(err, errlen, "%s", why);
		return NODE_INVALID_ARGUMENT;
	}
	if (!s)
		return NODE_OK;
	if ((code = container_prefix(n, k, err, errlen)))
		return code;
	if (podsel_from(ps, s->namespace_, s->label_selector, err, errlen) < 0)
		return NODE_INVALID_ARGUMENT;
	if (!podsel_empty(ps) && !n->kube.kw) {
		snprintf(err, errlen, "selector.namespace, selector.label_selector: this procctl-node follows no Kubernetes "
				      "API server (kubernetes_api), so it knows no pod's namespace or labels");
		return NODE_FAILED_PRECONDITION;
	}
	return NODE_OK;
}

static int by_ref(const void *a, const void *b)
{
	const struct proc *x = *(struct proc *const *)a, *y = *(struct proc *const *)b;
	if (x->key.pid != y->key.pid)
		return x->key.pid < y->key.pid ? -1 : 1;
	return x->instance < y->instance ? -1 : x->instance > y->instance;
}

ssize_t procs_matching(struct node *n, const struct selector *f, const struct podsel *ps, struct proc ***out)
{
	struct proc **v = malloc(sizeof *v * (n->nprocs ? n->nprocs : 1));
	size_t i, c = 0;
	if (!v)
		return -ENOMEM;
	for (i = 0; i < n->nprocs; i++)
		if (selector_match(f, &n->procs[i]->key) && (!ps || podsel_match(ps, proc_pod(n, n->procs[i]), n->procs[i]->key.container_id)))
			v[c++] = n->procs[i];
	qsort(v, c, sizeof *v, by_ref);
	*out = v;
	return (ssize_t)c;
}

uint64_t procs_start_of(const struct node *n, pid_t pid, uint64_t *image)
{
	size_t i;
	for (i = 0; i < n->nprocs; i++)
		if (n->procs[i]->key.pid == pid) {
			*image = n->procs[i]->key.pid_image;
			return n->procs[i]->key.pid_start;
		}
	return 0;
}
