/* SPDX-License-Identifier: Apache-2.0 */
/* The procctl:hello probe: a SystemTap v3 note in this very binary, and a
 * perf uprobe placed at the note's address fires once per procctl_init. */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "procctl_agent.h"
#include "th.h"

#define MAX_SITES 16

static int uprobe_type(void)
{
	FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "r");
	int t = -1;
	if (f) {
		if (fscanf(f, "%d", &t) != 1)
			t = -1;
		fclose(f);
	}
	return t;
}

static void uprobe_fires(void **state)
{
	static unsigned char storage[PROCCTL_STATE_STORAGE(0, 8)];
	uint64_t off[MAX_SITES];
	int fds[MAX_SITES];
	char exe[4096];
	int type = uprobe_type(), n, i;
	ssize_t len;
	uint64_t hits = 0;
	procctl_config_t cfg;
	procctl_t ctx;
	(void)state;

	if (type < 0)
		TH_SKIP_OR_FAIL("no uprobe PMU (/sys/bus/event_source/devices/uprobe)");
	len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	assert_true(len > 0);
	exe[len] = 0;
	{
		int fd = open(exe, O_RDONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		n = procctl_elf_hello_sites(fd, off, MAX_SITES); /* core/elfnote.c */
		close(fd);
	}
	assert_true(n >= 1);
	for (i = 0; i < n; i++) {
		struct perf_event_attr a;
		memset(&a, 0, sizeof a);
		a.size = sizeof a;
		a.type = (uint32_t)type;
		a.config1 = (uint64_t)(uintptr_t)exe; /* uprobe_path */
		a.config2 = off[i];                   /* probe_offset */
		a.disabled = 1;
		fds[i] = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fds[i] < 0)
			TH_SKIP_OR_FAIL("perf_event_open(uprobe) refused: no permission");
		ioctl(fds[i], PERF_EVENT_IOC_ENABLE, 0);
	}
	memset(&cfg, 0, sizeof cfg);
	cfg.consumer = "hello";
	cfg.schema_version = 1;
	cfg.payload_capacity = 64;
	cfg.state_capacity = 8;
	cfg.state_storage = storage;
	assert_int_equal(procctl_init(&ctx, &cfg), 0);
	assert_int_equal(procctl_reinit(&ctx), 0); /* reinit says hello too */
	procctl_close(&ctx);
	for (i = 0; i < n; i++) {
		uint64_t c = 0;
		ioctl(fds[i], PERF_EVENT_IOC_DISABLE, 0);
		assert_int_equal(read(fds[i], &c, sizeof c), sizeof c);
		hits += c;
		close(fds[i]);
	}
	print_message("%d probe site(s), %llu hit(s)\n", n, (unsigned long long)hits);
	assert_int_equal(hits, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(uprobe_fires),
	};
	return TH_RUN(tests);
}
