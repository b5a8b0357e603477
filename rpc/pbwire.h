/* SPDX-License-Identifier: Apache-2.0 */
/* pbwire.h - what protobuf-c's unpack does not check in a request's
 * bytes. It hands string fields over as C strings, so "echo\0x" would be
 * read as "echo": every string field, at any depth, is checked whole on
 * the wire first. */
#ifndef PROCCTL_RPC_PBWIRE_H
#define PROCCTL_RPC_PBWIRE_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

/* 0 when no string field of a message of type d in buf[0, len), nested
 * messages included, holds a NUL byte; -EINVAL when one does (*field is
 * its name) or the bytes do not parse (*field NULL); -ELOOP nested more
 * than 32 deep. Bounds-checked throughout: the bytes may be anything. */
int pbwire_strings_ok(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t len, const char **field);

#endif
