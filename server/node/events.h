/* SPDX-License-Identifier: Apache-2.0 */
/* events.h - the event history WatchEvents streams read: a ring of the
 * last N events, each packed once (a procctl.v1.WatchEventsResponse) with
 * the keys filters match on. The loop appends; watchers on the gRPC
 * thread read at their own pace through a cursor, so a watcher costs no
 * memory of its own, a slow one is noticed when the ring laps it, and a
 * resume is a cursor placed again. */
#ifndef PROCCTL_NODE_EVENTS_H
#define PROCCTL_NODE_EVENTS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "match/selector.h"

struct events;

/* A history of cap events (cap >= 1). NULL with errno. */
struct events *events_new(size_t cap);
void events_free(struct events *ev);

/* The sequence number of the last event appended (0: none yet). The next
 * event is last + 1: the loop packs it with that number, then appends. */
uint64_t events_last(struct events *ev);

/* The memory the history holds: the slots written so far (at most cap;
 * the array's pages are touched as they are) and their packed events'
 * allocations (malloc_usable_size: malloc's chunk headers not counted).
 * It grows as the history fills, to cap slots, and not after. */
size_t events_bytes(struct events *ev);

/* Append an event of len packed bytes (copied): its sequence number, or
 * -ENOMEM (nothing appended). Loop thread only. */
int64_t events_append(struct events *ev, const struct selector *k, const void *bytes, size_t len);

/* 1 when seq is a point a watcher may continue after: every event after
 * it is still kept (and seq was handed out). */
int events_resumable(struct events *ev, uint64_t seq);

/* The first event after *cursor that matches filter: 1 with a malloc'd
 * copy in *out (*len bytes) and *cursor moved to it; 0 none yet (*cursor
 * moved past the events that did not match); -ERANGE the events after
 * *cursor are no longer kept (the watcher fell behind); -ENOMEM. Any
 * thread. */
int events_next(struct events *ev, uint64_t *cursor, const struct selector *filter, void **out, size_t *len);

#endif
