/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-server — address validation (docs/security.md, "No reflection")
 * Copyright (C) 2026 twoflow developers
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */
#ifndef __TWOFLOW_SERVER_VALIDATION_H__
#define __TWOFLOW_SERVER_VALIDATION_H__

#include <glib.h>

G_BEGIN_DECLS

/* Address validation (docs/security.md, "No reflection"): media may go to
 * another address than the control peer's only if that address proves it
 * asked. The server sends a token to it over the media path (one UDP
 * datagram to the PLAY's enhanced port, or essential port without an
 * enhanced flow), no larger than the PLAY that asked for it; the target
 * hands the token to the requester, whose PLAY then carries it as
 * host_token. Tokens are stateless (as QUIC's Retry tokens): an HMAC under
 * a per-process secret over identity, address, port and expiry. */
#define VALIDATION_LIFETIME 60  /* s */
#define VALIDATION_MAX_PROBES 16        /* per control connection */
#define VALIDATION_PROBE_PREFIX "TWOFLOW-VALIDATE "

gboolean validation_init (void);
gchar *validation_token (const gchar * identity, const gchar * host,
    gint port, gint64 expiry);
gboolean validation_check (const gchar * identity, const gchar * host,
    gint port, const gchar * token);

G_END_DECLS
#endif
