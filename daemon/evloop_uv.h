/* SPDX-License-Identifier: MIT */
/* evloop.h implemented on a libuv loop (loop glue). */
#ifndef RP_DAEMON_EVLOOP_UV_H
#define RP_DAEMON_EVLOOP_UV_H

#include <uv.h>

#include "base/evloop.h"

int evloop_uv_new(uv_loop_t *loop, struct evloop **ret);
/* Run the callbacks of the timers started with 0 ms now (the engine, each pass). */
void evloop_uv_run_soon(struct evloop *ev);
/* After every timer and watch made from it was freed and the loop ran their closes. */
struct evloop *evloop_uv_free(struct evloop *ev);

#endif
