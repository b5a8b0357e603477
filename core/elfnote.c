/* SPDX-License-Identifier: Apache-2.0 */
/* elfnote.c - the procctl:hello sites of an ELF file, read as hostile.
 *
 * A site is a SystemTap v3 note (.note.stapsdt, owner "stapsdt", type 3)
 * with provider "procctl" and name "hello". Its pc is a link-time address:
 * moved by the difference between where .stapsdt.base ended up and the
 * base the note recorded (prelink), then mapped to a file offset through
 * the executable PT_LOAD that holds it. That offset is where a uprobe
 * goes.
 *
 * Every count, offset and size is checked against the file's size and the
 * caps below before it is used (the notes of all .note.stapsdt sections
 * together: MAX_NOTES bytes); every string must end inside what it was
 * read from. Only 64-bit little-endian programs and libraries (ET_EXEC,
 * ET_DYN) of this machine's architecture are read: a uprobe in another
 * architecture's code (an emulated program) would break it.
 */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "procctl_agent.h"

#define MAX_SECTIONS 4096
#define MAX_SEGMENTS 256
#define MAX_SHSTRTAB (1u << 20)
#define MAX_NOTES (1u << 20) /* bytes of .note.stapsdt */
#define NT_STAPSDT 3

#if defined(__x86_64__)
#define NATIVE_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define NATIVE_MACHINE EM_AARCH64
#elif defined(__riscv) && __riscv_xlen == 64
#define NATIVE_MACHINE EM_RISCV
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NATIVE_MACHINE EM_PPC64
#elif defined(__s390x__) || (defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__)
#error "elfnote.c reads little-endian ELF fields as host integers"
#else
#error "elfnote.c: name this architecture's e_machine"
#endif

/* [off, off + len) inside a file of size sz. */
static int within(uint64_t off, uint64_t len, uint64_t sz)
{
	return off <= sz && len <= sz - off;
}

static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENOEXEC; /* shorter than it said */
		got += (size_t)n;
	}
	return 0;
}

/* A malloc'd copy of [off, off + len), or NULL with *err set. */
static void *load(int fd, uint64_t off, uint64_t len, uint64_t sz, int *err)
{
	void *p;
	if (!within(off, len, sz)) {
		*err = -ENOEXEC;
		return NULL;
	}
	if (!(p = malloc(len ? (size_t)len : 1))) {
		*err = -ENOMEM;
		return NULL;
	}
	if ((*err = read_at(fd, p, (size_t)len, off)) < 0) {
		free(p);
		return NULL;
	}
	return p;
}

/* The file offset of link-time address pc: in an executable PT_LOAD. */
static int pc_offset(const Elf64_Phdr *ph, size_t nph, uint64_t pc, uint64_t sz, uint64_t *off)
{
	size_t i;
	for (i = 0; i < nph; i++) {
		if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_X))
			continue;
		if (pc >= ph[i].p_vaddr && pc - ph[i].p_vaddr < ph[i].p_filesz &&
		    within(ph[i].p_offset, ph[i].p_filesz, sz)) {
			*off = pc - ph[i].p_vaddr + ph[i].p_offset;
			return 0;
		}
	}
	return -1;
}

/* Walk the notes of one .note.stapsdt section; append hello sites. */
static int scan_notes(const unsigned char *d, uint64_t len, int have_base, uint64_t base_addr, const Elf64_Phdr *ph,
		      size_t nph, uint64_t sz, uint64_t *off, int max, int n)
{
	uint64_t pos = 0;
	while (len - pos >= sizeof(Elf64_Nhdr)) {
		Elf64_Nhdr nh;
		uint64_t namesz, descsz, pc, base;
		const unsigned char *name, *desc, *end, *provider, *probe;
		memcpy(&nh, d + pos, sizeof nh);
		pos += sizeof nh;
		namesz = ((uint64_t)nh.n_namesz + 3) & ~(uint64_t)3;
		descsz = ((uint64_t)nh.n_descsz + 3) & ~(uint64_t)3;
		if (namesz > len - pos || descsz > len - pos - namesz)
			return -ENOEXEC; /* a note that runs past its section */
		name = d + pos;
		desc = name + namesz;
		pos += namesz + descsz;
		if (nh.n_type != NT_STAPSDT || nh.n_namesz != 8 || memcmp(name, "stapsdt", 8) || nh.n_descsz < 3 * 8 + 3)
			continue;
		end = desc + nh.n_descsz;
		provider = desc + 3 * 8;
		if (!(probe = memchr(provider, 0, (size_t)(end - provider))) || ++probe >= end ||
		    !memchr(probe, 0, (size_t)(end - probe)))
			continue; /* strings that do not end in the note */
		if (strcmp((const char *)provider, "procctl") || strcmp((const char *)probe, "hello"))
			continue;
		memcpy(&pc, desc, 8);
		memcpy(&base, desc + 8, 8);
		if (have_base && base)
			pc += base_addr - base; /* prelinked: moved as .stapsdt.base moved */
		if (n < max && pc_offset(ph, nph, pc, sz, &off[n]) == 0)
			n++;
	}
	return n;
}

int procctl_elf_hello_sites(int fd, uint64_t *off, int max)
{
	Elf64_Ehdr eh;
	Elf64_Shdr *sh = NULL;
	Elf64_Phdr *ph = NULL;
	char *shstr = NULL;
	struct stat st;
	uint64_t sz, base_addr = 0, strsz, notes = 0;
	int i, n = 0, err = 0, have_base = 0;

	if (!off || max < 0)
		return -EINVAL;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -ENOEXEC;
	sz = (uint64_t)st.st_size;
	if (sz < sizeof eh || (err = read_at(fd, &eh, sizeof eh, 0)) < 0)
		return err < 0 ? err : -ENOEXEC;
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != NATIVE_MACHINE ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) || eh.e_shentsize != sizeof(Elf64_Shdr) ||
	    (eh.e_phnum && eh.e_phentsize != sizeof(Elf64_Phdr)) || eh.e_shnum > MAX_SECTIONS ||
	    eh.e_phnum > MAX_SEGMENTS || eh.e_shstrndx >= eh.e_shnum)
		return -ENOEXEC; /* also: no sections (a stripped note is gone), or extended numbering */
	if (!(sh = load(fd, eh.e_shoff, (uint64_t)eh.e_shnum * sizeof *sh, sz, &err)) ||
	    !(ph = load(fd, eh.e_phoff, (uint64_t)eh.e_phnum * sizeof *ph, sz, &err)))
		goto out;
	strsz = sh[eh.e_shstrndx].sh_size;
	if (sh[eh.e_shstrndx].sh_type != SHT_STRTAB || strsz == 0 || strsz > MAX_SHSTRTAB) {
		err = -ENOEXEC;
		goto out;
	}
	if (!(shstr = load(fd, sh[eh.e_shstrndx].sh_offset, strsz, sz, &err)))
		goto out;
	shstr[strsz - 1] = 0; /* every name ends inside the table */
	for (i = 0; i < eh.e_shnum; i++)
		if (sh[i].sh_name < strsz && !strcmp(shstr + sh[i].sh_name, ".stapsdt.base")) {
			have_base = 1;
			base_addr = sh[i].sh_addr;
		}
	for (i = 0; i < eh.e_shnum && n < max; i++) {
		unsigned char *d;
		if (sh[i].sh_type != SHT_NOTE || sh[i].sh_name >= strsz || strcmp(shstr + sh[i].sh_name, ".note.stapsdt"))
			continue;
		if (sh[i].sh_size > MAX_NOTES - notes) { /* all of them together: a bounded amount of work */
			err = -EFBIG;
			goto out;
		}
		notes += sh[i].sh_size;
		if (!(d = load(fd, sh[i].sh_offset, sh[i].sh_size, sz, &err)))
			goto out;
		n = scan_notes(d, sh[i].sh_size, have_base, base_addr, ph, eh.e_phnum, sz, off, max, n);
		free(d);
		if (n < 0) {
			err = n;
			goto out;
		}
	}
out:
	free(shstr);
	free(ph);
	free(sh);
	return err < 0 ? err : n;
}
