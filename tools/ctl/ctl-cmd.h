/* SPDX-License-Identifier: MIT */
/* rdmaproxyctl: the commands and what they share. */
#ifndef RP_CTL_CMD_H
#define RP_CTL_CMD_H

#include "ctl.h"
#include "rdmaproxy.h"

struct ctl {
	struct rp_conn conn;
	char path[128]; /* the socket, for messages */
	bool json;
	long count;	 /* ping -c */
	double interval; /* ping -i, seconds */
	char **args;	 /* after the command */
	int nargs;
};

/* Print why a request failed; returns the exit code for it. */
int ctl_fail(struct ctl *x, int err, const char *why);

int ctl_cmd_clients(struct ctl *x);
int ctl_cmd_regions(struct ctl *x);
int ctl_cmd_endpoints(struct ctl *x);
int ctl_cmd_peers(struct ctl *x);
/* Peers that are up / configured, from the peers list. */
int ctl_peer_counts(struct ctl *x, unsigned *up, unsigned *total);

int ctl_cmd_status(struct ctl *x);
int ctl_cmd_ping(struct ctl *x);
int ctl_cmd_metrics(struct ctl *x);

#endif
