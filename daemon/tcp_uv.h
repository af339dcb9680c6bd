/* SPDX-License-Identifier: MIT */
/* The tcp peer transport (transport.h) on a libuv loop: loop glue. */
#ifndef RP_DAEMON_TCP_UV_H
#define RP_DAEMON_TCP_UV_H

#include <uv.h>

#include "transport.h"

int tcp_transport_new(uv_loop_t *loop, struct transport **ret);

#endif
