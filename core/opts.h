/* SPDX-License-Identifier: Apache-2.0 */
/* opts.h - the agent library's options structs, taken one way (libbpf's
 * OPTS_VALID). Each begins with size_t sz, the size the caller was built
 * with:
 * - an older caller's smaller struct is fine: the fields it lacks read 0,
 *   as if it had zeroed them;
 * - a newer caller's larger one is fine while every byte past the fields
 *   this library knows is 0: a field it cannot honour is refused, never
 *   dropped;
 * - sz under sizeof(size_t) (a caller that set none) or over
 *   PROCCTL_OPTS_MAX (not a size at all) is refused.
 * No opts struct has trailing padding (each ends on a field, static
 *   asserts say so), so "past the fields known" is "past sizeof". */
#ifndef PROCCTL_OPTS_H
#define PROCCTL_OPTS_H

#include <stddef.h>

#define PROCCTL_OPTS_MAX 4096

/* Where type's field ends: an opts struct's sizeof must be its last's. */
#define PROCCTL_OPTS_END(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

/* Out structs (stats, info, snapshots) go the other way: the caller
 * passes sizeof its struct, sz, beside it. Give out the first sz bytes of
 * this library's (mine, msz bytes), and 0 past msz: a newer caller's
 * fields this library does not know read 0, an older caller gets those it
 * knows. 0, or -EINVAL (out NULL, sz 0). */
int procctl_out_give(void *out, size_t sz, const void *mine, size_t msz);

/* Take the caller's opts (NULL: every field 0) into o, this library's
 * struct of osz bytes, zeroed first. 0, or -EINVAL (o is then all 0). */
int procctl_opts_take(void *o, size_t osz, const void *opts);

#endif
