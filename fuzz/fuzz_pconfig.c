/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_pconfig - one line of a Kubernetes API server's watch of
 * ProcessConfigs, the API server (and whoever may write the objects) as
 * a hostile peer. Accepted: the object told by a UID and DNS names, its
 * version printable; a spec that holds has a consumer name, a schema
 * version, a container's name or none, a selector labelsel takes back as
 * it is (canonical), and 1 byte to 1 MiB of payload, its copy the same; one
 * that does not holds no payload and says why, printably. Refused: the
 * reason is printable, and a UID told to forget is one. */
#define _GNU_SOURCE 1
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "kube/kubeobj.h"
#include "kube/labelsel.h"
#include "kube/pconfig.h"

static void check(const struct pconfig *p)
{
	static char canon[LABELSEL_MAX + 1], err[512];
	struct pconfig *d;
	if (!kube_uid_ok(p->uid, strlen(p->uid)) || !kube_dns_label_ok(p->ns, strlen(p->ns)) ||
	    !kube_dns_name_ok(p->name, strlen(p->name)) || p->generation < 0 || p->created < 0)
		abort();
	fuzz_printable(p->rv);
	fuzz_printable(p->why);
	if (p->why[0]) {
		if (p->len)
			abort();
		return;
	}
	if (procctl_name_valid(p->consumer, PROCCTL_CONSUMER_MAX) < 0 || !p->version || !p->len ||
	    p->len > PROCCTL_PAYLOAD_MAX || (p->container[0] && !kube_dns_label_ok(p->container, strlen(p->container))))
		abort();
	if (labelsel_check(p->labels, strlen(p->labels), canon, sizeof canon, err, sizeof err) < 0 || strcmp(canon, p->labels))
		abort();
	if (!(d = pconfig_dup(p)) || memcmp(d, p, pconfig_size(p)))
		abort();
	free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct pconfig p;
	static struct kube_event ev = {.obj = &p};
	static char err[512];

	err[0] = 0;
	if (kube_event_parse(&pconfig_kind, (const char *)data, size, &ev, err, sizeof err) < 0) {
		if (!err[0])
			abort();
		fuzz_printable(err);
		if (pconfig_kind.forget((const char *)data, size, &p) == 0 && !kube_uid_ok(p.uid, strlen(p.uid)))
			abort();
		return 0;
	}
	fuzz_printable(ev.rv);
	fuzz_printable(ev.reason);
	if (ev.type == KUBE_ERROR || ev.type == KUBE_BOOKMARK)
		return 0;
	if (strcmp(ev.rv, p.rv))
		abort();
	check(&p);
	return 0;
}
