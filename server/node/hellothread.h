/* SPDX-License-Identifier: Apache-2.0 */
/* hellothread.h - the procctl:hello probe on a thread of its own, so
 * that nothing it does holds the loop: reading the host's records, and
 * for each file newly mapped, opening it through /proc, reading its ELF
 * notes and placing a uprobe on every site and CPU (16 sites on 16 CPUs
 * is 256 registrations, each walking every process that maps the file).
 * Its on_pid and on_exec (procctl_registry_notify, _exec, _rescan) are
 * any thread's. */
#ifndef PROCCTL_NODE_HELLOTHREAD_H
#define PROCCTL_NODE_HELLOTHREAD_H

#include "procctl_agent.h"

struct hellothread;

/* Runs h (which it owns from now on, freed by hellothread_free) on a new
 * thread; wake is written (eventfd) when the thread ends on an error.
 * NULL, with errno, when the thread cannot start: h is freed then. */
struct hellothread *hellothread_start(procctl_hello_t *h, int wake);
/* The stats as of the thread's last dispatch. */
void hellothread_stats(struct hellothread *t, struct procctl_hello_stats *out);
/* 0 while it runs; -errno once procctl_hello_dispatch failed (it ended). */
int hellothread_error(struct hellothread *t);
/* End the thread (no on_pid or on_exec after it returns); once only is
 * needed, more is harmless. */
void hellothread_stop(struct hellothread *t);
/* Stop it if not stopped, close its uprobes (slow: see node_close) and
 * free it. NULL is a no-op. */
void hellothread_free(struct hellothread *t);

#endif
