/* SPDX-License-Identifier: Apache-2.0 */
/* show.c - procctl's output: rows, names and ids as a user reads them. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

const char *short_enum(const ProtobufCEnumDescriptor *d, int v, const char *prefix)
{
	const ProtobufCEnumValue *e = protobuf_c_enum_descriptor_get_value(d, v);
	size_t n = strlen(prefix);
	if (!e)
		return "?";
	return strncmp(e->name, prefix, n) ? e->name : e->name + n;
}

/* A process's errno as its name (EINVAL), "-" for none. */
const char *errno_name(int32_t status, char buf[16])
{
	const char *n = status < 0 && status > -4096 ? strerrorname_np((int)-status) : NULL;
	if (!status)
		return "-";
	if (n)
		return n;
	snprintf(buf, 16, "%d", (int)status);
	return buf;
}

/* The rows of a Publish or Clear: the exit status: 1 if a process refused
 * it or was not written, else 3 if one did not ack in time (with --wait),
 * else 0. */
int results(Procctl__V1__PublishResult **r, size_t n, int wait)
{
	int pending = 0, failed = 0;
	size_t i;
	if (!cli_json)
		printf("%-8s %-16s %-6s %-11s %-8s %s\n", "PID", "INSTANCE", "GEN", "STATUS", "PSTATUS", "ERROR");
	for (i = 0; i < n; i++) {
		char num[16];
		switch (r[i]->status) {
		case PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_PENDING:
			pending = 1;
			break;
		case PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_APPLIED:
		case PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_SUPERSEDED:
		case PROCCTL__V1__PUBLISH_STATUS__PUBLISH_STATUS_WRITTEN:
			break;
		default:
			failed = 1;
		}
		if (!cli_json)
			printf("%-8d %-16s %-6llu %-11s %-8s %s\n", r[i]->process ? r[i]->process->pid : 0,
			       r[i]->process && r[i]->process->instance_id[0] ? r[i]->process->instance_id : "-",
			       (unsigned long long)r[i]->generation,
			       short_enum(&procctl__v1__publish_status__descriptor, r[i]->status, "PUBLISH_STATUS_"),
			       errno_name(r[i]->process_status, num), r[i]->error);
	}
	return failed ? 1 : wait && pending ? EXIT_PENDING : 0;
}

/* The selector as the user gave it, for messages. */
const char *selector_words(const struct opts *o)
{
	static char buf[2048];
	size_t n = 0;
	buf[0] = 0;
	if (o->sel.pid)
		n += (size_t)snprintf(buf, sizeof buf, "--pid %d%s", o->sel.pid, given(o->sel.consumer) ? " " : "");
	if (given(o->sel.consumer))
		n += (size_t)snprintf(buf + n, sizeof buf - n, "--consumer %s --schema %u", o->sel.consumer,
				      o->sel.schema_version);
	if (given(o->sel.pod_uid) && n < sizeof buf)
		n += (size_t)snprintf(buf + n, sizeof buf - n, "%s--pod %s", n ? " " : "", o->sel.pod_uid);
	if (given(o->sel.container_id) && n < sizeof buf)
		n += (size_t)snprintf(buf + n, sizeof buf - n, "%s--container %s", n ? " " : "", o->sel.container_id);
	if (given(o->sel.namespace_) && n < sizeof buf)
		n += (size_t)snprintf(buf + n, sizeof buf - n, "%s--namespace %s", n ? " " : "", o->sel.namespace_);
	if (given(o->sel.label_selector) && n < sizeof buf)
		snprintf(buf + n, sizeof buf - n, "%s--selector '%s'", n ? " " : "", o->sel.label_selector);
	return buf;
}

/* The OWNER column: how the daemon stands with the region. */
static const char *ownership(Procctl__V1__LeaseState s)
{
	switch (s) {
	case PROCCTL__V1__LEASE_STATE__LEASE_STATE_LIVE:
		return "owned";
	case PROCCTL__V1__LEASE_STATE__LEASE_STATE_CONFLICT:
		return "conflict";
	case PROCCTL__V1__LEASE_STATE__LEASE_STATE_BROKEN:
		return "broken";
	default:
		return "passive";
	}
}

void show_process(const Procctl__V1__Process *p)
{
	printf("%-8d %-16s %-3u %-36s %-12.12s %-7s %-6llu %-6llu %-8s %s%s%s%s%s\n", p->ref ? p->ref->pid : 0, p->consumer,
	       p->schema_version, p->pod_uid[0] ? p->pod_uid : "-", p->container_id[0] ? p->container_id : "-",
	       ownership(p->lease_state),
	       (unsigned long long)p->generation, (unsigned long long)p->acked_generation,
	       p->ack_result ? short_enum(&procctl__v1__ack_result__descriptor, p->ack_result, "ACK_RESULT_") : "-",
	       p->pod_name[0] ? p->pod_namespace : "-", p->pod_name[0] ? "/" : "", p->pod_name,
	       p->container_name[0] ? "/" : "", p->container_name);
}

void process_header(void)
{
	printf("%-8s %-16s %-3s %-36s %-12s %-7s %-6s %-6s %-8s %s\n", "PID", "CONSUMER", "VER", "POD", "CONTAINER",
	       "OWNER", "GEN", "ACKED", "ACK", "NAMESPACE/POD/CONTAINER");
}
