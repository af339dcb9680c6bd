/* SPDX-License-Identifier: MIT */
/* The manager's libuv loop, for the other loop-glue files (and only them). */
#ifndef RP_DAEMON_MANAGER_UV_H
#define RP_DAEMON_MANAGER_UV_H

#include <uv.h>

struct manager;

uv_loop_t *manager_loop(struct manager *m);

#endif
