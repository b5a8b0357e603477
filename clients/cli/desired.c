/* SPDX-License-Identifier: Apache-2.0 */
/* desired.c - procctl desired ls | set | rm: the daemon's desired
 * configs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define BIT(o) (1ull << (o))

/* The options of desired SUB other than those it takes (and those every
 * command takes), named: 2; else 0. */
static int sub_takes(const struct opts *o, const char *sub, uint64_t takes)
{
	uint64_t extra;
	int k;
	for (k = 0; k < NOPT; k++)
		if (cli_options[k].cmds == CMD_ALL)
			takes |= BIT(k);
	extra = o->given & ~takes;
	if (o->stdin_data && !(takes & BIT(O_DATA))) {
		fprintf(stderr, "procctl: -: desired %s reads no config\n", sub);
		return 2;
	}
	for (k = 0; k < NOPT; k++)
		if (extra >> k & 1) {
			fprintf(stderr, "procctl: --%s: not an option of desired %s (procctl desired --help)\n",
				cli_options[k].name, sub);
			return 2;
		}
	return o->nargs > 1 ? bad_usage(o->args[1], "not expected here") : 0;
}

static int desired_ls(const struct opts *o)
{
	Procctl__V1__ListDesiredConfigsRequest rq = PROCCTL__V1__LIST_DESIRED_CONFIGS_REQUEST__INIT;
	Procctl__V1__ListDesiredConfigsResponse *r;
	size_t i;
	int e;
	if ((e = sub_takes(o, "ls", 0)))
		return e;
	if (!(r = (void *)call("/procctl.v1.NodeService/ListDesiredConfigs", &rq.base,
			       &procctl__v1__list_desired_configs_response__descriptor)))
		return 1;
	if (cli_json) {
		print_json(&r->base);
		protobuf_c_message_free_unpacked(&r->base, NULL);
		return 0;
	}
	printf("%-8s %-16s %-3s %-8s %-36s %-12s %-8s %-16s %7s %8s %7s %10s %9s %-16s %s\n", "REVISION", "CONSUMER", "VER",
	       "PID", "POD", "CONTAINER", "BYTES", "SOURCE", "APPLIED", "REJECTED", "PENDING", "SUPERSEDED", "NOT_OWNED",
	       "NAMESPACE", "SELECTOR");
	for (i = 0; i < r->n_configs; i++) {
		const Procctl__V1__DesiredConfig *d = r->configs[i];
		const Procctl__V1__Selector *s = d->selector;
		const Procctl__V1__DesiredRollout *ro = d->rollout;
		char pid[16] = "-";
		if (s && s->pid)
			snprintf(pid, sizeof pid, "%d", s->pid);
		printf("%-8llu %-16s %-3u %-8s %-36s %-12.12s %-8zu %-16s %7u %8u %7u %10u %9u %-16s %s\n",
		       (unsigned long long)d->revision, s ? s->consumer : "", s ? s->schema_version : 0, pid,
		       s && s->pod_uid[0] ? s->pod_uid : "-", s && s->container_id[0] ? s->container_id : "-",
		       d->payload.len, d->source[0] ? d->source : "api", ro ? ro->applied : 0, ro ? ro->rejected : 0,
		       ro ? ro->pending : 0, ro ? ro->superseded : 0, ro ? ro->not_owned : 0,
		       s && s->namespace_[0] ? s->namespace_ : "-", s && s->label_selector[0] ? s->label_selector : "-");
	}
	protobuf_c_message_free_unpacked(&r->base, NULL);
	return 0;
}

static int desired_set(const struct opts *o)
{
	Procctl__V1__SetDesiredConfigRequest rq = PROCCTL__V1__SET_DESIRED_CONFIG_REQUEST__INIT;
	Procctl__V1__DesiredConfig d = PROCCTL__V1__DESIRED_CONFIG__INIT;
	Procctl__V1__SetDesiredConfigResponse *r;
	int e;
	if ((e = sub_takes(o, "set", CLI_SEL_OPTS | BIT(O_DATA) | BIT(O_FILE) | BIT(O_WAIT))) ||
	    (e = need_selector(o)) || (e = wait_of(o, &rq.wait_ms)) || (e = read_data(o, &d.payload)))
		return e;
	d.selector = (Procctl__V1__Selector *)&o->sel;
	rq.config = &d;
	r = (void *)call("/procctl.v1.NodeService/SetDesiredConfig", &rq.base,
			 &procctl__v1__set_desired_config_response__descriptor);
	free(d.payload.data);
	if (!r)
		return 1;
	if (!cli_json)
		printf("revision %llu\n", (unsigned long long)(r->config ? r->config->revision : 0));
	e = r->n_results ? results(r->results, r->n_results, o->wait) : 0;
	if (cli_json)
		print_json(&r->base);
	if (!r->n_results)
		fprintf(cli_json ? stderr : stdout,
			"no attached process matches %s now: the config applies to those that attach later\n",
			selector_words(o));
	protobuf_c_message_free_unpacked(&r->base, NULL);
	return e;
}

/* What rm removed, and where that leaves the processes that held it. */
static void removed(const struct opts *o, const Procctl__V1__DesiredConfig *d)
{
	const Procctl__V1__DesiredRollout *ro = d ? d->rollout : NULL;
	unsigned held = ro ? ro->applied + ro->rejected + ro->pending + ro->superseded + ro->not_owned : 0;
	printf("removed revision %llu (%s, %zu bytes)\n", (unsigned long long)(d ? d->revision : 0), selector_words(o),
	       d ? d->payload.len : 0);
	if (ro)
		printf("it was the config of %u process%s: %u applied, %u rejected, %u pending, %u superseded, "
		       "%u not owned\n", held, held == 1 ? "" : "es", ro->applied, ro->rejected, ro->pending,
		       ro->superseded, ro->not_owned);
	if (o->clear)
		printf("each that held it is given what applies without it (a less specific desired config, "
		       "or a clear):\n");
	else if (held)
		printf("those that hold it keep it until another config reaches them (--clear gives each what "
		       "applies without it)\n");
}

static int desired_rm(const struct opts *o)
{
	Procctl__V1__DeleteDesiredConfigRequest rq = PROCCTL__V1__DELETE_DESIRED_CONFIG_REQUEST__INIT;
	Procctl__V1__DeleteDesiredConfigResponse *r;
	int e;
	if ((e = sub_takes(o, "rm", CLI_SEL_OPTS | BIT(O_CLEAR) | BIT(O_WAIT))) || (e = need_selector(o)) ||
	    (e = wait_of(o, &rq.wait_ms)))
		return e;
	if (o->wait && !o->clear) {
		fprintf(stderr, "procctl: --wait: desired rm writes to no process without --clear: nothing to wait for\n");
		return 2;
	}
	rq.selector = (Procctl__V1__Selector *)&o->sel;
	rq.clear = o->clear;
	if (!(r = (void *)call("/procctl.v1.NodeService/DeleteDesiredConfig", &rq.base,
			       &procctl__v1__delete_desired_config_response__descriptor)))
		return 1;
	if (!cli_json)
		removed(o, r->config);
	e = o->clear ? results(r->results, r->n_results, o->wait) : 0;
	if (cli_json)
		print_json(&r->base);
	protobuf_c_message_free_unpacked(&r->base, NULL);
	return e;
}

int cmd_desired(const struct opts *o)
{
	if (o->nargs < 1)
		return bad_usage("desired", "needs ls, set or rm");
	if (!strcmp(o->args[0], "ls"))
		return desired_ls(o);
	if (!strcmp(o->args[0], "set"))
		return desired_set(o);
	if (!strcmp(o->args[0], "rm"))
		return desired_rm(o);
	return bad_usage(o->args[0], "not a desired command (ls, set or rm)");
}
