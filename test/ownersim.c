/* SPDX-License-Identifier: Apache-2.0 */
/* ownersim - an agent in its own process for the registry tests: it owns
 * CONSUMER's node lock in LOCKDIR (when it can) with a lease of LEASE_MS.
 *
 *   ownersim CONSUMER LOCKDIR LEASE_MS MODE
 *
 *   run        dispatch until SIGTERM, then hand off (RELEASED)
 *   uninstall  the same, but uninstall on SIGTERM
 *   flood      publish self-checking configs (flood_text) as fast as it can
 *   midwrite   publish flood_text 4242, then open a write section, scribble
 *              on the inactive slot and wait there to be killed
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "flood.h"

static procctl_registry_t *reg;

static void on_term(int sig)
{
	(void)sig;
	procctl_registry_stop(reg);
}

static void count(const struct procctl_event *ev, void *arg)
{
	if (ev->type == PROCCTL_EV_ATTACHED)
		++*(int *)arg;
}

int main(int argc, char **argv)
{
	struct procctl_registry_opts o;
	char buf[FLOOD_TEXT_MAX];
	int attached = 0;
	const char *mode;

	if (argc != 5)
		return 2;
	mode = argv[4];
	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.consumer = argv[1];
	o.lock_dir = argv[2];
	o.lease_ns = strtoull(argv[3], NULL, 10) * 1000000ull;
	o.rescan_ns = 200000000ull;
	o.on_event = count;
	o.arg = &attached;
	reg = procctl_registry_new(&o);
	if (!reg)
		return 1;
	signal(SIGTERM, on_term);
	if (!strcmp(mode, "flood") || !strcmp(mode, "midwrite")) {
		procctl_client_t *c;
		uint64_t i;
		while (attached < 1) {
			struct pollfd p = {procctl_registry_fd(reg), POLLIN, 0};
			poll(&p, 1, 10);
			procctl_registry_dispatch(reg);
		}
		procctl_registry_clients(reg, &c, 1);
		if (!strcmp(mode, "midwrite")) {
			struct procctl_region *rg = &c->r;
			if (procctl_client_write(c, buf, (size_t)flood_text(4242, buf)) < 0)
				return 3; /* not the owner: the test started it wrong */
			__atomic_store_n(&rg->ctrl->seq, rg->seq + 1u, __ATOMIC_RELEASE);
			memset(rg->map + rg->hdr.slot_off[rg->active ^ 1u], 0x5a, 512);
			for (;;)
				pause();
		}
		for (i = 1;; i++)
			procctl_client_write(c, buf, (size_t)flood_text(i, buf));
	}
	procctl_registry_run(reg);
	procctl_registry_close(reg, !strcmp(mode, "uninstall") ? PROCCTL_CLOSE_UNINSTALL : 0);
	return 0;
}
