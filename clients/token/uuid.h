/* SPDX-License-Identifier: Apache-2.0 */
/* uuid.h - a resource id as a UUID (8-4-4-4-12 hex, dashes optional): a
 * GPU's, as cuDeviceGetUuid and nvidia-smi give it. */
#ifndef TOKEN_UUID_H
#define TOKEN_UUID_H

#include <stdint.h>

/* Parse s into out: 0, or -1 (not 32 hex digits). */
int uuid_parse(const char *s, uint8_t out[16]);
/* Format id as 8-4-4-4-12 lowercase hex (37 bytes with the NUL). */
void uuid_format(const uint8_t id[16], char out[37]);

#endif
