/* SPDX-License-Identifier: Apache-2.0 */
/* statedata.h - a process's own state bytes as procctl shows them: a
 * schema it knows, text, or their size. The bytes are the process's: a
 * hostile one chooses them, so nothing here trusts a count or a NUL. */
#ifndef PROCCTL_CLI_STATEDATA_H
#define PROCCTL_CLI_STATEDATA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* 1 when every byte is printable ASCII. */
int printable(const uint8_t *p, size_t n);
/* The lines of `procctl state` after its resources: GPU PC sampling's
 * status (pcsampling_schema.h: its size and magic), text (printable), or
 * "N bytes". Only printable ASCII and newlines, at most 3 + PCSAMPLING_TOP
 * lines. */
void show_state_data(FILE *out, const uint8_t *p, size_t n);

#endif
