/* The procctl:hello probe: a SystemTap v3 note in this very binary, and a
 * perf uprobe placed at the note's address fires once per procctl_init. */
#include <elf.h>
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

#include "th.h"

#define MAX_SITES 16

/* File offsets of every procctl:hello site in path (a 64-bit ELF). */
static int hello_sites(const char *path, uint64_t *off, int max)
{
	FILE *f = fopen(path, "rb");
	Elf64_Ehdr eh;
	Elf64_Shdr *sh;
	Elf64_Phdr *ph;
	char *shstr;
	int i, n = 0;

	assert_non_null(f);
	assert_int_equal(fread(&eh, sizeof eh, 1, f), 1);
	assert_memory_equal(eh.e_ident, ELFMAG, SELFMAG);
	sh = calloc(eh.e_shnum, sizeof *sh);
	ph = calloc(eh.e_phnum, sizeof *ph);
	fseek(f, (long)eh.e_shoff, SEEK_SET);
	assert_int_equal(fread(sh, sizeof *sh, eh.e_shnum, f), eh.e_shnum);
	fseek(f, (long)eh.e_phoff, SEEK_SET);
	assert_int_equal(fread(ph, sizeof *ph, eh.e_phnum, f), eh.e_phnum);
	shstr = malloc(sh[eh.e_shstrndx].sh_size);
	fseek(f, (long)sh[eh.e_shstrndx].sh_offset, SEEK_SET);
	assert_int_equal(fread(shstr, 1, sh[eh.e_shstrndx].sh_size, f), sh[eh.e_shstrndx].sh_size);
	for (i = 0; i < eh.e_shnum; i++) {
		unsigned char *d;
		size_t pos = 0;
		if (strcmp(shstr + sh[i].sh_name, ".note.stapsdt"))
			continue;
		d = malloc(sh[i].sh_size);
		fseek(f, (long)sh[i].sh_offset, SEEK_SET);
		assert_int_equal(fread(d, 1, sh[i].sh_size, f), sh[i].sh_size);
		while (pos + sizeof(Elf64_Nhdr) <= sh[i].sh_size) {
			Elf64_Nhdr nh;
			const unsigned char *name, *desc;
			memcpy(&nh, d + pos, sizeof nh);
			name = d + pos + sizeof nh;
			desc = name + ((nh.n_namesz + 3u) & ~3u);
			if (nh.n_type == 3 && !strcmp((const char *)name, "stapsdt") &&
			    !strcmp((const char *)desc + 24, "procctl") &&
			    !strcmp((const char *)desc + 24 + 8, "hello") && n < max) {
				uint64_t pc;
				int k;
				memcpy(&pc, desc, 8);
				for (k = 0; k < eh.e_phnum; k++)
					if (ph[k].p_type == PT_LOAD && pc >= ph[k].p_vaddr &&
					    pc < ph[k].p_vaddr + ph[k].p_filesz)
						off[n++] = pc - ph[k].p_vaddr + ph[k].p_offset;
			}
			pos += sizeof nh + ((nh.n_namesz + 3u) & ~3u) + ((nh.n_descsz + 3u) & ~3u);
		}
		free(d);
	}
	free(shstr);
	free(sh);
	free(ph);
	fclose(f);
	return n;
}

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
	n = hello_sites(exe, off, MAX_SITES);
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
