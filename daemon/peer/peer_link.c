/* SPDX-License-Identifier: MIT */
/*
 * The bottom of the peer layer: the clock, finding a peer by name, sending
 * a control message on a link and closing it, and the rule that decides
 * which of two links between the same two daemons survives.
 */
#include "peer/peer_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

uint64_t peer_mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t peer_now_ms(void)
{
	return peer_mono_us() / 1000u;
}

struct peer *peer_find(struct peers *p, const char *name)
{
	struct peer *pr;

	for (pr = p->head; pr; pr = pr->next)
		if (!pr->removed && !strcmp(pr->conf.name, name))
			return pr;
	return NULL;
}

int link_send(struct peer_link *l, const void *msg, size_t len)
{
	if (link_closing(l))
		return -ENOTCONN;
	return l->t->ops->send_ctrl(l->x, msg, len);
}

void link_close(struct peer_link *l, int err, const char *why)
{
	if (link_closing(l))
		return;
	l->state = LINK_CLOSING;
	if (!l->why[0] && why)
		snprintf(l->why, sizeof(l->why), "%s", why);
	if (!l->err)
		l->err = err;
	l->t->ops->close(l->x);
}

bool link_prefer(const struct peer_link *a, const struct peer_link *b)
{
	const char *me = a->p->node_name, *them = a->peer->conf.name;
	bool a_mine = a->outbound, b_mine = b->outbound;

	if (link_authenticated(b) && b->remote_inc != a->hs.peer_inc)
		return true; /* the peer restarted: the old link is dead */
	if (a_mine == b_mine)
		return true; /* the same side dialled again: it gave up on the old one */
	/* Keep the connection initiated by the lexically smaller node name. */
	return strcmp(me, them) < 0 ? a_mine : !a_mine;
}

/* Our attempt has verified the peer's CHALLENGE: it completes unless the peer drops it. */
static bool out_authenticated(const struct peer *pr)
{
	const struct peer_link *o = pr->out;

	return o && !link_closing(o) && o->hs.state == HS_I_SENT_AUTH;
}

bool peer_out_pending(const struct peer *pr, const struct peer_link *l)
{
	return pr->out != l && out_authenticated(pr) && (!l || link_prefer(pr->out, l));
}

bool peer_settling(const struct peer *pr)
{
	const struct peer_link *o = pr->out, *u = pr->up;

	if (!out_authenticated(pr))
		return false;
	/* Our attempt is authenticating: it becomes the link, or it may replace the one up. */
	return !u || !link_usable(u) || link_prefer(o, u);
}
