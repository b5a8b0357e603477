/* SPDX-License-Identifier: Apache-2.0 */
/* rollout.c - how far each desired config got to the processes it is the
 * config for: applied, rejected, pending or superseded, or not this
 * daemon's to write (node.proto's DesiredRollout), for ListDesiredConfigs
 * and /metrics. */
#include <string.h>

#include "node_int.h"

/* Where p, whose config d is, stands with it. */
static void count_one(const struct proc *p, const struct desired *d, struct desired_rollout *r)
{
	if (p->desired_rev == d->revision) {
		if (p->acked_gen != p->desired_gen)
			r->pending++;
		else if (p->ack_status)
			r->rejected++;
		else
			r->applied++;
	} else if (!p->desired_rev && p->desired_gen && p->write_rev >= d->revision) {
		r->superseded++; /* a Publish or Clear, after d was set */
	} else if (p->too_big_rev == d->revision) {
		r->rejected++;
		r->too_big++;
	} else {
		r->pending++;
	}
}

/* p's desired config: a search of the store once per change of it or of
 * the pods (a scrape of 10,000 processes under 1,024 configs is ten
 * million matches). */
static const struct desired *config_of(const struct node *n, struct proc *p)
{
	uint64_t at = n->desired.changes + n->kube.moves + 1; /* each only grows */
	if (p->config_at != at) {
		p->config = proc_desired(n, p);
		p->config_at = at;
	}
	return p->config;
}

/* Is p's region this daemon's to write: its consumer's lock held, and the
 * region neither another lock domain's nor broken by its process? (One
 * attached a moment ago and not claimed yet is: it is pending.) */
static int writes_to(const struct proc *p)
{
	enum procctl_ownership own = procctl_client_ownership(p->c);
	return procctl_registry_owner(p->reg, p->key.consumer) && own != PROCCTL_OWN_CONFLICT && own != PROCCTL_OWN_BROKEN;
}

/* Each process's count, into out[i] for the config it has: the i-th of
 * the ProcessConfigs' (kube), or of the others. */
static void count_into(const struct node *n, int kube, struct desired_rollout *out)
{
	const struct desired *v = kube ? n->desired.kv : n->desired.v;
	size_t i;
	memset(out, 0, sizeof *out * (kube ? n->desired.kn : n->desired.n));
	for (i = 0; i < n->nprocs; i++) {
		struct proc *p = n->procs[i];
		const struct desired *d = config_of(n, p);
		if (!d || !d->kube != !kube)
			continue;
		if (writes_to(p))
			count_one(p, d, &out[d - v]);
		else
			out[d - v].not_owned++;
	}
}

void rollout_count(const struct node *n, struct desired_rollout *out)
{
	count_into(n, 0, out);
}

void rollout_count_kube(const struct node *n, struct desired_rollout *out)
{
	count_into(n, 1, out);
}
