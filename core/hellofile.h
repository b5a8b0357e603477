/* SPDX-License-Identifier: Apache-2.0 */
/* hellofile.h - the hello probe's way into mapped files (hello.c): the
 * mappings that exist at its start, and a mapped file opened to be read
 * as hostile: without running any device's open, checked to be the very
 * inode a perf record named. Internal to libprocctl-agent. */
#ifndef PROCCTL_HELLOFILE_H
#define PROCCTL_HELLOFILE_H

/* This file's globals carry the library's prefix in its symbols (a program
 * linking libprocctl-agent.a may have a hello_open_mapped of its own). */
#define hello_open_mapped procctl__hello_open_mapped
#define hello_sweep procctl__hello_sweep

#include <stdint.h>
#include <sys/types.h>

/* A file by device and inode, as MMAP2 records name it. */
struct hello_key {
	uint32_t maj, min;
	uint64_t ino;
};

/* The file mapped at [start, end) in pid (proc: the procfs it is under),
 * opened for reading: the mapping itself (/proc/<pid>/map_files,
 * CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN), else
 * the path the process named, resolved inside its root with no magic
 * links. Either is opened O_PATH first (no device's open runs) and must be
 * the very inode of the record (not one swapped in since), a regular file
 * and not on FUSE (whose server could stall the agent's reads). -1 when
 * it cannot be. */
int hello_open_mapped(const char *proc, pid_t pid, uint64_t start, uint64_t end, const struct hello_key *k,
		      const char *path);

/* One executable file mapping of pid at [start, end): path as
 * /proc/<pid>/maps names it (NULL: none). */
typedef void (*hello_mapping_fn)(void *arg, pid_t pid, uint64_t start, uint64_t end, const struct hello_key *k,
				 const char *path);

/* Every executable file mapping that exists now, from /proc/<pid>/maps of
 * every process under proc. */
void hello_sweep(const char *proc, hello_mapping_fn fn, void *arg);

#endif
