/* SPDX-License-Identifier: Apache-2.0 */
/* The procctl:hello probe: a SystemTap v3 note in this very binary, byte
 * for byte as SPEC.md 2.4's table gives it, and a perf uprobe placed at
 * the note's address fires once per procctl_init. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
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

/* This binary's file, read whole. */
static unsigned char *self_exe(size_t *len)
{
	struct stat st;
	unsigned char *b;
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	b = malloc((size_t)st.st_size);
	assert_non_null(b);
	assert_int_equal(pread(fd, b, (size_t)st.st_size, 0), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return b;
}

static uint64_t u64_at(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

/* The note procctl.h's inline assembly emits, checked field by field
 * against SPEC.md 2.4's table (the compiler's and assembler's output, not
 * the parser's reading of it). */
static void note_bytes_as_spec(void **state)
{
	size_t len, i, pos;
	unsigned char *b = self_exe(&len);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)(const void *)b;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(const void *)(b + eh->e_shoff);
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(const void *)(b + eh->e_phoff);
	const char *names = (const char *)b + sh[eh->e_shstrndx].sh_offset;
	uint64_t base_addr = 0;
	int notes = 0, found = 0;
	regex_t args;
	(void)state;

	assert_int_equal(regcomp(&args, "^-4@[^ ]+ 8@[^ ]+ 8@[^ ]+$", REG_EXTENDED | REG_NOSUB), 0);
	for (i = 0; i < eh->e_shnum; i++)
		if (!strcmp(names + sh[i].sh_name, ".stapsdt.base")) {
			assert_int_equal(sh[i].sh_size, 1);
			assert_true(sh[i].sh_flags & SHF_ALLOC);
			base_addr = sh[i].sh_addr;
		}
	assert_true(base_addr != 0);
	for (i = 0; i < eh->e_shnum; i++) {
		const unsigned char *d = b + sh[i].sh_offset;
		if (strcmp(names + sh[i].sh_name, ".note.stapsdt"))
			continue;
		notes++;
		assert_int_equal(sh[i].sh_type, SHT_NOTE);
		assert_int_equal(sh[i].sh_offset % 4, 0);
		for (pos = 0; pos < sh[i].sh_size;) {
			const unsigned char *n = d + pos;
			uint32_t namesz, descsz, type;
			const char *arg;
			size_t j;
			memcpy(&namesz, n, 4);
			memcpy(&descsz, n + 4, 4);
			memcpy(&type, n + 8, 4);
			pos += 12 + ((namesz + 3u) & ~3u) + ((descsz + 3u) & ~3u);
			if (namesz != 8 || descsz < 24 + 8 + 6 + 1 || pos > sh[i].sh_size) /* not one of ours */
				continue;
			if (strcmp((const char *)n + 44, "procctl") || strcmp((const char *)n + 52, "hello"))
				continue;
			found++;
			assert_int_equal(namesz, 8);
			assert_int_equal(type, 3);
			assert_memory_equal(n + 12, "stapsdt", 8);
			assert_int_equal(u64_at(n + 28), base_addr);
			assert_int_equal(u64_at(n + 36), 0);
			arg = (const char *)n + 58;
			assert_int_equal(regexec(&args, arg, 0, NULL, 0), 0);
			assert_int_equal(descsz, 24 + 8 + 6 + strlen(arg) + 1);
			for (j = 12 + 8 + descsz; j < ((12 + 8 + descsz + 3u) & ~3u); j++)
				assert_int_equal(n[j], 0);
			for (j = 0; j < eh->e_phnum; j++) /* pc: in an executable PT_LOAD */
				if (ph[j].p_type == PT_LOAD && (ph[j].p_flags & PF_X) && u64_at(n + 20) >= ph[j].p_vaddr &&
				    u64_at(n + 20) - ph[j].p_vaddr < ph[j].p_filesz)
					break;
			assert_true(j < eh->e_phnum);
		}
	}
	print_message("%d .note.stapsdt section(s), %d procctl:hello note(s)\n", notes, found);
	assert_true(found >= 1);
	regfree(&args);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(note_bytes_as_spec),
		cmocka_unit_test(uprobe_fires),
	};
	return TH_RUN(tests);
}
