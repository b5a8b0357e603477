/* SPDX-License-Identifier: Apache-2.0 */
/* What test_desired and test_desired_files share: selectors, the store's
 * calls with their checks, and a scratch directory per run. */
#ifndef PROCCTL_DESIRED_TH_H
#define PROCCTL_DESIRED_TH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "desired/desired.h"
#include "th.h"

#define C "billing"
#define P1 "0b6d7a2e-5c1f-4c1a-9f3e-2d7b8c9a1e4f"
#define P2 "1a2b3c4d-1111-2222-3333-444455556666"
#define P3 "6c3b0d8f2e1a4b5c9d7e8f0a1b2c3d4e"
#define C1 "3f4e5d6c7b8a9f0e1d2c3b4a5f6e7d8c9b0a1f2e3d4c5b6a7f8e9d0c1b2a3f4e"
#define C2 "aaaabbbbccccddddeeeeffff0000111122223333444455556666777788889999"
#define C3 "0123456789abcdef"

/* The start time of the test's process pid: a pid config is bound to
 * it, and a process's key carries it. */
#define START(pid) (1000u * (uint64_t)(pid))

extern char desired_th_dir[64]; /* the scratch directory of this run */

/* A selector or a process's key: "" and 0 name nothing. */
struct selector key(pid_t pid, const char *consumer, uint32_t version, const char *pod, const char *ctr);
/* Set a string payload; the call's return. */
int set(struct desired_store *s, struct selector sel, const char *payload, const struct desired **out,
	const struct desired **other);
void set_ok(struct desired_store *s, struct selector sel, const char *payload);
void payload_is(const struct desired *d, const char *payload);
/* Two stores holding the same configs. */
void same_store(const struct desired_store *a, const struct desired_store *b);

/* name under the run's scratch directory. */
void subdir(char *path, size_t len, const char *name);
void write_file(const char *path, const void *buf, size_t len);
uint32_t le32(const uint8_t *b);
int exists(const char *path);
/* Load dir, whose file (file) is damaged: an empty store, the file
 * renamed FILE.bad-SECONDS beside it (not deleted), and why. */
void set_aside_ok(struct desired_store *s, const char *dir, const char *file);

/* cmocka group fixtures: make the scratch directory, remove it. */
int desired_th_setup(void **state);
int desired_th_teardown(void **state);

#endif
