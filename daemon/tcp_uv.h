/* SPDX-License-Identifier: MIT */
/* The tcp peer transport (transport.h) on a libuv loop: loop glue. */
#ifndef RP_DAEMON_TCP_UV_H
#define RP_DAEMON_TCP_UV_H

#include <uv.h>

#include "peer/transport.h"

struct evloop;

/* Small messages are written at the end of the engine's pass: @ev's "soon" timers. */
/* @on_bytes(@arg) runs whenever bytes came from a peer (NULL: nothing runs). */
int tcp_transport_new(uv_loop_t *loop, struct evloop *ev, void (*on_bytes)(void *arg), void *arg,
		      struct transport **ret);

#endif
