/* SPDX-License-Identifier: Apache-2.0 */
/* The ELF note parser of fast discovery (procctl_elf_hello_sites): the
 * procctl:hello sites of crafted files, and hostile files refused. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "th.h"
#include "procctl_agent.h"

static int memfile(const void *p, size_t n)
{
	int fd = memfd_create("elf", MFD_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, p, n), (ssize_t)n);
	return fd;
}

static int sites_of(const void *p, size_t n, uint64_t *off, int max)
{
	int fd = memfile(p, n), r = procctl_elf_hello_sites(fd, off, max);
	close(fd);
	return r;
}

/* A small ELF: one executable PT_LOAD (vaddr 0x400000, file offset 0),
 * sections null, .shstrtab, .note.stapsdt (the given bytes) and, with
 * base, .stapsdt.base at address base. */
struct elf {
	unsigned char b[4096];
	size_t len;
};

static const char shstr[] = "\0.shstrtab\0.note.stapsdt\0.stapsdt.base";

static void craft(struct elf *e, const void *notes, size_t nlen, uint64_t base)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)e->b;
	Elf64_Phdr *ph = (Elf64_Phdr *)(e->b + sizeof *eh);
	Elf64_Shdr sh[4];
	size_t str_at = 512, note_at = 640, sh_at = 2048;
	memset(e, 0, sizeof *e);
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_EXEC;
	eh->e_machine = EM_X86_64;
	eh->e_phoff = sizeof *eh;
	eh->e_phentsize = sizeof *ph;
	eh->e_phnum = 1;
	eh->e_shoff = sh_at;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = base ? 4 : 3;
	eh->e_shstrndx = 1;
	ph->p_type = PT_LOAD;
	ph->p_flags = PF_R | PF_X;
	ph->p_vaddr = 0x400000;
	ph->p_filesz = ph->p_memsz = 2048;
	memset(sh, 0, sizeof sh);
	sh[1].sh_name = 1;
	sh[1].sh_type = SHT_STRTAB;
	sh[1].sh_offset = str_at;
	sh[1].sh_size = sizeof shstr;
	sh[2].sh_name = 11;
	sh[2].sh_type = SHT_NOTE;
	sh[2].sh_offset = note_at;
	sh[2].sh_size = nlen;
	sh[3].sh_name = 25;
	sh[3].sh_type = SHT_PROGBITS;
	sh[3].sh_addr = base;
	memcpy(e->b + str_at, shstr, sizeof shstr);
	assert_true(nlen <= sh_at - note_at);
	memcpy(e->b + note_at, notes, nlen);
	memcpy(e->b + sh_at, sh, sizeof sh);
	e->len = sh_at + eh->e_shnum * sizeof(Elf64_Shdr);
}

/* One stapsdt note for provider/name at pc (with base): its bytes in out. */
static size_t note(unsigned char *out, const char *provider, const char *name, uint64_t pc, uint64_t base)
{
	Elf64_Nhdr nh;
	unsigned char desc[256];
	size_t d = 0, n = 0;
	memcpy(desc, &pc, 8);
	memcpy(desc + 8, &base, 8);
	memset(desc + 16, 0, 8);
	d = 24;
	memcpy(desc + d, provider, strlen(provider) + 1);
	d += strlen(provider) + 1;
	memcpy(desc + d, name, strlen(name) + 1);
	d += strlen(name) + 1;
	desc[d++] = 0; /* no arguments */
	nh.n_namesz = 8;
	nh.n_descsz = (uint32_t)d;
	nh.n_type = 3;
	memcpy(out, &nh, sizeof nh);
	n = sizeof nh;
	memcpy(out + n, "stapsdt", 8);
	n += 8;
	memcpy(out + n, desc, d);
	n += (d + 3) & ~(size_t)3;
	return n;
}

static void parser_finds_sites(void **state)
{
	unsigned char notes[1024];
	uint64_t off[4];
	struct elf e;
	size_t n;
	(void)state;

	/* Two sites and a probe of another provider: the two, as file offsets. */
	n = note(notes, "procctl", "hello", 0x400100, 0);
	n += note(notes + n, "other", "hello", 0x400200, 0);
	n += note(notes + n, "procctl", "hello", 0x400300, 0);
	craft(&e, notes, n, 0);
	assert_int_equal(sites_of(e.b, e.len, off, 4), 2);
	assert_int_equal(off[0], 0x100);
	assert_int_equal(off[1], 0x300);
	/* max bounds what is written. */
	assert_int_equal(sites_of(e.b, e.len, off, 1), 1);
	/* Prelinked: .stapsdt.base now at 0x400800, recorded at 0x400700. */
	n = note(notes, "procctl", "hello", 0x400100, 0x400700);
	craft(&e, notes, n, 0x400800);
	assert_int_equal(sites_of(e.b, e.len, off, 4), 1);
	assert_int_equal(off[0], 0x200);
	/* A pc in no executable segment is no site. */
	n = note(notes, "procctl", "hello", 0x900000, 0);
	craft(&e, notes, n, 0);
	assert_int_equal(sites_of(e.b, e.len, off, 4), 0);
}

static void parser_refuses_hostile_files(void **state)
{
	unsigned char notes[1024];
	uint64_t off[4];
	struct elf e, bad;
	Elf64_Ehdr *eh = (Elf64_Ehdr *)bad.b;
	Elf64_Shdr *sh;
	size_t n;
	int fd;
	(void)state;

	n = note(notes, "procctl", "hello", 0x400100, 0);
	craft(&e, notes, n, 0);
	assert_int_equal(sites_of("#!/bin/sh\n", 10, off, 4), -ENOEXEC);
	assert_int_equal(sites_of(e.b, 10, off, 4), -ENOEXEC);        /* shorter than a header */
	assert_int_equal(sites_of(e.b, e.len - 1, off, 4), -ENOEXEC); /* section table past the end */
	bad = e;
	eh->e_ident[EI_CLASS] = ELFCLASS32;
	assert_int_equal(sites_of(bad.b, bad.len, off, 4), -ENOEXEC);
	bad = e;
	eh->e_ident[EI_DATA] = ELFDATA2MSB;
	assert_int_equal(sites_of(bad.b, bad.len, off, 4), -ENOEXEC);
	bad = e;
	eh->e_shnum = 0xffff; /* lying counts */
	assert_int_equal(sites_of(bad.b, bad.len, off, 4), -ENOEXEC);
	bad = e;
	eh->e_shstrndx = 7;
	assert_int_equal(sites_of(bad.b, bad.len, off, 4), -ENOEXEC);
	bad = e;
	eh->e_shoff = UINT64_MAX - 16; /* offset + size overflows */
	assert_int_equal(sites_of(bad.b, bad.len, off, 4), -ENOEXEC);
	bad = e;
	sh = (Elf64_Shdr *)(bad.b + eh->e_shoff);
	sh[2].sh_size = 1u << 30; /* a huge note section */
	assert_int_equal(sites_of(bad.b, bad.len, off, 4), -EFBIG);
	bad = e;
	sh[2].sh_offset = bad.len - 4; /* notes past the end */
	assert_int_equal(sites_of(bad.b, bad.len, off, 4), -ENOEXEC);
	bad = e;
	sh[1].sh_size = 1u << 30; /* a huge string table */
	assert_int_equal(sites_of(bad.b, bad.len, off, 4), -ENOEXEC);
	bad = e;
	memcpy(bad.b + 640 + 4, "\xff\xff\xff\x7f", 4); /* descsz runs past the section */
	assert_int_equal(sites_of(bad.b, bad.len, off, 4), -ENOEXEC);
	bad = e;
	eh->e_machine = EM_ARM; /* another architecture's code: no uprobe in it */
	assert_int_equal(sites_of(bad.b, bad.len, off, 4), -ENOEXEC);
	bad = e;
	eh->e_type = ET_REL;
	assert_int_equal(sites_of(bad.b, bad.len, off, 4), -ENOEXEC);
	{
		/* Many section headers on one big note section: the notes of
		 * all of them together are bounded (1 MiB). */
		size_t big = 700 << 10, len = 4096 + big;
		unsigned char *f = calloc(1, len);
		Elf64_Shdr *fs;
		assert_non_null(f);
		memcpy(f, e.b, e.len);
		eh = (Elf64_Ehdr *)f;
		eh->e_shoff = 2048;
		eh->e_shnum = 4;
		fs = (Elf64_Shdr *)(f + 2048);
		fs[2].sh_offset = fs[3].sh_offset = 4096;
		fs[2].sh_size = fs[3].sh_size = big;
		fs[3].sh_type = SHT_NOTE;
		fs[3].sh_name = 11; /* .note.stapsdt as well */
		assert_int_equal(sites_of(f, len, off, 4), -EFBIG);
		fs[3].sh_type = SHT_PROGBITS; /* one of them: read, no site in zeros */
		assert_int_equal(sites_of(f, len, off, 4), 0);
		free(f);
		eh = (Elf64_Ehdr *)bad.b;
	}
	/* Strings that do not end inside their note: no site. */
	n = note(notes, "procctl", "hello", 0x400100, 0);
	memset(notes + 12 + 8 + 24, 'x', n - 12 - 8 - 24);
	craft(&bad, notes, n, 0);
	assert_int_equal(sites_of(bad.b, bad.len, off, 4), 0);
	/* Not a regular file. */
	fd = open("/", O_RDONLY | O_DIRECTORY);
	assert_int_equal(procctl_elf_hello_sites(fd, off, 4), -ENOEXEC);
	close(fd);
	/* A real program without the probe. */
	fd = open("/bin/sh", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(procctl_elf_hello_sites(fd, off, 4), 0);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parser_finds_sites),
		cmocka_unit_test(parser_refuses_hostile_files),
	};
	return TH_RUN(tests);
}
